import type { Config } from '../../config.js';
import { createFileTraceStore, type TraceStoreMemo, type TraceFs } from './files/store.js';
import { createPostgresTraceStore } from './postgres/store.js';
import type { TraceLog, TraceObservers, TraceStore } from './store.js';

export * from './store.js';
export { createFileTraceStore, describeWriteFailure, privateTraceStoreMemo, type FileTraceStore, type TraceStoreMemo, type FileTraceStoreOptions, type FileTraceStoreStats, type TraceFs } from './files/store.js';
export {
  createPostgresTraceStore,
  migrateTraceDatabase,
  type PostgresTraceStore,
  type PostgresTraceStoreOptions,
  type PostgresTraceStoreStats,
} from './postgres/store.js';

export interface TraceStoreFromConfigOptions extends TraceObservers {
  /** The files backend's file system; tests inject a full or failing one. */
  fs?: TraceFs;
  /** What the store remembers: the app's cache set's `trace` areas (the PostgreSQL store uses those of every store). */
  memo?: TraceStoreMemo;
}

/**
 * The trace store the configuration asks for: PostgreSQL when `TRACE_DATABASE_URL` (or its
 * file) is set, else files under `TRACE_DIR`. The one place that knows there are two;
 * everything else holds a `TraceStore`.
 */
export function createTraceStoreFromConfig(
  config: Pick<Config, 'traceDir' | 'traceRetentionMs' | 'traceSigningKey' | 'traceDatabaseUrl'>,
  log: TraceLog,
  options: TraceStoreFromConfigOptions = {},
): TraceStore {
  const common = {
    retentionMs: config.traceRetentionMs,
    signingKey: config.traceSigningKey,
    ...(options.observeWrite ? { observeWrite: options.observeWrite } : {}),
    ...(options.observeCommit ? { observeCommit: options.observeCommit } : {}),
    ...(options.observeBatch ? { observeBatch: options.observeBatch } : {}),
    ...(options.memo ? { memo: options.memo } : {}),
  };
  if (config.traceDatabaseUrl !== null) return createPostgresTraceStore(config.traceDatabaseUrl, log, common);
  return createFileTraceStore(config.traceDir, log, { ...common, ...(options.fs ? { fs: options.fs } : {}) });
}
