import { ProblemError } from '../../errors.js';
import { parseInstant } from '../../core/time.js';
import { MAX_TRACE_PAGE_EVENTS, TRACE_PAGE_CHARS, traceIdOf } from '../../../schemas/trace.js';
import type { ListRunsQuery, RunFilter, RunPage, RunReadQuery, RunSummary } from './store.js';

/**
 * Paging, the same for both backends: which page of runs (`GET /runs`) or of a run's events
 * (`GET /runs/:runId`) a query asks for, which runs a listing keeps, and the two opaque
 * cursors that say where the next page starts.
 */

const MAX_PAGE = 100;

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

