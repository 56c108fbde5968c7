import type { Config } from '../../config.js';
import { createFileTraceStore, type TraceFs } from './files/store.js';
import { createPostgresTraceStore } from './postgres/store.js';
import type { TraceLog, TraceStore } from './store.js';

export * from './store.js';
export { createFileTraceStore, describeWriteFailure, type FileTraceStore, type FileTraceStoreOptions, type FileTraceStoreStats, type TraceFs } from './files/store.js';
export {
  createPostgresTraceStore,
  migrateTraceDatabase,
  type PostgresTraceStore,
  type PostgresTraceStoreOptions,
  type PostgresTraceStoreStats,
} from './postgres/store.js';

export interface TraceStoreFromConfigOptions {
  /** The files backend's file system; tests inject a full or failing one. */
  fs?: TraceFs;
  /** Called once per append with the time it took to become durable (or to fail). */
  observeWrite?: (seconds: number, ok: boolean) => void;
  /** Called once per durable commit (an fsync, or a committed transaction). */
  observeCommit?: () => void;
  /** Called once per group-commit batch: its events, and the time to make them durable (or to fail). */
  observeBatch?: (events: number, seconds: number, ok: boolean) => void;
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
  };
  if (config.traceDatabaseUrl !== null) return createPostgresTraceStore(config.traceDatabaseUrl, log, common);
  return createFileTraceStore(config.traceDir, log, { ...common, ...(options.fs ? { fs: options.fs } : {}) });
}
