import type { BaseLogger } from 'pino';
import { ProblemError } from '../../errors.js';
import type { RunChain, RunSummaryBody, TraceEvent, TraceEventInput, TraceOutcome } from '../../../schemas/trace.js';

/**
 * The trace store as the rest of the service sees it (docs/traces.md): one
 * interface, two backends — files under TRACE_DIR (`files/`), the embedded default, and
 * PostgreSQL (`postgres/`) for several machines. Routes, `deliver()`, the viewer and the
 * CLI only use this interface; `index.ts` picks the backend from the configuration. The
 * event model itself is `schemas/trace.ts` (zod); the types here are inferred from it. What
 * both backends share beside it: `paging.ts` (pages and cursors), `event-record.ts` (the
 * stored event, and what a listing shows of it) and `admission.ts` (which events and runs an
 * append takes).
 */

export type {
  RunChain,
  TraceAbsent,
  TraceBlock,
  TraceEventInput,
  TraceListing,
  TraceOutcome,
  TraceRealtime,
  TraceRealtimeView,
  TraceSegmentView,
  TraceSource,
  TraceSubject,
} from '../../../schemas/trace.js';
export type { ChainStatus } from './chain.js';
export { MAX_RUN_EVENTS, MAX_TRACE_PAGE_EVENTS, TRACE_PAGE_CHARS } from '../../../schemas/trace.js';
export { compiledEventFields, listedFields, traceIdOfTraceparent, type ListedFields, type TraceMemo } from './event-record.js';

/** The callbacks every backend reports its writes through (the metrics plugin's histograms and counter). */
export interface TraceObservers {
  /** Called once per append with the time it took to become durable (or to fail). */
  observeWrite?: (seconds: number, ok: boolean) => void;
  /** Called once per durable commit (an fsync or fdatasync, or a committed transaction). */
  observeCommit?: () => void;
  /** Called once per group-commit batch: its events, and the time to make them durable (or to fail). */
  observeBatch?: (events: number, seconds: number, ok: boolean) => void;
}

/** A stored event as `readRun` returns it: the prompts rebuilt from their segments and checked. */
export type TraceEventView = TraceEvent;

