import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type { Pool } from 'pg';
import { createChainSigner } from '../chain.js';
import { privateTraceMemo, RecordDigests, type TraceMemo } from '../event-record.js';
import { GroupCommit } from '../group-commit.js';
import { admitEvents, checkEvent, type QueuedEvent } from '../admission.js';
import { closedStore, makeWriterId, MAX_RUN_EVENTS, rotateMsFor, sweepIntervalFor, type TraceLog, type TraceObservers, type TraceStore, type TraceStoreStats } from '../store.js';
import { describeDatabaseFailure, safeDatabaseError } from './failure.js';
import { DatabaseReader } from './reader.js';
import { sweepDatabase } from './retention.js';
import { migrate } from './schema.js';
import { DatabaseWriter, type DatabaseContext, type DatabaseCounters } from './writer.js';

export interface PostgresTraceStoreOptions extends TraceObservers {
  /** Events older than this are hidden from reads and deleted by the sweep. */
  retentionMs: number;
  /** The clock for event ages, segments and retention (tests move it). */
  now?: () => number;
  maxBatchEvents?: number;
  /** Start a new chain segment once the current one is this old (another writer's older segments may then be swept). */
  rotateMs?: number;
  sweepIntervalMs?: number;
  retryIntervalMs?: number;
  writerId?: string;
  /** Connections in the pool: one batch is committed at a time, the rest serve reads, probes and sweeps. */
  maxConnections?: number;
  /** How long a statement may take before it fails (and an append answers 503). */
  queryTimeoutMs?: number;
  signingKey?: string | null;
  /** What the writer remembers between events: the app's cache set's `trace` areas (else its own). */
  memo?: TraceMemo;
  /** The most events a run may hold (default `MAX_RUN_EVENTS`); only tests set it. */
  maxRunEvents?: number;
}

export interface PostgresTraceStoreStats extends TraceStoreStats, DatabaseCounters {
  backend: 'postgres';
}

export interface PostgresTraceStore extends TraceStore {
  readonly backend: 'postgres';
  readonly writerId: string;
  stats(): PostgresTraceStoreStats;
}

const noop = () => {};

/** A pool on `url` that commits synchronously and never says where it connects in an error it logs. */
function createTracePool(url: string, log: TraceLog, options: { max?: number; queryTimeoutMs?: number } = {}): Pool {
  // `pg` is required here, when a store is made, not imported: a service or a CLI on trace files never loads it (≈ 35 ms of CPU).
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 8,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: 5_000,
    query_timeout: options.queryTimeoutMs ?? 10_000,
    keepAlive: true,
    application_name: 'context-compiler',
    // "Committed" must mean on disk, whatever the server's or the role's default says.
    options: '-c synchronous_commit=on',
  });
  // An idle connection that breaks (the server restarted) is dropped by the pool; without a
  // listener the error would crash the process.
  pool.on('error', (error) => log.warn({ err: safeDatabaseError(error) }, 'trace database connection lost'));
  return pool;
}

/**
 * The PostgreSQL trace store (docs/traces.md, "PostgreSQL"): the same promises as the
 * files — an event is committed before any byte of its prompt leaves, concurrent appends
 * share a commit, repeated records are stored once, retention runs in bounded batches,
 * chains make tampering evident — in tables any replica reads. Nothing is connected until
 * the first append or health check, so the service starts while the database is down and
 * recovers by itself when it returns.
 */
