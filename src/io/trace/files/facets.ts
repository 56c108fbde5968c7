import { traceIdOfTraceparent } from '../event-record.js';
import { idKey, IdFilter } from './run-id-filter.js';
import type { RunSummaryBody } from '../../../../schemas/trace.js';

/** What the facets are made of: an evicted event's time and the summary fields they keep. */
type Faceted = { atMs: number; summary: Pick<RunSummaryBody, 'runId' | 'caller' | 'requestId' | 'traceparent' | 'subject' | 'status' | 'outcome'> };

/**
 * What the evicted part of a file keeps in memory of its events (a few bytes per event):
 * which run, request and trace ids it may hold, and which runs of which caller (Bloom
 * filters: no false negatives), exactly which subjects, statuses, outcomes and callers it
 * holds, and its oldest and newest event's time. A lookup or a listing reads only the parts
 * whose facets say they may hold an answer; a worker with no runs reads none.
 */
export interface FileFacets {
  /** The part is the file's first `bytes` bytes; the events after it are held in memory. */
  bytes: number;
  /** One filter per eviction from the file; null once dropped to keep the index within its bytes (the part may then hold any id). */
  ids: IdFilter[] | null;
  /** `persona:mars`, `worker:scribe`. */
  subjects: Set<string>;
  statuses: Set<number>;
  outcomes: Set<string>;
  /** Callers of its events; `''` for an event without one. */
  callers: Set<string>;
  oldestAtMs: number;
  newestAtMs: number;
}

/** Whether a part's id filters may hold `key` (an `idKey` or a `callerRunKey`). */
export function mayHoldId(facets: FileFacets, key: string): boolean {
  return facets.ids === null || facets.ids.some((filter) => filter.mayContain(key));
}

/** The key a caller's run goes under in an id filter, so a lookup of another caller's run reads nothing. */
export function callerRunKey(caller: string, runId: string): string {
  return `c:${caller}\u0000${runId}`;
}

/** The trace id of an event's traceparent. */
export function traceIdOfEvent(summary: Pick<RunSummaryBody, 'traceparent'>): string | undefined {
  return traceIdOfTraceparent(summary.traceparent);
}

/** About the heap a part's facets take. */
export function facetsBytes(facets: FileFacets): number {
  let bytes = 256 + 64 * (facets.subjects.size + facets.statuses.size + facets.outcomes.size + facets.callers.size);
  for (const filter of facets.ids ?? []) bytes += filter.bytes + 64;
  return bytes;
}

/** Folds evicted events (those before `bytes`) into a file's facets. */
export function addFacets(known: FileFacets | null, locations: readonly Faceted[], bytes: number): FileFacets {
  const facets: FileFacets = known ?? {
    bytes,
    ids: [],
    subjects: new Set(),
    statuses: new Set(),
    outcomes: new Set(),
    callers: new Set(),
    oldestAtMs: Number.POSITIVE_INFINITY,
    newestAtMs: Number.NEGATIVE_INFINITY,
  };
  facets.bytes = Math.max(facets.bytes, bytes);
  const ids = new Set<string>();
  for (const { summary, atMs } of locations) {
    ids.add(idKey('run', summary.runId));
    if (summary.caller !== undefined) ids.add(callerRunKey(summary.caller, summary.runId));
    if (summary.requestId !== undefined) ids.add(idKey('request', summary.requestId));
    const traceId = traceIdOfEvent(summary);
    if (traceId !== undefined) ids.add(idKey('trace', traceId));
    facets.subjects.add(`${summary.subject.kind}:${summary.subject.id}`);
    facets.statuses.add(summary.status);
    facets.outcomes.add(summary.outcome);
    facets.callers.add(summary.caller ?? '');
    if (atMs < facets.oldestAtMs) facets.oldestAtMs = atMs;
    if (atMs > facets.newestAtMs) facets.newestAtMs = atMs;
  }
  facets.ids?.push(new IdFilter(ids, ids.size));
  return facets;
}