/** A page of a run as `readRun` returns it: its events in order, what the chains around them say, and where the next page starts. */
export interface RunTraceView {
  runId: string;
  events: TraceEventView[];
  chain: RunChain;
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

/** Which page of a run `readRun` reads, and whose events. */
export interface RunReadQuery {
  /** Events per page, 1 to `MAX_TRACE_PAGE_EVENTS` (default: that many); a page also ends at `TRACE_PAGE_CHARS`. */
  limit?: number;
  /** `nextCursor` of the page before; a cursor the store did not issue is a 400. */
  cursor?: string;
  /** Only events recorded under this caller's name; null or absent: every caller's. */
  visibleTo?: string | null;
}

/** How an append may be told about its run. */
export interface AppendOptions {
  /**
   * The service made the run id up for this request (a random UUID), so the run holds no
   * event yet and there is no owner or count to check.
   */
  newRun?: boolean;
  /**
   * Given for an event of a shared result: the result, by which the writer keeps what the
   * result's later events can splice in (`TraceSplices`). Only its identity is used.
   */
  result?: object | undefined;
}

/** One line of `GET /runs`: a run, described by its most recent event. */
export type RunSummary = RunSummaryBody;

/**
 * `GET /runs` filters, all of them together. Subject, status, outcome and the time range
 * apply to a run's latest event; `runId` picks one run, `requestId` and `traceId` the runs
 * holding an event of that request or trace.
 */
export interface RunFilter {
  persona?: string;
  worker?: string;
  status?: number;
  outcome?: TraceOutcome;
  /** Only runs whose latest event is this caller's (counting only its events); null or absent: every caller's. */
  visibleTo?: string | null;
  runId?: string;
  requestId?: string;
  /** The 32-hex trace id of a W3C traceparent. */
  traceId?: string;
  /** The latest event at or after this instant (ms). */
  fromMs?: number;
  /** The latest event before this instant (ms). */
  toMs?: number;
}

export interface ListRunsQuery extends Omit<RunFilter, 'traceId' | 'fromMs' | 'toMs'> {
  limit?: number;
  cursor?: string;
  /** A whole traceparent or its trace id. */
  traceparent?: string;
  /** ISO 8601 instants (`from` inclusive, `to` exclusive). */
  from?: string;
  to?: string;
  /** Stops the work once aborted (the client gone, the request's deadline passed): the listing then rejects. */
  signal?: AbortSignal;
}

export interface RunPage {
  runs: RunSummary[];
  nextCursor: string | null;
  /** The listing stopped at its read bound before it could fill the page; `nextCursor` goes on from there. */
  partial: boolean;
}

/** What group commit counts, the same for every backend (`group-commit.ts`). */
export interface GroupCommitCounters {
  /** Appends that resolved (durable). */
  appends: number;
  /** Appends that rejected. */
  rejected: number;
  /** Of those, appends refused because their run is another caller's or full (`CC_RUN_OWNED`, `CC_RUN_FULL`). */
  refused: number;
  /** Group commits: appends made durable together (one write and fsync, or one transaction, each). */
  batches: number;
  largestBatch: number;
  /** Times the store went from working to failing. */
  failures: number;
}

/** What every backend counts. */
export interface TraceStoreStats extends GroupCommitCounters {
  backend: 'files' | 'postgres';
  /**
   * Durable commits issued: an fsync/fdatasync (file creation and directory syncs included),
   * or a committed transaction (a new chain segment included). With group commit, far fewer
   * than appends.
   */
  commits: number;
  state: 'ok' | 'failed' | 'closed';
}

export interface TraceStore {
  readonly backend: 'files' | 'postgres';
  /**
   * Resolves once the event is durable (fsync'd, or committed); rejects with
   * `CC_TRACE_UNAVAILABLE` otherwise, and with `CC_RUN_OWNED` or `CC_RUN_FULL` (the event is
   * not written) when its run was opened by another caller or holds `MAX_RUN_EVENTS`.
   */
  append(event: TraceEventInput, options?: AppendOptions): Promise<void>;
  /**
   * A page of the run's events in order, prompts rebuilt and verified, chains checked;
   * null for a run unknown (or expired, or holding no event `visibleTo` may see). Memory is
   * bounded by the page, whatever the run holds.
   */
  readRun(runId: string, query?: RunReadQuery): Promise<RunTraceView | null>;
  /** Runs newest first, described by their latest event. */
  listRuns(query?: ListRunsQuery): Promise<RunPage>;
  /**
   * Resolves when appends can be made durable — probing the write path when nothing was
   * written yet, so a full volume or an unreachable database shows before the first
   * compile — and rejects with the reason otherwise. May resolve with a note: something
   * worth knowing that does not stop the store working.
   */
  health(): Promise<string | undefined>;
  /** Removes events older than the retention; `deleted` counts files or rows, as the backend stores them. */
  sweep(): Promise<{ deleted: number }>;
  stats(): TraceStoreStats;
  /** Flushes pending appends, stops timers, and closes files or connections. */
  close(): Promise<void>;
}

export type TraceLog = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

const HOUR = 3_600_000;
/** How far apart replica clocks may be before a writer's file or chain segment counts as sealed. */
export const SEAL_GRACE_MS = 60_000;

/** A writer id safe in a file name: host (pod name) and pid, plus randomness against pid reuse. */
export function makeWriterId(hostname: string, pid: number, random: string): string {
  const host = hostname.replace(/[^A-Za-z0-9-]/g, '-').replace(/-+/g, '-').slice(0, 63) || 'host';
  return `${host}-${pid}-${random}`;
}

/** Defaults both backends derive from the retention. */
export function rotateMsFor(retentionMs: number): number {
  return Math.max(1000, Math.min(HOUR, Math.floor(retentionMs / 4)));
}

export function sweepIntervalFor(retentionMs: number): number {
  return Math.max(1000, Math.min(10 * 60_000, Math.floor(retentionMs / 10)));
}

export function unavailable(reason: string, cause: unknown): ProblemError {
  return new ProblemError('CC_TRACE_UNAVAILABLE', `The trace event could not be made durable: ${reason}.`, { cause });
}

export function closedStore(): ProblemError {
  return new ProblemError('CC_TRACE_UNAVAILABLE', 'The trace store is closed.');
}

export function readFailure(error: unknown): ProblemError {
  return error instanceof ProblemError ? error : new ProblemError('CC_TRACE_UNAVAILABLE', 'Traces cannot be read right now.', { cause: error });
}

