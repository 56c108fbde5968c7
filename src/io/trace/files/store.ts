import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { hostname } from 'node:os';
import { createChainSigner } from '../chain.js';
import { privateTraceMemo, RecordDigests, type SpliceSlot, type TraceMemo } from '../event-record.js';
import { GroupCommit } from '../group-commit.js';
import {
  checkEvent,
  closedStore,
  makeWriterId,
  rotateMsFor,
  sweepIntervalFor,
  type ListRunsQuery,
  type RunPage,
  type RunTraceView,
  type TraceAppend,
  type TraceEventInput,
  type TraceLog,
  type TraceObservers,
  type TraceStore,
  type TraceStoreStats,
} from '../store.js';
import { FileReader } from './reader.js';
import { sweepFiles } from './retention.js';
import { RunIndex } from './run-index.js';
import { describeWriteFailure, FileWriter, type FileCounters, type FilesContext, type TraceFs } from './writer.js';

export type { TraceFs } from './writer.js';
export { describeWriteFailure } from './writer.js';

const DEFAULT_MAX_INDEXED_EVENTS = 10_000;

export interface FileTraceStoreOptions extends TraceObservers {
  /** Events older than this are hidden from reads and their files deleted by the sweep. */
  retentionMs: number;
  /** The clock for file names, retention and sealing (tests move it). */
  now?: () => number;
  /** At most this many events per group commit. */
  maxBatchEvents?: number;
  /** Start a new file once the current one is this large. */
  rotateBytes?: number;
  /** Start a new file once the current one is this old; also bounds how long a writer may append to a file. */
  rotateMs?: number;
  sweepIntervalMs?: number;
  /** While failing, how often to try again (on an append, a health check or a timer). */
  retryIntervalMs?: number;
  writerId?: string;
  /**
   * At most this many events are indexed in memory (≈ 600 bytes each); older complete
   * files are read from disk when a run or a listing needs them. See docs/traces.md.
   */
  maxIndexedEvents?: number;
  /** File system functions; tests inject failures here. */
  fs?: TraceFs;
  /** What the writer remembers between events: the app's cache set's `trace` areas (else its own). */
  memo?: TraceMemo;
  /** TRACE_SIGNING_KEY: chains are HMAC-SHA256 under this key instead of plain SHA-256 (docs/traces.md). */
  signingKey?: string | null;
}

export interface FileTraceStoreStats extends TraceStoreStats, FileCounters {
  backend: 'files';
  /** Events held in the in-memory index (at most `maxIndexedEvents`, plus the file being written). */
  indexedEvents: number;
}

export interface FileTraceStore extends TraceStore {
  readonly backend: 'files';
  readonly dir: string;
  readonly writerId: string;
  stats(): FileTraceStoreStats;
}

const noop = () => {};

/**
 * The embedded trace store: append-only JSONL files under `dir`, one writer per file,
 * group-committed (all appends queued during an fsync share the next one), segment texts
 * stored once per file by sha256. The writer (`writer.ts`), the reader and its index
 * (`reader.ts`, `run-index.ts`) and retention (`retention.ts`) share one context; see
 * docs/traces.md for the format and its guarantees.
 */
export function createFileTraceStore(dir: string, log: TraceLog, options: FileTraceStoreOptions): FileTraceStore {
  const retentionMs = options.retentionMs;
  const observeCommit = options.observeCommit ?? noop;
  const counters: FileCounters = {
    fsyncs: 0,
    bytes: 0,
    blobsWritten: 0,
    blobsReused: 0,
    dataWritten: 0,
    dataReused: 0,
    filesCreated: 0,
    filesDeleted: 0,
    filesDisturbed: 0,
    unreadableLines: 0,
  };
  let closed = false;
  const ctx: FilesContext = {
    dir,
    fs: options.fs ?? fsp,
    now: options.now ?? Date.now,
    log,
    index: new RunIndex(options.maxIndexedEvents ?? DEFAULT_MAX_INDEXED_EVENTS),
    counters,
    synced() {
      counters.fsyncs++;
      observeCommit();
    },
    signer: createChainSigner(options.signingKey ?? null),
    writerId: options.writerId ?? makeWriterId(hostname(), process.pid, randomBytes(4).toString('hex')),
    retentionMs,
    rotateMs: options.rotateMs ?? rotateMsFor(retentionMs),
    busy: () => commits.busy,
  };
  const writer = new FileWriter(ctx, new RecordDigests(options.memo ?? privateTraceMemo()), options.rotateBytes ?? 32 * 1024 * 1024);
  const reader = new FileReader(ctx, writer);
  const commits: GroupCommit<TraceAppend> = new GroupCommit<TraceAppend>({
    log,
    maxBatch: options.maxBatchEvents ?? 1024,
    retryIntervalMs: options.retryIntervalMs ?? 1000,
    now: ctx.now,
    write: (batch) => writer.write(batch),
    reopen: () => writer.reopen(),
    abandon: () => writer.abandon(),
    describe: describeWriteFailure,
    ...(options.observeWrite ? { observeWrite: options.observeWrite } : {}),
    ...(options.observeBatch ? { observeBatch: options.observeBatch } : {}),
  });

  const sweepTimer = setInterval(() => {
    sweep().catch((error: unknown) => log.warn({ err: error }, 'trace retention sweep failed'));
  }, options.sweepIntervalMs ?? sweepIntervalFor(retentionMs));
  sweepTimer.unref();

  function sweep(): Promise<{ deleted: number }> {
    return sweepFiles(ctx, writer, reader);
  }

  let closing: Promise<void> | null = null;
  function close(): Promise<void> {
    closing ??= (async () => {
      closed = true;
      clearInterval(sweepTimer);
      await commits.close();
      await writer.close();
    })();
    return closing;
  }

  return {
    backend: 'files',
    dir,
    writerId: ctx.writerId,
    async append(event: TraceEventInput, slot?: SpliceSlot): Promise<void> {
      if (closed) throw closedStore();
      checkEvent(event);
      return commits.append({ event, slot });
    },
    readRun: (runId: string): Promise<RunTraceView | null> => reader.readRun(runId),
    listRuns: (query?: ListRunsQuery): Promise<RunPage> => reader.listRuns(query),
    async health(): Promise<string | undefined> {
      await commits.health(() => writer.probe());
      return writer.note();
    },
    sweep,
    stats: () => ({
      backend: 'files',
      ...commits.counters,
      ...counters,
      commits: counters.fsyncs,
      indexedEvents: ctx.index.size,
      state: commits.state,
    }),
    close,
  };
}
