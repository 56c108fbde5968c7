import { idKey } from './run-id-filter.js';
import { callerRunKey, mayHoldId, type FileFacets } from './facets.js';
import type { EventLocation, EventSummary, IndexedFile, RunIndex } from './run-index.js';

/*
 * Finding a run's events in the run index (`run-index.ts`, which holds them): their order,
 * who may see them, and which evicted parts may hold them. What reading a run, listing runs
 * and admitting an append to a run ask of the index; appending asks none of it.
 */

/**
 * The fields of an event that a listing filters and orders by: all it reads of an evicted
 * event line (`event-head.ts`) until the run makes its page.
 */
export type HeadSummary = Pick<EventSummary, 'runId' | 'subject' | 'caller' | 'status' | 'outcome' | 'requestId' | 'traceparent'>;

/** An event as a listing ranks it: one held in memory (its whole summary), or an evicted line's head. */
export interface ListedEvent extends EventPosition {
  length: number;
  summary: HeadSummary;
}

/** An evicted part as a read chose it: the bytes to read stay those, however far the file is evicted meanwhile. */
export interface EvictedPart {
  entry: IndexedFile;
  bytes: number;
  newestAtMs: number;
  facets: FileFacets;
}

/** Where an event is, as far as the order of a run's events goes. */
export type EventPosition = Pick<EventLocation, 'atMs' | 'fileCreatedMs' | 'file' | 'offset'>;

/** Event order within a run: `at`, then file creation, then position in the file. */
export function eventOrder(a: EventPosition, b: EventPosition): number {
  return a.atMs - b.atMs || a.fileCreatedMs - b.fileCreatedMs || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.offset - b.offset;
}

/** Whether a caller scoped to `visibleTo` may see the event (a caller reading every run sees all). */
export function visible(summary: Pick<EventSummary, 'caller'>, visibleTo: string | null | undefined): boolean {
  return visibleTo === undefined || visibleTo === null || summary.caller === visibleTo;
}

/** Whether an evicted part may hold events of the run at or after `minAtMs` (its id filter says maybe). */
export function mayHoldEvicted(index: RunIndex, runId: string, minAtMs: number): boolean {
  const key = idKey('run', runId);
  for (const entry of index.files.values()) {
    if (entry.facets && entry.facets.newestAtMs >= minAtMs && mayHoldId(entry.facets, key)) return true;
  }
  return false;
}

/**
 * Evicted parts that may hold events at or after `minAtMs`: of run `runId`, when given,
 * and of it by caller `visibleTo`, when given (another caller's run reads as an unknown one).
 */
export function evictedParts(index: RunIndex, minAtMs: number, runId?: string, visibleTo?: string | null): EvictedPart[] {
  const key = runId === undefined ? undefined : visibleTo === undefined || visibleTo === null ? idKey('run', runId) : callerRunKey(visibleTo, runId);
  const parts: EvictedPart[] = [];
  for (const entry of index.files.values()) {
    const facets = entry.facets;
    if (facets === null || facets.newestAtMs < minAtMs || (key !== undefined && !mayHoldId(facets, key))) continue;
    parts.push({ entry, bytes: facets.bytes, newestAtMs: facets.newestAtMs, facets });
  }
  return parts;
}

/** How many events of the run at or after `minAtMs` are held in memory, and the first of them; without sorting. */
export function heldStanding(index: RunIndex, runId: string, minAtMs: number): { events: number; first: EventLocation | null } {
  let events = 0;
  let first: EventLocation | null = null;
  for (const location of index.runs.get(runId) ?? []) {
    if (location.atMs < minAtMs) continue;
    events++;
    if (!first || eventOrder(location, first) < 0) first = location;
  }
  return { events, first };
}
