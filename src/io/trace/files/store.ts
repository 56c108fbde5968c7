import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { hostname } from 'node:os';
import { createAreas, DEFAULT_CACHE_BYTES } from '../../../cache-area.js';
import { area, joinAreas, type MemosOf } from '../../../core/area.js';
import { createChainSigner } from '../chain.js';
import { RecordDigests, TRACE_AREAS } from '../event-record.js';
import { GroupCommit } from '../group-commit.js';
import { admitEvents, checkEvent, type QueuedEvent } from '../admission.js';
import { closedStore, makeWriterId, MAX_RUN_EVENTS, rotateMsFor, sweepIntervalFor, unavailable, type AppendOptions, type ListRunsQuery, type RunPage, type RunReadQuery, type RunTraceView, type TraceLog, type TraceObservers, type TraceStore, type TraceStoreStats } from '../store.js';
import { FileReader, type CheckedChain } from './reader.js';
import { sweepFiles } from './retention.js';
import { RunIndex } from './run-index.js';
import { RunStandings, type EvictedOfRun } from './run-standing.js';
import type { EvictedLines } from './evicted-lines.js';
import { FileWriter } from './writer.js';
import type { FileCounters, FilesContext, TraceFs } from './context.js';
import { describeWriteFailure } from './write-failure.js';

export type { TraceFs } from './context.js';
export { describeWriteFailure } from './write-failure.js';

/** What the run index may hold of events in memory by default (≈ 9,000 events); the evicted parts' facets may take as much again. */
export const DEFAULT_MAX_INDEX_BYTES = 8 * 1024 * 1024;

/**
 * What a trace store remembers, whichever backend: the app's cache set's `trace` areas, so
 * `caches.stats()` counts them. Every store's writer uses the `TraceMemo` part (all a
 * PostgreSQL store uses); the files backend adds the chains of files it checked and what
 * evicted files hold of runs it looked up.
 */
export const TRACE_STORE_AREAS = joinAreas(TRACE_AREAS, {
  /** By file name; an entry holds while the file's stat is the one it was checked at. */
  chains: area<string, CheckedChain>('trace.chains', 0.03),
  /** By run id; an entry holds while no file was evicted since and for a minute at most. */
  evictedRuns: area<string, EvictedOfRun>('trace.evictedRuns', 0.005),
  /**
   * By file name: what an evicted part's event lines hold for listings (`EvictedLines`); an entry holds for the bytes it was read to.
   * Its share: the lines of evicted trace files a listing read (runs-by-request bench: 3 parts, 8,480 lines, ≈ 0.9 MB).
   */
  evictedLines: area<string, EvictedLines>('trace.evictedLines', 0.035),
});
export type TraceStoreMemo = MemosOf<typeof TRACE_STORE_AREAS>;

/** Areas of a store's own, for one built without the app's cache set (a test, the CLI), sized as the default set sizes them. */
export function privateTraceStoreMemo(): TraceStoreMemo {
  return createAreas(TRACE_STORE_AREAS, DEFAULT_CACHE_BYTES);
}

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
   * At most this many bytes of events are indexed in memory (default `DEFAULT_MAX_INDEX_BYTES`,
   * whoever wrote them); older ones are read from disk when a run or a listing needs them,
   * and the facets kept of them may take as much again. See docs/traces.md.
   */
  maxIndexBytes?: number;
  /** At most this many events are indexed in memory (tests set a count; unbounded by default, the bytes bound the index). */
  maxIndexedEvents?: number;
  /**
   * At most this many bytes of evicted files are read by one `listRuns` looking for runs its
   * filters match (default `MAX_LISTING_SCAN_BYTES`, 64 MiB); past it the page is `partial`.
   */
  maxListingScanBytes?: number;
  /** File system functions; tests inject failures here. */
  fs?: TraceFs;
  /** What the store remembers between events and reads: the app's cache set's `trace` areas (else its own). */
  memo?: TraceStoreMemo;
  /** TRACE_SIGNING_KEY: chains are HMAC-SHA256 under this key instead of plain SHA-256 (docs/traces.md). */
  signingKey?: string | null;
  /**
   * The most events a run may hold (default `MAX_RUN_EVENTS`, the documented cap). Only
   * tests set it: to write a run as a release without the cap did, and read it back.
   */
  maxRunEvents?: number;
}

export interface FileTraceStoreStats extends TraceStoreStats, FileCounters {
  backend: 'files';
  /** Events held in the in-memory index (within `maxIndexBytes`). */
  indexedEvents: number;
  /** What the index holds, in bytes: its events, and the facets of the evicted parts (within twice `maxIndexBytes`). */
  indexBytes: number;
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
    index: new RunIndex({ maxBytes: options.maxIndexBytes ?? DEFAULT_MAX_INDEX_BYTES, ...(options.maxIndexedEvents !== undefined ? { maxEvents: options.maxIndexedEvents } : {}) }),
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
  const memo = options.memo ?? privateTraceStoreMemo();
  const writer = new FileWriter(ctx, new RecordDigests(memo), options.rotateBytes ?? 32 * 1024 * 1024);
  const reader = new FileReader(ctx, writer, memo.chains, memo.evictedLines, options.maxListingScanBytes);
  const standings = new RunStandings(ctx, reader, memo.evictedRuns);
  const maxRunEvents = options.maxRunEvents ?? MAX_RUN_EVENTS;
  const commits: GroupCommit<QueuedEvent> = new GroupCommit<QueuedEvent>({
    log,
    maxBatch: options.maxBatchEvents ?? 1024,
    retryIntervalMs: options.retryIntervalMs ?? 1000,
    now: ctx.now,
    async write(batch) {
      // A run that cannot be looked up refuses its own appends; the store keeps working.
      const verdicts = await standings.standings(batch).then(
        (standing) => admitEvents(batch, standing, maxRunEvents),
        (error: unknown) => batch.map((queued) => (queued.newRun ? null : unavailable('its run could not be looked up', error))),
      );
      const admitted = batch.filter((_, i) => verdicts[i] === null);
      if (admitted.length > 0) await writer.write(admitted);
      return verdicts;
    },
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
    async append(event, appendOptions: AppendOptions = {}): Promise<void> {
      if (closed) throw closedStore();
      checkEvent(event);
      const newRun = appendOptions.newRun === true;
      const reading = newRun ? null : standings.prepare(event.runId);
      if (reading) {
        try {
          await reading;
        } catch (error) {
          throw unavailable('its run could not be looked up', error);
        }
      }
      return commits.append({ event, newRun, result: appendOptions.result });
    },
    readRun: (runId: string, query?: RunReadQuery): Promise<RunTraceView | null> => reader.readRun(runId, query),
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
      indexBytes: ctx.index.bytes,
      state: commits.state,
    }),
    close,
  };
}