export function createPostgresTraceStore(url: string, log: TraceLog, options: PostgresTraceStoreOptions): PostgresTraceStore {
  const retentionMs = options.retentionMs;
  const observeCommit = options.observeCommit ?? noop;
  const pool = createTracePool(url, log, {
    ...(options.maxConnections !== undefined ? { max: options.maxConnections } : {}),
    ...(options.queryTimeoutMs !== undefined ? { queryTimeoutMs: options.queryTimeoutMs } : {}),
  });
  const counters: DatabaseCounters = { commits: 0, segmentsCreated: 0, recordsWritten: 0, recordsReused: 0, retries: 0, eventsDeleted: 0, unreadableRecords: 0 };
  let closed = false;
  const ctx: DatabaseContext = {
    pool,
    now: options.now ?? Date.now,
    log,
    signer: createChainSigner(options.signingKey ?? null),
    writerId: options.writerId ?? makeWriterId(hostname(), process.pid, randomBytes(4).toString('hex')),
    retentionMs,
    rotateMs: options.rotateMs ?? rotateMsFor(retentionMs),
    counters,
    busy: () => commits.busy,
    committed() {
      counters.commits++;
      observeCommit();
    },
  };
  const memo = options.memo ?? privateTraceMemo();
  const writer = new DatabaseWriter(ctx, new RecordDigests(memo), memo.stored);
  const reader = new DatabaseReader(ctx);
  const maxRunEvents = options.maxRunEvents ?? MAX_RUN_EVENTS;
  const commits: GroupCommit<QueuedEvent> = new GroupCommit<QueuedEvent>({
    log,
    maxBatch: options.maxBatchEvents ?? 1024,
    retryIntervalMs: options.retryIntervalMs ?? 1000,
    now: ctx.now,
    async write(batch) {
      // One indexed query per batch, for the runs the service did not just make up; when it
      // fails the database is failing, and the batch with it.
      const runIds = [...new Set(batch.filter((queued) => !queued.newRun).map((queued) => queued.event.runId))];
      const verdicts = admitEvents(batch, runIds.length === 0 ? new Map() : await reader.standings(runIds, maxRunEvents), maxRunEvents);
      const admitted = batch.filter((_, i) => verdicts[i] === null);
      if (admitted.length > 0) await writer.write(admitted);
      return verdicts;
    },
    reopen: () => writer.reopen(),
    abandon: () => writer.abandon(),
    describe: describeDatabaseFailure,
    ...(options.observeWrite ? { observeWrite: options.observeWrite } : {}),
    ...(options.observeBatch ? { observeBatch: options.observeBatch } : {}),
  });

  function sweep(): Promise<{ deleted: number }> {
    return sweepDatabase(ctx, writer).catch((error: unknown) => {
      throw safeDatabaseError(error);
    });
  }
  const sweepTimer = setInterval(() => {
    if (commits.failing) return;
    sweep().catch((error: unknown) => log.warn({ err: error }, 'trace retention sweep failed'));
  }, options.sweepIntervalMs ?? sweepIntervalFor(retentionMs));
  sweepTimer.unref();

  let closing: Promise<void> | null = null;
  return {
    backend: 'postgres',
    writerId: ctx.writerId,
    async append(event, appendOptions = {}) {
      if (closed) throw closedStore();
      checkEvent(event);
      return commits.append({ event, newRun: appendOptions.newRun === true, result: appendOptions.result });
    },
    readRun: (runId, query) => reader.readRun(runId, query),
    listRuns: (query) => reader.listRuns(query),
    async health() {
      await commits.health(async () => {
        try {
          await writer.probe();
        } catch (error) {
          throw safeDatabaseError(error);
        }
      });
      return writer.note();
    },
    sweep,
    stats: () => ({ backend: 'postgres', ...commits.counters, ...counters, state: commits.state }),
    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(sweepTimer);
        await commits.close();
        await writer.close();
        await pool.end().catch(noop);
      })();
      return closing;
    },
  };
}

/** `context-compiler migrate`: brings the trace schema to this release's version, and says which versions it applied. */
export async function migrateTraceDatabase(url: string, log: TraceLog): Promise<{ version: number; applied: number[] }> {
  const pool = createTracePool(url, log, { max: 1 });
  try {
    return await migrate(pool);
  } catch (error) {
    throw safeDatabaseError(error);
  } finally {
    await pool.end().catch(noop);
  }
}
