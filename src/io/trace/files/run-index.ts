import type { StoredEvent } from '../event-record.js';
import { listedFields, traceIdOfTraceparent, type RunPosition, type RunSummary } from '../store.js';
import { idKey, IdFilter } from './run-id-filter.js';

export type EventSummary = Omit<RunSummary, 'events'>;

/** The fields of a stored event that listing and finding a run need (≈ 800 bytes of heap per event, with its location). */
export function summarize(event: StoredEvent<unknown>): EventSummary {
  const summary: EventSummary = {
    runId: event.runId,
    at: event.at,
    route: event.route,
    subject: { kind: event.subject.kind, id: event.subject.id },
    status: event.status,
    outcome: event.outcome,
    chars: event.chars ?? 0,
    promptSha256: event.promptSha256 ?? null,
    ...listedFields(event),
  };
  if (event.surface !== undefined) summary.surface = event.surface;
  if (event.caller !== undefined) summary.caller = event.caller;
  return summary;
}

/** The trace id of an event's traceparent. */
export function traceIdOfEvent(summary: Pick<EventSummary, 'traceparent'>): string | undefined {
  return traceIdOfTraceparent(summary.traceparent);
}

/** Where one event record lives, with what listing needs so listing never touches the disk. */
export interface EventLocation {
  file: string;
  fileCreatedMs: number;
  offset: number;
  length: number;
  atMs: number;
  summary: EventSummary;
}

export interface IndexedFile {
  name: string;
  createdMs: number;
  /** Written by this process: indexed as it is written, never scanned. */
  own: boolean;
  /** Bytes up to the end of the last complete line read (or, for the file being written, written). */
  scannedBytes: number;
  /** Scanned to the end and no longer written by anyone. */
  complete: boolean;
  /** The newest event's time, or the file's creation time while it holds none. */
  newestAtMs: number;
  runIds: Set<string>;
  /** Events of this file held in memory (0 once evicted). */
  events: number;
  /** Its events were dropped from memory to keep the index within its budget; reads scan the file instead. */
  evicted: boolean;
  /** Once evicted: what it holds, so a lookup or a listing skips the files that cannot answer it. */
  facets: FileFacets | null;
}

/**
 * What an evicted file keeps in memory of its events (a few bytes per event): which run,
 * request and trace ids it may hold (a Bloom filter: no false negatives), exactly which
 * subjects, statuses, outcomes and callers it holds, and its oldest event's time. A listing
 * reads only the files whose facets say they may hold an answer; a worker with no runs reads none.
 */
export interface FileFacets {
  ids: IdFilter;
  /** `persona:mars`, `worker:scribe`. */
  subjects: Set<string>;
  statuses: Set<number>;
  outcomes: Set<string>;
  /** Callers of its events; `''` for an event without one. */
  callers: Set<string>;
  oldestAtMs: number;
}

function facetsOf(locations: readonly EventLocation[], newestAtMs: number): FileFacets {
  const ids: string[] = [];
  const facets: Omit<FileFacets, 'ids'> = { subjects: new Set(), statuses: new Set(), outcomes: new Set(), callers: new Set(), oldestAtMs: newestAtMs };
  const runs = new Set<string>();
  for (const { summary, atMs } of locations) {
    if (!runs.has(summary.runId)) {
      runs.add(summary.runId);
      ids.push(idKey('run', summary.runId));
    }
    if (summary.requestId !== undefined) ids.push(idKey('request', summary.requestId));
    const traceId = traceIdOfEvent(summary);
    if (traceId !== undefined) ids.push(idKey('trace', traceId));
    facets.subjects.add(`${summary.subject.kind}:${summary.subject.id}`);
    facets.statuses.add(summary.status);
    facets.outcomes.add(summary.outcome);
    facets.callers.add(summary.caller ?? '');
    if (atMs < facets.oldestAtMs) facets.oldestAtMs = atMs;
  }
  return { ids: new IdFilter(ids, ids.length), ...facets };
}

/** What a scan of evicted files keeps per run for listing: its latest event there and its count. */
export interface RunTally {
  latest: EventLocation;
  events: number;
}

/** Folds one event of an evicted file into the tallies (events before `minAtMs` are ignored). */
export function tally(tallies: Map<string, RunTally>, location: EventLocation, minAtMs: number): void {
  if (location.atMs < minAtMs) return;
  const runId = location.summary.runId;
  const known = tallies.get(runId);
  if (!known) tallies.set(runId, { latest: location, events: 1 });
  else {
    known.events++;
    if (eventOrder(location, known.latest) > 0) known.latest = location;
  }
}

