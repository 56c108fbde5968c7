import { latestMatches, pageRequest, runPage, type ListRunsQuery, type RunFilter, type RunPage, type RunPosition, type RunSummary } from '../store.js';
import { idKey } from './run-id-filter.js';
import { eventOrder, newerFirst, tally, traceIdOfEvent, visible, type EventLocation, type IndexedFile, type RunIndex, type RunTally } from './run-index.js';

/**
 * How many bytes of evicted trace files one listing may read to find runs its filters match
 * before it answers with what it found (`partial`) and a cursor that goes on from there.
 */
export const MAX_LISTING_SCAN_BYTES = 64 * 1024 * 1024;

/** Reads an evicted file's events back (a vanished file holds none). */
export interface EvictedEvents {
  /** Calls `visit` for each event of the file; with `needle`, lines without those bytes are skipped unparsed. */
  read(entry: IndexedFile, visit: (location: EventLocation) => void, needle?: Buffer): Promise<void>;
}

interface Candidate {
  position: RunPosition;
  latest: EventLocation;
  events: number;
}

/**
 * `GET /runs` on the files backend, from the run index: the events held in memory, and only
 * the evicted files whose facets may hold an answer — for a run, request or trace id, those
 * whose id filter says maybe (usually one); otherwise those holding the subject, status,
 * outcome, caller and time asked for, newest first, and no further than the page needs.
 * A run found there is completed from the other files that may hold it (its latest event
 * decides the filters, and every event counts). Past `budget` bytes of files read, the page
 * holds the runs found so far — exactly those newer than every file not read — and its
 * cursor goes on from there (`partial`).
 */
export async function listRunsFromIndex(index: RunIndex, evicted: EvictedEvents, query: ListRunsQuery, minAtMs: number, budget = MAX_LISTING_SCAN_BYTES): Promise<RunPage> {
  const { limit, filter, after } = pageRequest(query);
  return new Listing(index, evicted, filter, after, limit, minAtMs).page(budget);
}

class Listing {
  /** What the files read in full hold, per run (visible events within retention). */
  private readonly tallies = new Map<string, RunTally>();
  private readonly scanned = new Set<string>();
  /** What other files hold of a candidate run, read by its id: per run, per file. */
  private readonly extra = new Map<string, Map<string, RunTally>>();
  private readonly confirmed = new Set<string>();
  /** Runs holding an event of the request or trace asked for. */
  private readonly matched = new Set<string>();
  private readonly byEvent: boolean;

  constructor(
    private readonly index: RunIndex,
    private readonly evicted: EvictedEvents,
    private readonly filter: RunFilter,
    private readonly after: RunPosition | null,
    private readonly limit: number,
    private readonly minAtMs: number,
  ) {
    this.byEvent = filter.requestId !== undefined || filter.traceId !== undefined;
  }

  async page(budget: number): Promise<RunPage> {
    if (this.byEvent || this.filter.runId !== undefined) {
      // A run, request or trace is looked up by its id: in memory, and in the few files whose id filter may hold it.
      if (this.byEvent) await this.findAsked();
      // Each such run read from the files that may hold it (a run found in an evicted file is in no tally).
      for (const runId of this.filter.runId !== undefined ? [this.filter.runId] : [...this.matched]) await this.confirm(runId);
      const runs = await this.decided(Number.NEGATIVE_INFINITY);
      return runPage(runs.slice(0, this.limit), runs.length > this.limit);
    }
    const sources = this.index
      .evictedFiles(this.minAtMs)
      .filter((entry) => this.mayAnswer(entry))
      .sort((a, b) => b.newestAtMs - a.newestAtMs);
    let read = 0;
    let counted = 0;
    // Newest file first, and no further than the page needs: runs newer than every file not read yet are decided.
    for (const next of [...sources, null]) {
      const horizon = next === null ? Number.NEGATIVE_INFINITY : next.newestAtMs;
      const runs = await this.decided(horizon);
      if (runs.length > this.limit) return runPage(runs.slice(0, this.limit), true);
      if (next === null) return runPage(runs, false);
      // A file this page's cursor runs through was read by the page before: it does not count.
      const straddles = this.after !== null && next.newestAtMs > this.after.atMs;
      const stop: RunPosition = { atMs: next.newestAtMs + 1, runId: '-' };
      if (!straddles && counted > 0 && read >= budget && (this.after === null || newerFirst(this.after, stop) < 0)) return runPage(runs, false, stop);
      if (!straddles) {
        counted++;
        read += next.scannedBytes;
      }
      await this.scan(next);
    }
    throw new Error('unreachable: the last pass decides the page');
  }

  /** The runs holding an event of the request or trace asked for: in memory, and in the evicted files whose id filter may hold it (lines without it skipped unparsed). */
  private async findAsked(): Promise<void> {
    for (const [runId, locations] of this.index.memoryRuns()) {
      if (locations.some((location) => this.holdsAsked(location))) this.matched.add(runId);
    }
    const { requestId, traceId } = this.filter;
    const key = requestId !== undefined ? idKey('request', requestId) : idKey('trace', traceId!);
    const needle = Buffer.from(requestId !== undefined ? `"requestId":${JSON.stringify(requestId)}` : `"traceparent":"00-${traceId}-`);
    for (const entry of this.index.evictedFiles(this.minAtMs)) {
      if (entry.facets !== null && !entry.facets.ids.mayContain(key)) continue;
      await this.evicted.read(
        entry,
        (location) => {
          if (this.holdsAsked(location)) this.matched.add(location.summary.runId);
        },
        needle,
      );
    }
  }

