import { latestMatches, pageRequest, runPage, type RunPosition } from '../paging.js';
import { type ListRunsQuery, type RunFilter, type RunPage, type RunSummary } from '../store.js';
import { ProblemError } from '../../../errors.js';
import { idKey } from './run-id-filter.js';
import { callerRunKey, mayHoldId, traceIdOfEvent, type FileFacets } from './facets.js';
import type { EventLocation, EventSummary, RunIndex } from './run-index.js';
import { eventOrder, evictedParts, visible, type EvictedPart, type HeadSummary, type ListedEvent } from './run-lookup.js';

/** Whether a listed event carries its whole summary (one held in memory, or a line read whole). */
export function isWhole(event: ListedEvent): event is EventLocation {
  return 'route' in event.summary;
}

/** What a scan of evicted files keeps per run for listing: its latest event there and its count. */
export interface RunTally {
  latest: ListedEvent;
  events: number;
}

/** Folds one event of an evicted file into the tallies (events before `minAtMs` are ignored). */
export function tally(tallies: Map<string, RunTally>, location: ListedEvent, minAtMs: number): void {
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

/**
 * How many bytes of evicted trace files one listing may read to find runs its filters match
 * before it answers with what it found (`partial`) and a cursor that goes on from there.
 */
export const MAX_LISTING_SCAN_BYTES = 64 * 1024 * 1024;

/**
 * About the bytes one listing may hold of the runs it tallies (≈ 10,000 runs found by a
 * request or trace id). A listing by request, trace or run id that finds more refuses
 * (`CC_TRACE_UNAVAILABLE`, saying why); a listing by subject, status, outcome, caller or time
 * stops there as at its read bound (`partial`), one part past it at most.
 */
export const MAX_LISTING_TALLY_BYTES = 8 * 1024 * 1024;

/** About the heap one run's tally of one part takes: the tally, the head of its latest event and its map entries. */
const TALLY_BYTES = 640;
/** About the heap a run found by its request or trace takes in the sets that track it. */
const MATCH_BYTES = 160;

/** Which event lines of a part a read parses (the others are skipped unparsed). */
export type LineFilter = (line: Buffer) => boolean;

/**
 * Which events of a part a listing reads: by the line's bytes when the file is read, by its
 * head when the part's lines are remembered (`evicted-lines.ts`). The head form keeps what
 * the line form keeps that the listing uses: an event of the request or trace asked for, or
 * of a run it tallies.
 */
export interface EventFilter {
  line: LineFilter;
  head: (summary: HeadSummary) => boolean;
}

/** Reads an evicted part's events back for one listing (a vanished file holds none). */
export interface EvictedEvents {
  /**
   * Calls `visit` for each event of the part, as its head (`event-head.ts`) where the line
   * starts as the writer writes one; with `keep`, events it refuses are skipped (their lines
   * unparsed). Stops with the signal.
   */
  read(part: EvictedPart, visit: (event: ListedEvent) => void, keep?: EventFilter, signal?: AbortSignal): Promise<void>;
  /** The whole summary of an event read as a head (its one line read again); null when the line no longer holds it. */
  summary(event: ListedEvent): Promise<EventSummary | null>;
}

/** Lines holding these bytes. */
export function holdingBytes(needle: Buffer): LineFilter {
  return (line) => line.indexOf(needle) !== -1;
}

/** Events of the request or trace asked for: lines holding its id, heads naming it. */
function holdingAsked(filter: RunFilter): EventFilter {
  const { requestId, traceId } = filter;
  return {
    line: holdingBytes(Buffer.from(requestId !== undefined ? `"requestId":${JSON.stringify(requestId)}` : `"traceparent":"00-${traceId}-`)),
    head: requestId !== undefined ? (summary) => summary.requestId === requestId : (summary) => traceIdOfEvent(summary) === traceId,
  };
}

const RUN_ID_KEY = Buffer.from('"runId":"');
/** How the writer starts an event line: its own run id comes first. */
const EVENT_RUN_PREFIX = Buffer.from('{"t":"event","event":{"runId":"');

/** The run id an event line starts with, without parsing it; null when the line does not start as the writer writes one. */
function ownRunId(line: Buffer): string | null {
  if (line.length <= EVENT_RUN_PREFIX.length || line.compare(EVENT_RUN_PREFIX, 0, EVENT_RUN_PREFIX.length, 0, EVENT_RUN_PREFIX.length) !== 0) return null;
  const end = line.indexOf(0x22, EVENT_RUN_PREFIX.length);
  return end === -1 ? null : line.toString('latin1', EVENT_RUN_PREFIX.length, end);
}

/**
 * Lines naming one of these runs: the run id the line starts with, as the writer writes one;
 * otherwise every `"runId":"…"` of the line is looked at, so the event's own is among them.
 */
export function namingRuns(runIds: ReadonlySet<string>): EventFilter {
  const line = (line: Buffer) => {
    const own = ownRunId(line);
    if (own !== null) return runIds.has(own);
    for (let at = line.indexOf(RUN_ID_KEY); at !== -1; at = line.indexOf(RUN_ID_KEY, at + 1)) {
      const start = at + RUN_ID_KEY.length;
      const end = line.indexOf(0x22, start);
      if (end !== -1 && runIds.has(line.toString('latin1', start, end))) return true;
    }
    return false;
  };
  return { line, head: (summary) => runIds.has(summary.runId) };
}

interface Candidate {
  position: RunPosition;
  latest: ListedEvent;
  events: number;
}

/**
 * `GET /runs` on the files backend, from the run index: the events held in memory, and only
 * the evicted parts whose facets may hold an answer — for a run, request or trace id, those
 * whose id filter says maybe (usually one); otherwise those holding the subject, status,
 * outcome, caller and time asked for, newest first, and no further than the page needs.
 * A run found there is completed from the other parts that may hold it (its latest event
 * decides the filters, and every event counts): the `limit` + 1 newest together, each part
 * read once for all of them. Past `budget` bytes of parts read, the page holds the runs found
 * so far — exactly those newer than every part not read — and its cursor goes on from there
 * (`partial`). The signal stops the work (a client gone, a deadline passed). What it tallies
 * is bounded by `maxTallyBytes` (`MAX_LISTING_TALLY_BYTES`).
 */
export async function listRunsFromIndex(
  index: RunIndex,
  evicted: EvictedEvents,
  query: ListRunsQuery,
  minAtMs: number,
  budget = MAX_LISTING_SCAN_BYTES,
  signal?: AbortSignal,
  maxTallyBytes = MAX_LISTING_TALLY_BYTES,
): Promise<RunPage> {
  const { limit, filter, after } = pageRequest(query);
  return new Listing(index, evicted, filter, after, limit, minAtMs, signal, maxTallyBytes).page(budget);
}

class Listing {
  /** What the parts read in full hold, per run (visible events within retention). */
  private readonly tallies = new Map<string, RunTally>();
  private readonly scanned = new Set<string>();
  /** What other parts hold of a candidate run, read by its id: per run, per file. */
  private readonly extra = new Map<string, Map<string, RunTally>>();
  private readonly confirmed = new Set<string>();
  /** Runs holding an event of the request or trace asked for, in the order found. */
  private readonly matched = new Set<string>();
  private readonly foundAt = new Map<string, number>();
  /** Of each part read for the runs asked for: which of them it was read in full for (`covers`). */
  private readonly coverage = new Map<string, { from: number; to: number; partly: Set<string> }>();
  private readonly byEvent: boolean;
  /** About the bytes the tallies and sets above hold (`TALLY_BYTES`, `MATCH_BYTES`). */
  private heldBytes = 0;

  constructor(
    private readonly index: RunIndex,
    private readonly evicted: EvictedEvents,
    private readonly filter: RunFilter,
    private readonly after: RunPosition | null,
    private readonly limit: number,
    private readonly minAtMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly maxHeldBytes: number,
  ) {
    this.byEvent = filter.requestId !== undefined || filter.traceId !== undefined;
  }

  /**
   * Counts what a new tally or match holds. A listing by id refuses past its bound — its page
   * could not be told without every run it finds; a listing by subject and time checks it
   * before each part it reads (`page`).
   */
  private hold(bytes: number): void {
    this.heldBytes += bytes;
    if (this.heldBytes > this.maxHeldBytes && (this.byEvent || this.filter.runId !== undefined)) {
      throw new ProblemError(
        'CC_TRACE_UNAVAILABLE',
        `More runs hold this ${this.filter.requestId !== undefined ? 'request id' : 'trace id'} than one listing keeps in memory (${this.matched.size} found so far); list them by time instead (from, to).`,
      );
    }
  }

  async page(budget: number): Promise<RunPage> {
    if (this.byEvent || this.filter.runId !== undefined) {
      // A run, request or trace is looked up by its id: in memory, and in the few parts whose id filter may hold it.
      if (this.byEvent) await this.findAsked();
      else this.match(this.filter.runId!);
      return this.asked();
    }
    const sources = evictedParts(this.index, this.minAtMs)
      .filter((part) => this.mayAnswer(part))
      .sort((a, b) => b.newestAtMs - a.newestAtMs);
    let read = 0;
    let counted = 0;
    // Newest part first, and no further than the page needs: runs newer than every part not read yet are decided.
    for (const next of [...sources, null]) {
      const horizon = next === null ? Number.NEGATIVE_INFINITY : next.newestAtMs;
      const runs = await this.decided(horizon);
      if (runs.length > this.limit) return runPage(await this.summaries(runs.slice(0, this.limit)), true);
      if (next === null) return runPage(await this.summaries(runs), false);
      // A part this page's cursor runs through was read by the page before: it does not count.
      const straddles = this.after !== null && next.newestAtMs > this.after.atMs;
      const stop: RunPosition = { atMs: next.newestAtMs + 1, runId: '-' };
      const bounded = read >= budget || this.heldBytes >= this.maxHeldBytes;
      if (!straddles && counted > 0 && bounded && (this.after === null || newerFirst(this.after, stop) < 0)) return runPage(await this.summaries(runs), false, stop);
      if (!straddles) {
        counted++;
        read += next.bytes;
      }
      await this.scan(next);
    }
    throw new Error('unreachable: the last pass decides the page');
  }

  /**
   * The runs asked for by id (matched): the parts that may hold any of them read newest first,
   * until the `limit` + 1 newest are decided; then those completed from the older parts that
   * may hold them (every event counts). A part read while finding the runs is not read again
   * for the runs it was read in full for (`covers`): each part is read once for all of them.
   */
  private async asked(): Promise<RunPage> {
    const sources = evictedParts(this.index, this.minAtMs)
      .filter((part) => this.mayHoldAsked(part.facets, this.matched))
      .sort((a, b) => b.newestAtMs - a.newestAtMs);
    let unread = 0;
    for (; ; unread++) {
      const next = sources[unread];
      const top = this.top(next === undefined ? Number.NEGATIVE_INFINITY : next.newestAtMs);
      if (next === undefined || top.length > this.limit) break;
      await this.readFor(next, this.matched);
    }
    const top = this.top(Number.NEGATIVE_INFINITY);
    const shown = new Set(top.slice(0, this.limit).map((candidate) => candidate.position.runId));
    // Older parts hold only earlier events of a decided run: its count, never its latest.
    for (const part of sources.slice(unread)) await this.readFor(part, shown);
    const runs = this.top(Number.NEGATIVE_INFINITY);
    return runPage(await this.summaries(runs.slice(0, this.limit)), runs.length > this.limit);
  }

  /**
   * The page's runs as listed: each with its latest event's whole summary — read again, one
   * line each, for a latest read as a head — and its count. A line gone meanwhile drops its run.
   */
  private async summaries(candidates: readonly Candidate[]): Promise<RunSummary[]> {
    const runs: RunSummary[] = [];
    for (const { latest, events } of candidates) {
      const summary = isWhole(latest) ? latest.summary : await this.evicted.summary(latest);
      if (summary !== null) runs.push({ ...summary, events });
    }
    return runs;
  }

  /** Folds an event into tallies, counting what a new one holds. */
  private tally(tallies: Map<string, RunTally>, event: ListedEvent): void {
    const runId = event.summary.runId;
    if (event.atMs >= this.minAtMs && !tallies.has(runId)) this.hold(TALLY_BYTES + 2 * runId.length);
    tally(tallies, event, this.minAtMs);
  }

  /** A run's tally of a part replaced or dropped: what it held is free. */
  private release(runId: string): void {
    this.heldBytes -= TALLY_BYTES + 2 * runId.length;
  }

  private match(runId: string): void {
    if (this.matched.has(runId)) return;
    this.hold(MATCH_BYTES + 2 * runId.length);
    this.foundAt.set(runId, this.matched.size);
    this.matched.add(runId);
  }

  /** Whether every event of the run in the part was tallied when the part was read. */
  private covers(part: EvictedPart, runId: string): boolean {
    const read = this.coverage.get(part.entry.name);
    const at = this.foundAt.get(runId);
    if (read === undefined || at === undefined) return false;
    return at < read.from || (at < read.to && !read.partly.has(runId));
  }

  /** Whether a part may hold an event of one of the runs (by its caller, when the listing is one caller's). */
  private mayHoldAsked(facets: FileFacets, runIds: Iterable<string>): boolean {
    const visibleTo = this.filter.visibleTo;
    if (facets.ids === null) return true;
    for (const runId of runIds) if (mayHoldId(facets, visibleTo === undefined || visibleTo === null ? idKey('run', runId) : callerRunKey(visibleTo, runId))) return true;
    return false;
  }

  /**
   * Reads a part for the runs' visible events, unless it was read in full for each of them
   * that it may hold: what it holds of each replaces what was tallied of it there.
   */
  private async readFor(part: EvictedPart, runIds: ReadonlySet<string>): Promise<void> {
    const needed = [...runIds].filter((runId) => !this.covers(part, runId));
    if (needed.length === 0 || !this.mayHoldAsked(part.facets, needed)) return;
    const wanted = new Set(needed);
    await this.readPart(part, wanted, namingRuns(wanted), () => {});
    // Read for every run found that it did not cover: it covers them all now.
    if (runIds === this.matched) this.coverage.set(part.entry.name, { from: this.matched.size, to: this.matched.size, partly: new Set() });
  }

  /**
   * Reads a part, tallying the events of `runIds` there (a live set: a run found while
   * reading counts from then on) into `extra`, replacing what was tallied of them there.
   * `found` sees each event the filter keeps.
   */
  private async readPart(part: EvictedPart, runIds: ReadonlySet<string>, keep: EventFilter, found: (location: ListedEvent) => void): Promise<void> {
    const name = part.entry.name;
    const tallies = new Map<string, RunTally>();
    await this.evicted.read(
      part,
      (location) => {
        found(location);
        if (runIds.has(location.summary.runId) && visible(location.summary, this.filter.visibleTo)) this.tally(tallies, location);
      },
      keep,
      this.signal,
    );
    for (const runId of runIds) {
      let parts = this.extra.get(runId);
      const counted = tallies.get(runId);
      if (counted) {
        if (!parts) this.extra.set(runId, (parts = new Map()));
        if (parts.has(name)) this.release(runId);
        parts.set(name, counted);
      } else if (parts?.delete(name)) this.release(runId);
    }
  }

  /**
   * The runs holding an event of the request or trace asked for: in memory, and in the
   * evicted parts whose id filter may hold it (only lines holding it, or naming a run found,
   * parsed). Those lines are tallied as they are read, so a part covers every run found before
   * or while it was read — but a run whose earlier lines there were skipped (`partly`).
   */
  private async findAsked(): Promise<void> {
    for (const [runId, locations] of this.index.runs) {
      if (locations.some((location) => this.holdsAsked(location))) this.match(runId);
    }
    const { requestId, traceId } = this.filter;
    const key = requestId !== undefined ? idKey('request', requestId) : idKey('trace', traceId!);
    const holding = holdingAsked(this.filter);
    const naming = namingRuns(this.matched);
    const parts = evictedParts(this.index, this.minAtMs)
      .filter((part) => mayHoldId(part.facets, key))
      .sort((a, b) => b.newestAtMs - a.newestAtMs);
    for (const part of parts) {
      const read = { from: this.matched.size, to: this.matched.size, partly: new Set<string>() };
      // Runs of lines skipped so far; null once a line's run could not be told without parsing it.
      let skipped: Set<string> | null = new Set<string>();
      const keep: EventFilter = {
        line: (line) => {
          if (holding.line(line) || naming.line(line)) return true;
          const runId = ownRunId(line);
          if (runId === null) skipped = null;
          else skipped?.add(runId);
          return false;
        },
        head: (summary) => {
          if (holding.head(summary) || naming.head(summary)) return true;
          skipped?.add(summary.runId);
          return false;
        },
      };
      await this.readPart(part, this.matched, keep, (location) => {
        const runId = location.summary.runId;
        if (!this.holdsAsked(location) || this.matched.has(runId)) return;
        this.match(runId);
        if (skipped === null || skipped.has(runId)) read.partly.add(runId);
      });
      read.to = this.matched.size;
      this.coverage.set(part.entry.name, read);
    }
  }

  /** Whether an evicted part may hold the latest event of a run the filters match. */
  private mayAnswer({ facets, newestAtMs }: EvictedPart): boolean {
    const { filter } = this;
    if (filter.persona !== undefined && !facets.subjects.has(`persona:${filter.persona}`)) return false;
    if (filter.worker !== undefined && !facets.subjects.has(`worker:${filter.worker}`)) return false;
    if (filter.status !== undefined && !facets.statuses.has(filter.status)) return false;
    if (filter.outcome !== undefined && !facets.outcomes.has(filter.outcome)) return false;
    if (filter.visibleTo !== undefined && filter.visibleTo !== null && !facets.callers.has(filter.visibleTo)) return false;
    if (filter.fromMs !== undefined && newestAtMs < filter.fromMs) return false;
    if (filter.toMs !== undefined && facets.oldestAtMs >= filter.toMs) return false;
    // Only an event at or before the cursor can be the latest of a run on a later page.
    if (this.after !== null && facets.oldestAtMs > this.after.atMs) return false;
    return true;
  }

  /** An event of the request or trace asked for, that the caller may see. */
  private holdsAsked(location: ListedEvent): boolean {
    if (location.atMs < this.minAtMs || !visible(location.summary, this.filter.visibleTo)) return false;
    if (this.filter.requestId !== undefined && location.summary.requestId !== this.filter.requestId) return false;
    if (this.filter.traceId !== undefined && traceIdOfEvent(location.summary) !== this.filter.traceId) return false;
    return true;
  }

  private async scan(part: EvictedPart): Promise<void> {
    this.scanned.add(part.entry.name);
    await this.evicted.read(
      part,
      (location) => {
        if (visible(location.summary, this.filter.visibleTo)) this.tally(this.tallies, location);
      },
      undefined,
      this.signal,
    );
  }

  /**
   * The runs that answer, newest first, whose latest event is after `horizon` (no part not
   * yet read can hold a later one), each completed from every part that may hold it: at
   * most `limit + 1` of them.
   */
  private async decided(horizon: number): Promise<Candidate[]> {
    for (;;) {
      const top = this.top(horizon);
      const fresh = new Set(top.map((candidate) => candidate.position.runId).filter((runId) => !this.confirmed.has(runId)));
      // Completing a run can only find later events of it, or more of them: then pick again.
      if (fresh.size === 0 || !(await this.confirm(fresh))) return top;
    }
  }

  /** The `limit + 1` newest runs that answer, from what is known of them now. */
  private top(horizon: number): Candidate[] {
    const size = this.limit + 1;
    const kept: Candidate[] = [];
    const consider = (runId: string, memory: readonly EventLocation[]) => {
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
    if (this.byEvent || this.filter.runId !== undefined) for (const runId of this.matched) consider(runId, this.index.runs.get(runId) ?? []);
    else {
      for (const [runId, memory] of this.index.runs) consider(runId, memory);
      for (const runId of this.tallies.keys()) if (!this.index.runs.has(runId)) consider(runId, []);
    }
    return kept;
  }

  /** What is known of a run: its latest visible event within retention and how many it has, in memory, in the parts read and in those read for it. */
  private known(runId: string, memory: readonly EventLocation[]): { latest: ListedEvent; events: number } | null {
    const { minAtMs, filter } = this;
    let latest: ListedEvent | null = null;
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

  /**
   * Reads the runs' events in the evicted parts not read in full that may hold one of them
   * (their id filters say maybe): each part once for all of them. Whether it found any.
   */
  private async confirm(runIds: ReadonlySet<string>): Promise<boolean> {
    for (const runId of runIds) {
      this.confirmed.add(runId);
      if (!this.extra.has(runId)) this.extra.set(runId, new Map());
    }
    const keep = namingRuns(runIds);
    let found = false;
    for (const part of evictedParts(this.index, this.minAtMs)) {
      if (this.scanned.has(part.entry.name) || !this.mayHoldAsked(part.facets, runIds)) continue;
      const tallies = new Map<string, RunTally>();
      await this.evicted.read(
        part,
        (location) => {
          if (runIds.has(location.summary.runId) && visible(location.summary, this.filter.visibleTo)) this.tally(tallies, location);
        },
        keep,
        this.signal,
      );
      for (const [runId, part_] of tallies) {
        const parts = this.extra.get(runId)!;
        if (parts.has(part.entry.name)) this.release(runId);
        parts.set(part.entry.name, part_);
        found = true;
      }
    }
    return found;
  }
}
