import type { BaseLogger } from 'pino';
import type { CompiledContext } from '../../core/types.js';
import { ProblemError } from '../../errors.js';
import { parseInstant } from '../../core/time.js';
import { isCallerName, isSafeId } from '../../../schemas/ids.js';
import { DEFAULT_TRACE_PAGE_EVENTS, MAX_RUN_EVENTS, MAX_TRACE_PAGE_EVENTS, TRACE_PAGE_CHARS, traceIdOf } from '../../../schemas/trace.js';
import type { RunChain, RunSummaryBody, TraceCompiledFields, TraceEvent, TraceEventInput, TraceOutcome, TraceSubject } from '../../../schemas/trace.js';

/**
 * The trace store as the rest of the service sees it (docs/traces.md): one
 * interface, two backends — files under TRACE_DIR (`files/`), the embedded default, and
 * PostgreSQL (`postgres/`) for several machines. Routes, `deliver()`, the viewer and the
 * CLI only use this interface; `index.ts` picks the backend from the configuration. The
 * event model itself is `schemas/trace.ts` (zod); the types here are inferred from it.
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
export type { TraceMemo } from './event-record.js';

/** The callbacks every backend reports its writes through (the metrics plugin's histograms and counter). */
export interface TraceObservers {
  /** Called once per append with the time it took to become durable (or to fail). */
  observeWrite?: (seconds: number, ok: boolean) => void;
  /** Called once per durable commit (an fsync or fdatasync, or a committed transaction). */
  observeCommit?: () => void;
  /** Called once per group-commit batch: its events, and the time to make them durable (or to fail). */
  observeBatch?: (events: number, seconds: number, ok: boolean) => void;
}

/**
 * What a delivered event records of its compiled result, as the result hands it over: the
 * store keeps the blocks' summary fields (their text lives in the segments, stored once).
 */
export function compiledEventFields(compiled: CompiledContext): TraceCompiledFields {
  return {
    blocks: compiled.blocks,
    segments: compiled.segments,
    promptSha256: compiled.promptSha256,
    inputSha256: compiled.inputSha256,
    budget: compiled.budget,
    cache: compiled.cache,
    tokens: compiled.tokens,
    redactions: compiled.redactions,
  };
}

/** A stored event as `readRun` returns it: the prompts rebuilt from their segments and checked. */
export type TraceEventView = TraceEvent;

const TRACE_OUTCOMES: readonly TraceOutcome[] = ['delivered', 'not-modified', 'failed'];

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

/** What `GET /runs` shows of a run beyond its identity, from its latest event. */
export type ListedFields = Pick<RunSummary, 'compiledFor' | 'topicId' | 'role' | 'engine' | 'warnings' | 'requestId' | 'traceparent'>;

/** A short recorded string (an id, an instant), or null: a tampered record cannot put a long text in a listing. */
function shortText(value: unknown): string | null {
  return typeof value === 'string' && value.length <= 128 ? value : null;
}

/**
 * The listed fields of an event (both backends): the minute compiled for (`nowUsed`), the
 * topic asked for, the role played (its receipt, else the role asked for), the engine, how
 * many warnings, and the correlation ids.
 */
export function listedFields(event: Pick<TraceEventInput, 'request' | 'receipts' | 'warnings' | 'requestId' | 'traceparent'>): ListedFields {
  const request: Record<string, unknown> = event.request ?? {};
  const fields: ListedFields = {
    compiledFor: shortText(request['nowUsed']),
    topicId: shortText(request['topicId']),
    role: shortText(event.receipts?.role?.id) ?? shortText(request['role']),
    engine: shortText(request['engine']),
    warnings: Array.isArray(event.warnings) ? event.warnings.length : 0,
  };
  const requestId = shortText(event.requestId);
  if (requestId !== null) fields.requestId = requestId;
  const traceparent = shortText(event.traceparent);
  if (traceparent !== null) fields.traceparent = traceparent;
  return fields;
}

/** The trace id of a recorded traceparent (`00-<trace id>-<parent id>-<flags>`). */
export function traceIdOfTraceparent(traceparent: string | undefined): string | undefined {
  return traceparent === undefined || traceparent.length < 35 ? undefined : traceparent.slice(3, 35);
}

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
const MAX_PAGE = 100;
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