/** Newest first: later `at`, then the larger run id (negative when `a` comes first). */
export function newerFirst(a: RunPosition, b: RunPosition): number {
  if (a.atMs !== b.atMs) return b.atMs - a.atMs;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

/** Where an event is, as far as the order of a run's events goes. */
export type EventPosition = Pick<EventLocation, 'atMs' | 'fileCreatedMs' | 'file' | 'offset'>;

/** Event order within a run: `at`, then file creation, then position in the file. */
export function eventOrder(a: EventPosition, b: EventPosition): number {
  return a.atMs - b.atMs || a.fileCreatedMs - b.fileCreatedMs || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.offset - b.offset;
}

/** Whether a caller scoped to `visibleTo` may see the event (a caller reading every run sees all). */
export function visible(summary: EventSummary, visibleTo: string | null | undefined): boolean {
  return visibleTo === undefined || visibleTo === null || summary.caller === visibleTo;
}

/**
 * The index of every trace file in the directory: run id → event locations (with each
 * event's summary) for the newest files, within a budget of `maxEvents` events; older
 * complete files keep only their name, times, size and facets (`FileFacets`), and are read
 * from disk when a lookup or a listing their facets cannot rule out asks for them. Own files
 * are indexed as they are written; other writers' files by incremental scans.
 */
export class RunIndex {
  readonly files = new Map<string, IndexedFile>();
  private readonly runs = new Map<string, EventLocation[]>();
  private events = 0;
  /** Counts evictions: what was counted in memory before one may be in an evicted file after it. */
  generation = 0;

  constructor(readonly maxEvents: number = Number.POSITIVE_INFINITY) {}

  file(name: string, createdMs: number, own: boolean): IndexedFile {
    let entry = this.files.get(name);
    if (!entry) {
      entry = { name, createdMs, own, scannedBytes: 0, complete: false, newestAtMs: createdMs, runIds: new Set(), events: 0, evicted: false, facets: null };
      this.files.set(name, entry);
    }
    return entry;
  }

  /** Events held in memory. */
  get size(): number {
    return this.events;
  }

  add(file: IndexedFile, location: EventLocation): void {
    if (location.atMs > file.newestAtMs) file.newestAtMs = location.atMs;
    if (file.evicted) return;
    const runId = location.summary.runId;
    const locations = this.runs.get(runId);
    if (locations) locations.push(location);
    else this.runs.set(runId, [location]);
    file.runIds.add(runId);
    file.events++;
    this.events++;
  }

  private forget(entry: IndexedFile): void {
    for (const runId of entry.runIds) {
      const remaining = (this.runs.get(runId) ?? []).filter((location) => location.file !== entry.name);
      if (remaining.length > 0) this.runs.set(runId, remaining);
      else this.runs.delete(runId);
    }
    this.events -= entry.events;
    entry.events = 0;
    entry.runIds = new Set();
  }

  dropFile(name: string): void {
    const entry = this.files.get(name);
    if (!entry) return;
    this.files.delete(name);
    this.forget(entry);
  }

  /**
   * While more than `maxEvents` events are held, drops the events of the complete file
   * with the oldest newest event (never one still being written), so memory stays bounded
   * however long the retention.
   */
  evictOverBudget(): number {
    let evicted = 0;
    while (this.events > this.maxEvents) {
      let oldest: IndexedFile | null = null;
      for (const entry of this.files.values()) {
        if (entry.evicted || !entry.complete || entry.events === 0) continue;
        if (!oldest || entry.newestAtMs < oldest.newestAtMs) oldest = entry;
      }
      if (!oldest) break;
      const name = oldest.name;
      const locations = [...oldest.runIds].flatMap((runId) => (this.runs.get(runId) ?? []).filter((location) => location.file === name));
      oldest.facets = facetsOf(locations, oldest.newestAtMs);
      this.forget(oldest);
      oldest.evicted = true;
      this.generation++;
      evicted++;
    }
    return evicted;
  }

  /** Whether an evicted file may hold events of the run at or after `minAtMs` (its id filter says maybe). */
  mayHoldEvicted(runId: string, minAtMs: number): boolean {
    const key = idKey('run', runId);
    for (const entry of this.files.values()) {
      if (entry.evicted && entry.newestAtMs >= minAtMs && (!entry.facets || entry.facets.ids.mayContain(key))) return true;
    }
    return false;
  }

  /** Evicted files that may hold events at or after `minAtMs` (of run `runId`, when given). */
  evictedFiles(minAtMs: number, runId?: string): IndexedFile[] {
    const key = runId === undefined ? undefined : idKey('run', runId);
    return [...this.files.values()].filter(
      (entry) => entry.evicted && entry.newestAtMs >= minAtMs && (key === undefined || !entry.facets || entry.facets.ids.mayContain(key)),
    );
  }

  /** Every run held in memory, with its locations (in no particular order). */
  memoryRuns(): IterableIterator<[string, EventLocation[]]> {
    return this.runs.entries();
  }

  /** The run's events held in memory (in no particular order; not to be changed). */
  held(runId: string): readonly EventLocation[] {
    return this.runs.get(runId) ?? [];
  }

  /** Whether the run has events held in memory. */
  holds(runId: string): boolean {
    return this.runs.has(runId);
  }

  /** The run's events at or after `minAtMs`, in event order. */
  locations(runId: string, minAtMs: number): EventLocation[] {
    return (this.runs.get(runId) ?? []).filter((location) => location.atMs >= minAtMs).sort(eventOrder);
  }

  /** How many events of the run at or after `minAtMs` are held in memory, and the first of them; without sorting. */
  standing(runId: string, minAtMs: number): { events: number; first: EventLocation | null } {
    let events = 0;
    let first: EventLocation | null = null;
    for (const location of this.runs.get(runId) ?? []) {
      if (location.atMs < minAtMs) continue;
      events++;
      if (!first || eventOrder(location, first) < 0) first = location;
    }
    return { events, first };
  }

  /** Calls `visit` for each of the run's events held in memory (in no particular order). */
  eachLocation(runId: string, visit: (location: EventLocation) => void): void {
    for (const location of this.runs.get(runId) ?? []) visit(location);
  }
}