  /** Whether an evicted file may hold the latest event of a run the filters match. */
  private mayAnswer(entry: IndexedFile): boolean {
    const facets = entry.facets;
    if (facets === null) return true;
    const { filter } = this;
    if (filter.persona !== undefined && !facets.subjects.has(`persona:${filter.persona}`)) return false;
    if (filter.worker !== undefined && !facets.subjects.has(`worker:${filter.worker}`)) return false;
    if (filter.status !== undefined && !facets.statuses.has(filter.status)) return false;
    if (filter.outcome !== undefined && !facets.outcomes.has(filter.outcome)) return false;
    if (filter.visibleTo !== undefined && filter.visibleTo !== null && !facets.callers.has(filter.visibleTo)) return false;
    if (filter.fromMs !== undefined && entry.newestAtMs < filter.fromMs) return false;
    if (filter.toMs !== undefined && facets.oldestAtMs >= filter.toMs) return false;
    // Only an event at or before the cursor can be the latest of a run on a later page.
    if (this.after !== null && facets.oldestAtMs > this.after.atMs) return false;
    return true;
  }

  /** An event of the request or trace asked for, that the caller may see. */
  private holdsAsked(location: EventLocation): boolean {
    if (location.atMs < this.minAtMs || !visible(location.summary, this.filter.visibleTo)) return false;
    if (this.filter.requestId !== undefined && location.summary.requestId !== this.filter.requestId) return false;
    if (this.filter.traceId !== undefined && traceIdOfEvent(location.summary) !== this.filter.traceId) return false;
    return true;
  }

  private async scan(entry: IndexedFile): Promise<void> {
    this.scanned.add(entry.name);
    await this.evicted.read(entry, (location) => {
      if (!visible(location.summary, this.filter.visibleTo)) return;
      tally(this.tallies, location, this.minAtMs);
    });
  }

  /**
   * The runs that answer, newest first, whose latest event is after `horizon` (no file not
   * yet read can hold a later one), each completed from every file that may hold it: at
   * most `limit + 1` of them.
   */
  private async decided(horizon: number): Promise<RunSummary[]> {
    for (;;) {
      const top = this.top(horizon);
      let found = false;
      for (const candidate of top) if (!this.confirmed.has(candidate.position.runId)) found = (await this.confirm(candidate.position.runId)) || found;
      // Completing a run can only find later events of it, or more of them: then pick again.
      if (!found) return top.map(({ latest, events }): RunSummary => ({ ...latest.summary, events }));
    }
  }

  /** The `limit + 1` newest runs that answer, from what is known of them now. */
  private top(horizon: number): Candidate[] {
    const size = this.limit + 1;
    const kept: Candidate[] = [];
    const consider = (runId: string, memory: readonly EventLocation[]) => {
      if (this.byEvent && !this.matched.has(runId)) return;
      const run = this.known(runId, memory);
      if (run === null || run.latest.atMs <= horizon || !latestMatches(run.latest.summary, run.latest.atMs, this.filter)) return;
      const position = { atMs: run.latest.atMs, runId };
      if (this.after !== null && newerFirst(position, this.after) <= 0) return;
      if (kept.length === size && newerFirst(position, kept[size - 1]!.position) >= 0) return;
      let low = 0;
      let high = kept.length;
      while (low < high) {
        const mid = (low + high) >> 1;
        if (newerFirst(kept[mid]!.position, position) <= 0) low = mid + 1;
        else high = mid;
      }
      kept.splice(low, 0, { position, latest: run.latest, events: run.events });
      if (kept.length > size) kept.pop();
    };
    if (this.filter.runId !== undefined) consider(this.filter.runId, this.index.held(this.filter.runId));
    else if (this.byEvent) for (const runId of this.matched) consider(runId, this.index.held(runId));
    else {
      for (const [runId, memory] of this.index.memoryRuns()) consider(runId, memory);
      for (const runId of this.tallies.keys()) if (!this.index.holds(runId)) consider(runId, []);
    }
    return kept;
  }

  /** What is known of a run: its latest visible event within retention and how many it has, in memory, in the files read and in those read for it. */
  private known(runId: string, memory: readonly EventLocation[]): { latest: EventLocation; events: number } | null {
    const { minAtMs, filter } = this;
    let latest: EventLocation | null = null;
    let events = 0;
    for (const location of memory) {
      if (location.atMs < minAtMs || !visible(location.summary, filter.visibleTo)) continue;
      events++;
      if (latest === null || eventOrder(location, latest) > 0) latest = location;
    }
    const parts: RunTally[] = [];
    const scanned = this.tallies.get(runId);
    if (scanned) parts.push(scanned);
    for (const [file, part] of this.extra.get(runId) ?? []) if (!this.scanned.has(file)) parts.push(part);
    for (const part of parts) {
      events += part.events;
      if (latest === null || eventOrder(part.latest, latest) > 0) latest = part.latest;
    }
    return latest === null ? null : { latest, events };
  }

  /** Reads the run's events in the evicted files not read yet that may hold it (its id filter says maybe); whether it found any. */
  private async confirm(runId: string): Promise<boolean> {
    this.confirmed.add(runId);
    // Event lines without the run id are skipped unparsed.
    const needle = Buffer.from(`"runId":${JSON.stringify(runId)}`);
    const parts = this.extra.get(runId) ?? new Map<string, RunTally>();
    this.extra.set(runId, parts);
    for (const entry of this.index.evictedFiles(this.minAtMs, runId)) {
      if (this.scanned.has(entry.name) || parts.has(entry.name)) continue;
      const found = new Map<string, RunTally>();
      await this.evicted.read(
        entry,
        (location) => {
          if (location.summary.runId === runId && visible(location.summary, this.filter.visibleTo)) tally(found, location, this.minAtMs);
        },
        needle,
      );
      const part = found.get(runId);
      if (part) parts.set(entry.name, part);
    }
    return parts.size > 0;
  }
}