/** Rejects an event the store must not write (a bug in the caller, never user input). */
export function checkEvent(event: TraceEventInput): void {
  const problem = eventProblem(event);
  if (problem) throw new ProblemError('CC_INTERNAL', `trace event is malformed: ${problem}`);
}

// Field checks rather than a schema parse: this runs on every append, and the event holds
// the whole prompt; the deliver path builds it from validated parts.
function eventProblem(event: TraceEventInput): string | null {
  if (typeof event !== 'object' || event === null) return 'not an object';
  if (typeof event.runId !== 'string' || !isSafeId(event.runId)) return 'runId is not a safe id';
  if (typeof event.at !== 'string' || !Number.isFinite(Date.parse(event.at))) return 'at is not an ISO time';
  if (typeof event.route !== 'string') return 'route is missing';
  const subject = event.subject as Partial<TraceSubject> | undefined;
  if (!subject || (subject.kind !== 'persona' && subject.kind !== 'worker') || typeof subject.id !== 'string') return 'subject is invalid';
  if (event.caller !== undefined && (typeof event.caller !== 'string' || !isCallerName(event.caller))) return 'caller is not a caller name';
  if (!Number.isInteger(event.status)) return 'status is not an integer';
  if (!TRACE_OUTCOMES.includes(event.outcome)) return 'outcome is invalid';
  if (typeof event.request !== 'object' || event.request === null) return 'request is missing';
  const segments = event.segments;
  if (segments !== undefined) {
    const texts = (list: unknown) => Array.isArray(list) && list.every((piece) => typeof piece === 'string');
    if (!texts(segments.system) || !texts(segments.input)) return 'segments must be arrays of strings';
  }
  return null;
}

/** Where a page of runs ends: the last run's latest event time and its id. */
export interface RunPosition {
  atMs: number;
  runId: string;
}

