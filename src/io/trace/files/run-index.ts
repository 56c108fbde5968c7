import type { StoredEvent } from '../event-record.js';
import { listedFields } from '../event-record.js';
import type { RunSummary } from '../store.js';
import { addFacets, facetsBytes, type FileFacets } from './facets.js';

export type EventSummary = Omit<RunSummary, 'events'>;

/** What a summary is made from: an event as appended (with the characters it delivered), or as read back. */
export type Summarized = Pick<StoredEvent<unknown>, 'runId' | 'at' | 'route' | 'subject' | 'status' | 'outcome' | 'promptSha256' | 'surface' | 'caller' | 'request' | 'receipts' | 'warnings' | 'requestId' | 'traceparent'>;

/** The fields of an event that listing and finding a run need (≈ 800 bytes of heap per event, with its location). */
export function summarize(event: Summarized, chars: number): EventSummary {
  const summary: EventSummary = {
    runId: event.runId,
    at: event.at,
    route: event.route,
    subject: { kind: event.subject.kind, id: event.subject.id },
    status: event.status,
    outcome: event.outcome,
    chars,
    promptSha256: event.promptSha256 ?? null,
    ...listedFields(event),
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
  /** Runs with events of this file held in memory. */
  runIds: Set<string>;
  /** Events of this file held in memory: those after its evicted part. */
  events: number;
  /** What those events take in the index (`locationBytes`). */
  bytes: number;
  /** Its evicted part — the file's first `facets.bytes` bytes, whose events left memory to keep the index within its budget — or null. */
  facets: FileFacets | null;
}

/** About the heap an indexed event takes: its location and summary objects, and their strings. */
export function locationBytes(location: EventLocation): number {
  const summary = location.summary;
  let chars = location.file.length + summary.subject.kind.length + summary.subject.id.length;
  for (const value of Object.values(summary)) if (typeof value === 'string') chars += value.length;
  return 480 + 2 * chars;
}

/** The index's budget: what it holds in memory whatever is on disk. */
export interface IndexBudget {
  /** Events held (tests set a count; the service bounds bytes). */
  maxEvents: number;
  /** Bytes of held events (`locationBytes`); the evicted parts' facets may take as much again. */
  maxBytes: number;
}

/**
 * The index of every trace file in the directory: run id → event locations (with each
 * event's summary) for the newest events, within a budget of bytes (and, for tests, of
 * events). Past it, the oldest events leave memory a file part at a time — a complete file
 * whole, a file still being written (this process's or another's) from its start up to
 * where it was indexed — and the part keeps only its facets (`FileFacets`); it is read from
 * disk when a lookup or a listing its facets cannot rule out asks for it. Past as much again
 * of facets, the oldest parts lose their id filters. Own files are indexed as they are
 * written; other writers' files by incremental scans, evicting as they go.
 */
export class RunIndex {
  readonly files = new Map<string, IndexedFile>();
  private readonly byRun = new Map<string, EventLocation[]>();
  /** Run id → its events held in memory, in no particular order (`run-lookup.ts` finds a run's events with it). */
  readonly runs: ReadonlyMap<string, readonly EventLocation[]> = this.byRun;
  private events = 0;
  private heldBytes = 0;
  private facetBytes = 0;
  /** Counts evictions: what was counted in memory before one may be in an evicted part after it. */
  generation = 0;
  readonly budget: IndexBudget;

  constructor(budget: Partial<IndexBudget> = {}) {
    this.budget = { maxEvents: budget.maxEvents ?? Number.POSITIVE_INFINITY, maxBytes: budget.maxBytes ?? Number.POSITIVE_INFINITY };
  }

  file(name: string, createdMs: number, own: boolean): IndexedFile {
    let entry = this.files.get(name);
    if (!entry) {
      entry = { name, createdMs, own, scannedBytes: 0, complete: false, newestAtMs: createdMs, runIds: new Set(), events: 0, bytes: 0, facets: null };
      this.files.set(name, entry);
    }
    return entry;
  }

  /** Events held in memory. */
  get size(): number {
    return this.events;
  }

  /** Bytes the index holds: events in memory, and the facets of evicted parts. */
  get bytes(): number {
    return this.heldBytes + this.facetBytes;
  }

  add(file: IndexedFile, location: EventLocation): void {
    if (location.atMs > file.newestAtMs) file.newestAtMs = location.atMs;
    if (file.facets !== null && location.offset < file.facets.bytes) return;
    const runId = location.summary.runId;
    const locations = this.byRun.get(runId);
    if (locations) locations.push(location);
    else this.byRun.set(runId, [location]);
    file.runIds.add(runId);
    file.events++;
    const bytes = locationBytes(location);
    file.bytes += bytes;
    this.heldBytes += bytes;
    this.events++;
  }

  /** The file's events held in memory, in file order. */
  private heldOf(entry: IndexedFile): EventLocation[] {
    const name = entry.name;
    return [...entry.runIds].flatMap((runId) => (this.byRun.get(runId) ?? []).filter((location) => location.file === name)).sort((a, b) => a.offset - b.offset);
  }

  /** Forgets the file's events held in memory before `before` (all of them by default). */
  private forget(entry: IndexedFile, before = Number.POSITIVE_INFINITY): void {
    const runIds = new Set<string>();
    for (const runId of entry.runIds) {
      const kept: EventLocation[] = [];
      for (const location of this.byRun.get(runId) ?? []) {
        if (location.file !== entry.name) kept.push(location);
        else if (location.offset >= before) {
          kept.push(location);
          runIds.add(runId);
        } else {
          const bytes = locationBytes(location);
          entry.bytes -= bytes;
          this.heldBytes -= bytes;
          entry.events--;
          this.events--;
        }
      }
      if (kept.length > 0) this.byRun.set(runId, kept);
      else this.byRun.delete(runId);
    }
    entry.runIds = runIds;
  }

  dropFile(name: string): void {
    const entry = this.files.get(name);
    if (!entry) return;
    this.files.delete(name);
    this.forget(entry);
    if (entry.facets) this.facetBytes -= facetsBytes(entry.facets);
  }

  private overBudget(): boolean {
    return this.events > this.budget.maxEvents || this.heldBytes > this.budget.maxBytes;
  }

  /**
   * While the index holds more than its budget, evicts the events of the file part whose
   * newest event is oldest — complete files first, whole; then files still being written,
   * from their start, at least half of what they hold — so memory stays bounded however
   * long the retention and whoever writes. Returns how many parts it evicted.
   */
  evictOverBudget(): number {
    let evicted = 0;
    while (this.overBudget()) {
      let oldest: IndexedFile | null = null;
      for (const entry of this.files.values()) {
        if (entry.events === 0) continue;
        if (!oldest || (entry.complete && !oldest.complete) || (entry.complete === oldest.complete && entry.newestAtMs < oldest.newestAtMs)) oldest = entry;
      }
      if (!oldest) break;
      this.evictPart(oldest);
      evicted++;
    }
    if (this.facetBytes > this.budget.maxBytes) this.dropOldestFilters();
    return evicted;
  }

  private evictPart(entry: IndexedFile): void {
    const held = this.heldOf(entry);
    // A file still written evicts at least half of what it holds, so parts stay few; a complete one all of it.
    const least = entry.complete ? held.length : Math.ceil(held.length / 2);
    let count = 0;
    let events = this.events;
    let bytes = this.heldBytes;
    while (count < held.length && (count < least || events > this.budget.maxEvents || bytes > this.budget.maxBytes)) {
      bytes -= locationBytes(held[count]!);
      events--;
      count++;
    }
    const gone = held.slice(0, count);
    const last = gone[gone.length - 1]!;
    const before = last.offset + last.length;
    if (entry.facets) this.facetBytes -= facetsBytes(entry.facets);
    entry.facets = addFacets(entry.facets, gone, before);
    this.facetBytes += facetsBytes(entry.facets);
    this.forget(entry, before);
    this.generation++;
  }

  /** Facets past the budget: the oldest parts lose their id filters (a lookup then reads them). */
  private dropOldestFilters(): void {
    const parts = [...this.files.values()].filter((entry) => entry.facets?.ids != null).sort((a, b) => a.facets!.newestAtMs - b.facets!.newestAtMs);
    for (const entry of parts) {
      if (this.facetBytes <= this.budget.maxBytes) break;
      this.facetBytes -= facetsBytes(entry.facets!);
      entry.facets!.ids = null;
      this.facetBytes += facetsBytes(entry.facets!);
    }
  }
}
