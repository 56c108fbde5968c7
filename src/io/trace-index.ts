import type { TraceOutcome, TraceSubject } from './trace-store.js';

/** One line of `GET /runs`: a run, described by its most recent event. */
export interface RunSummary {
  runId: string;
  at: string;
  route: string;
  subject: TraceSubject;
  surface?: string;
  status: number;
  outcome: TraceOutcome;
  /** Characters delivered (system + input prompt); 0 when nothing was delivered. */
  chars: number;
  promptSha256: string | null;
  /** Events of this run still within retention. */
  events: number;
}

export type EventSummary = Omit<RunSummary, 'events'>;

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
  /** Bytes up to the end of the last complete line read. */
  scannedBytes: number;
  /** Scanned to the end and no longer written by anyone. */
  complete: boolean;
  /** The newest event's time, or the file's creation time while it holds none. */
  newestAtMs: number;
  runIds: Set<string>;
}

export interface RunFilter {
  persona?: string;
  worker?: string;
  status?: number;
  outcome?: TraceOutcome;
}

export interface RunPosition {
  atMs: number;
  runId: string;
}

/** Newest first: later `at`, then the larger run id. */
function newerFirst(a: RunPosition, b: RunPosition): number {
  if (a.atMs !== b.atMs) return b.atMs - a.atMs;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

/** Event order within a run: `at`, then file creation, then position in the file. */
export function eventOrder(a: EventLocation, b: EventLocation): number {
  return a.atMs - b.atMs || a.fileCreatedMs - b.fileCreatedMs || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.offset - b.offset;
}

function matches(summary: EventSummary, filter: RunFilter): boolean {
  if (filter.persona !== undefined && (summary.subject.kind !== 'persona' || summary.subject.id !== filter.persona)) return false;
  if (filter.worker !== undefined && (summary.subject.kind !== 'worker' || summary.subject.id !== filter.worker)) return false;
  if (filter.status !== undefined && summary.status !== filter.status) return false;
  if (filter.outcome !== undefined && summary.outcome !== filter.outcome) return false;
  return true;
}

/**
 * The in-memory index of every trace file in the directory: run id → event locations.
 * Own files are indexed as they are written; other writers' files by incremental scans.
 */
export class TraceIndex {
  readonly files = new Map<string, IndexedFile>();
  private readonly runs = new Map<string, EventLocation[]>();

  file(name: string, createdMs: number, own: boolean): IndexedFile {
    let entry = this.files.get(name);
    if (!entry) {
      entry = { name, createdMs, own, scannedBytes: 0, complete: false, newestAtMs: createdMs, runIds: new Set() };
      this.files.set(name, entry);
    }
    return entry;
  }

  add(file: IndexedFile, location: EventLocation): void {
    const runId = location.summary.runId;
    const locations = this.runs.get(runId);
    if (locations) locations.push(location);
    else this.runs.set(runId, [location]);
    file.runIds.add(runId);
    if (location.atMs > file.newestAtMs) file.newestAtMs = location.atMs;
  }

  dropFile(name: string): void {
    const entry = this.files.get(name);
    if (!entry) return;
    this.files.delete(name);
    for (const runId of entry.runIds) {
      const remaining = (this.runs.get(runId) ?? []).filter((location) => location.file !== name);
      if (remaining.length > 0) this.runs.set(runId, remaining);
      else this.runs.delete(runId);
    }
  }

  /** The run's events at or after `minAtMs`, in event order. */
  locations(runId: string, minAtMs: number): EventLocation[] {
    return (this.runs.get(runId) ?? []).filter((location) => location.atMs >= minAtMs).sort(eventOrder);
  }

  /** Up to `limit` runs strictly older than `after`, newest first, and whether more exist. */
  list(limit: number, filter: RunFilter, minAtMs: number, after: RunPosition | null): { runs: RunSummary[]; more: boolean } {
    const page: Array<RunPosition & { summary: RunSummary }> = [];
    for (const [runId, locations] of this.runs) {
      let latest: EventLocation | null = null;
      let events = 0;
      for (const location of locations) {
        if (location.atMs < minAtMs) continue;
        events++;
        if (!latest || eventOrder(location, latest) > 0) latest = location;
      }
      if (!latest || !matches(latest.summary, filter)) continue;
      const position = { atMs: latest.atMs, runId };
      if (after && newerFirst(position, after) <= 0) continue;
      if (page.length > limit && newerFirst(position, page[page.length - 1]!) >= 0) continue;
      let low = 0;
      let high = page.length;
      while (low < high) {
        const mid = (low + high) >> 1;
        if (newerFirst(page[mid]!, position) <= 0) low = mid + 1;
        else high = mid;
      }
      page.splice(low, 0, { ...position, summary: { ...latest.summary, events } });
      if (page.length > limit + 1) page.pop();
    }
    return { runs: page.slice(0, limit).map((entry) => entry.summary), more: page.length > limit };
  }
}

export function encodeCursor(position: RunPosition): string {
  return Buffer.from(`${position.atMs}.${position.runId}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): RunPosition | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(-?\d{1,16})\.([A-Za-z0-9_:-]{1,128})$/.exec(text);
  return match ? { atMs: Number(match[1]), runId: match[2]! } : null;
}