function encodeCursor(position: RunPosition): string {
  return Buffer.from(`${position.atMs}.${position.runId}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): RunPosition | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(-?\d{1,16})\.([A-Za-z0-9_:-]{1,128})$/.exec(text);
  return match ? { atMs: Number(match[1]), runId: match[2]! } : null;
}

/** The page size, filter and position a `listRuns` query asks for; a cursor this service did not issue is a 400. */
export function pageRequest(query: ListRunsQuery): { limit: number; filter: RunFilter; after: RunPosition | null } {
  const limit = Math.max(1, Math.min(MAX_PAGE, Math.floor(query.limit ?? 20)));
  let after = null;
  if (query.cursor !== undefined) {
    after = decodeCursor(query.cursor);
    if (!after) {
      throw new ProblemError('CC_VALIDATION_FAILED', '/query/cursor: not a cursor this service issued', {
        errors: [{ path: '/query/cursor', message: 'not a cursor this service issued' }],
      });
    }
  }
  const filter: RunFilter = {};
  if (query.persona !== undefined) filter.persona = query.persona;
  if (query.worker !== undefined) filter.worker = query.worker;
  if (query.status !== undefined) filter.status = query.status;
  if (query.outcome !== undefined) filter.outcome = query.outcome;
  if (query.visibleTo !== undefined && query.visibleTo !== null) filter.visibleTo = query.visibleTo;
  if (query.runId !== undefined) filter.runId = query.runId;
  if (query.requestId !== undefined) filter.requestId = query.requestId;
  if (query.traceparent !== undefined) {
    const traceId = traceIdOf(query.traceparent);
    if (traceId === undefined) throw invalidQuery('traceparent', 'must be a W3C traceparent or its 32-hex trace id');
    filter.traceId = traceId;
  }
  for (const [name, key] of [['from', 'fromMs'], ['to', 'toMs']] as const) {
    const text = query[name];
    if (text === undefined) continue;
    const ms = parseInstant(text)?.getTime();
    if (ms === undefined) throw invalidQuery(name, 'must be an ISO 8601 date and time with Z or an offset');
    filter[key] = ms;
  }
  return { limit, filter, after };
}

function invalidQuery(name: string, message: string): ProblemError {
  return new ProblemError('CC_VALIDATION_FAILED', `/query/${name}: ${message}`, { errors: [{ path: `/query/${name}`, message }] });
}

/** Whether a run's latest event passes the filters that apply to it: subject, status, outcome and the time range. */
export function latestMatches(latest: Pick<RunSummary, 'subject' | 'status' | 'outcome'>, atMs: number, filter: RunFilter): boolean {
  if (filter.persona !== undefined && (latest.subject.kind !== 'persona' || latest.subject.id !== filter.persona)) return false;
  if (filter.worker !== undefined && (latest.subject.kind !== 'worker' || latest.subject.id !== filter.worker)) return false;
  if (filter.status !== undefined && latest.status !== filter.status) return false;
  if (filter.outcome !== undefined && latest.outcome !== filter.outcome) return false;
  if (filter.fromMs !== undefined && atMs < filter.fromMs) return false;
  if (filter.toMs !== undefined && atMs >= filter.toMs) return false;
  return true;
}

/** The page as `listRuns` returns it: a cursor only when more runs follow (or, for a partial page, where the search stopped). */
export function runPage(runs: RunSummary[], more: boolean, stoppedAt: RunPosition | null = null): RunPage {
  const last = runs[runs.length - 1];
  if (stoppedAt !== null) return { runs, nextCursor: encodeCursor(stoppedAt), partial: true };
  return { runs, nextCursor: more && last ? encodeCursor({ atMs: Date.parse(last.at), runId: last.runId }) : null, partial: false };
}

/** The page size a `readRun` query asks for. */
export function eventPageLimit(query: RunReadQuery): number {
  return Math.max(1, Math.min(MAX_TRACE_PAGE_EVENTS, Math.floor(query.limit ?? MAX_TRACE_PAGE_EVENTS)));
}

/**
 * How many of `chars` (each event's delivered characters, in order) one page takes: at most
 * `limit`, and no more once they add up to `TRACE_PAGE_CHARS` — but always one.
 */
export function pageLength(chars: readonly number[], limit: number): number {
  let total = 0;
  let taken = 0;
  while (taken < chars.length && taken < limit) {
    if (taken > 0 && total + chars[taken]! > TRACE_PAGE_CHARS) break;
    total += chars[taken]!;
    taken++;
  }
  return taken;
}

/** An event cursor's text, opaque to callers: `<backend tag>.<fields>`, base64url. */
export function encodeEventCursor(fields: string): string {
  return Buffer.from(fields, 'utf8').toString('base64url');
}

/** The fields of an event cursor this service issued; a 400 for anything else. */
export function decodeEventCursor(cursor: string, parse: (text: string) => boolean): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!parse(text)) {
    throw new ProblemError('CC_VALIDATION_FAILED', '/query/cursor: not a cursor this service issued for this run', {
      errors: [{ path: '/query/cursor', message: 'not a cursor this service issued for this run' }],
    });
  }
  return text;
}

/** How a run stands for an append: its owner (the caller of its first event) and its events. */
export interface RunStanding {
  owner: string | undefined;
  events: number;
}

/** An event waiting in group commit, with what the caller said about its run. */
export interface QueuedEvent {
  event: TraceEventInput;
  newRun: boolean;
  result?: object | undefined;
}

/**
 * Which events of a batch may be written (null) and which are refused (the problem): an
 * event whose run was opened by another caller is `CC_RUN_OWNED`, one whose run holds
 * `max` events `CC_RUN_FULL`. `standing` holds every run of the batch not new (absent: no
 * event yet) and is updated as events are admitted, so a batch counts its own events.
 * A run whose first event has no caller (without tokens, or before callers were named)
 * belongs to nobody: its events are shown only to callers who read every run.
 */
export function admitEvents(batch: readonly QueuedEvent[], standing: Map<string, RunStanding>, max = MAX_RUN_EVENTS): Array<ProblemError | null> {
  return batch.map(({ event, newRun }) => {
    if (newRun) return null;
    const run = standing.get(event.runId) ?? { owner: undefined, events: 0 };
    if (run.events > 0 && run.owner !== undefined && run.owner !== event.caller) {
      return new ProblemError('CC_RUN_OWNED', `Run ${event.runId} was opened by another caller: send another runId (or none, for a new run).`);
    }
    if (run.events >= max) {
      return new ProblemError('CC_RUN_FULL', `Run ${event.runId} holds ${max.toLocaleString('en-US')} events, the most a run may hold: send another runId (or none, for a new run).`, {
        extensions: { limit: max },
      });
    }
    standing.set(event.runId, { owner: run.events === 0 ? event.caller : run.owner, events: run.events + 1 });
    return null;
  });
}
