import type { StoredEvent } from '../event-record.js';
import type { RunFilter, RunPosition, RunSummary } from '../store.js';
import { RunIdFilter } from './run-id-filter.js';

export type EventSummary = Omit<RunSummary, 'events'>;

/** The fields of a stored event that listing needs (≈ 600 bytes of heap per event, with its location). */
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
  };
  if (event.surface !== undefined) summary.surface = event.surface;
  if (event.caller !== undefined) summary.caller = event.caller;
  return summary;
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
  /** Once evicted: which run ids the file may hold (no false negatives), so a run lookup skips most files. */
  runFilter: RunIdFilter | null;
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

/** Newest first: later `at`, then the larger run id. */
function newerFirst(a: RunPosition, b: RunPosition): number {
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

function matches(summary: EventSummary, filter: RunFilter): boolean {
  if (filter.persona !== undefined && (summary.subject.kind !== 'persona' || summary.subject.id !== filter.persona)) return false;
  if (filter.worker !== undefined && (summary.subject.kind !== 'worker' || summary.subject.id !== filter.worker)) return false;
  if (filter.status !== undefined && summary.status !== filter.status) return false;
  if (filter.outcome !== undefined && summary.outcome !== filter.outcome) return false;
  return true;
}

/**
 * The index of every trace file in the directory: run id → event locations for the newest
 * files, within a budget of `maxEvents` events; older complete files are only listed
 * (name, times, size) and read from disk when asked for. Own files are indexed as they
 * are written; other writers' files by incremental scans.
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
      entry = { name, createdMs, own, scannedBytes: 0, complete: false, newestAtMs: createdMs, runIds: new Set(), events: 0, evicted: false, runFilter: null };
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
      oldest.runFilter = new RunIdFilter(oldest.runIds, oldest.runIds.size);
      this.forget(oldest);
      oldest.evicted = true;
      this.generation++;
      evicted++;
    }
    return evicted;
  }

  /** Whether an evicted file may hold events of the run at or after `minAtMs` (its run filter says maybe). */
  mayHoldEvicted(runId: string, minAtMs: number): boolean {
    for (const entry of this.files.values()) {
      if (entry.evicted && entry.newestAtMs >= minAtMs && (!entry.runFilter || entry.runFilter.mayContain(runId))) return true;
    }
    return false;
  }

  /** Evicted files that may hold events at or after `minAtMs` (of run `runId`, when given). */
  evictedFiles(minAtMs: number, runId?: string): IndexedFile[] {
    return [...this.files.values()].filter(
      (entry) => entry.evicted && entry.newestAtMs >= minAtMs && (runId === undefined || !entry.runFilter || entry.runFilter.mayContain(runId)),
    );
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

  /**
   * Up to `limit` runs strictly older than `after`, newest first, and whether more exist.
   * `older` adds what scans of evicted files found: per run, its latest event there and
   * how many events it has there (at or after `minAtMs`).
   */
  list(
    limit: number,
    filter: RunFilter,
    minAtMs: number,
    after: RunPosition | null,
    older: ReadonlyMap<string, RunTally> = new Map(),
  ): { runs: RunSummary[]; more: boolean } {
    const page: Array<RunPosition & { summary: RunSummary }> = [];
    const consider = (runId: string, locations: EventLocation[], extra: RunTally | undefined) => {
      let latest: EventLocation | null = extra?.latest ?? null;
      let events = extra?.events ?? 0;
      for (const location of locations) {
        if (location.atMs < minAtMs || !visible(location.summary, filter.visibleTo)) continue;
        events++;
        if (!latest || eventOrder(location, latest) > 0) latest = location;
      }
      if (!latest || !matches(latest.summary, filter)) return;
      const position = { atMs: latest.atMs, runId };
      if (after && newerFirst(position, after) <= 0) return;
      if (page.length > limit && newerFirst(position, page[page.length - 1]!) >= 0) return;
      let low = 0;
      let high = page.length;
      while (low < high) {
        const mid = (low + high) >> 1;
        if (newerFirst(page[mid]!, position) <= 0) low = mid + 1;
        else high = mid;
      }
      page.splice(low, 0, { ...position, summary: { ...latest.summary, events } });
      if (page.length > limit + 1) page.pop();
    };
    for (const [runId, locations] of this.runs) consider(runId, locations, older.get(runId));
    for (const [runId, tally] of older) if (!this.runs.has(runId)) consider(runId, [], tally);
    return { runs: page.slice(0, limit).map((entry) => entry.summary), more: page.length > limit };
  }
}
