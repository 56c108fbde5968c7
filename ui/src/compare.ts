/**
 * The comparison of two runs of one persona or worker, as the compare page draws it: which
 * blocks changed, which cache boundaries moved, and why — a brain file changed, the minute
 * changed, or the request differed. Pure (no DOM), so it is unit tested; the reasons are read
 * from what the two traces recorded, never guessed from text.
 */
import { layoutEvent, type BoundaryView, type RunTrace, type TraceBlock, type TraceEvent } from './model.js';
import { diffLines, type DiffLine, type TextDiff } from './text-diff.js';

export interface ComparedEvent {
  runId: string;
  event: TraceEvent;
  /** Which of the run's events this is (0-based), and how many the run has. */
  index: number;
  count: number;
}

/** The event a comparison reads: the run's latest one that delivered blocks (a 200 or a 304); null when it has none. */
export function comparableEvent(trace: RunTrace): ComparedEvent | null {
  for (let index = trace.events.length - 1; index >= 0; index--) {
    const event = trace.events[index]!;
    if (event.blocks?.length) return { runId: trace.runId, event, index, count: trace.events.length };
  }
  return null;
}

/**
 * A run's latest event that delivered blocks, read page by page through `page` (100 events
 * at a time, only that event kept, whatever the run holds), with its place among all the
 * run's events; null when it has none. `page` answers null for an unknown run.
 */
export async function latestComparable(runId: string, page: (cursor: string | null) => Promise<RunTrace | null>): Promise<ComparedEvent | null> {
  let found: ComparedEvent | null = null;
  let seen = 0;
  let cursor: string | null = null;
  do {
    const trace: RunTrace | null = await page(cursor);
    if (trace === null) return null;
    const here = comparableEvent(trace);
    if (here) found = { ...here, runId, index: seen + here.index };
    seen += trace.events.length;
    cursor = trace.nextCursor;
  } while (cursor !== null);
  return found && { ...found, count: seen };
}

export type ReasonKind = 'sources' | 'minute' | 'request' | 'unexplained';

/** Why something differs: a kind the page can mark, and what exactly (paths, fields, minutes). */
export interface Reason {
  kind: ReasonKind;
  details: string[];
}

export const REASON_TEXT: Record<ReasonKind, string> = {
  sources: 'sources changed',
  minute: 'minute changed',
  request: 'request differed',
  unexplained: 'built-in text differs (another version or configuration of the service)',
};

export type Change = 'unchanged' | 'changed' | 'added' | 'removed';

export interface BlockChange {
  kind: string;
  before: { index: number; block: TraceBlock } | null;
  after: { index: number; block: TraceBlock } | null;
  change: Change;
  /** Empty when unchanged. */
  reasons: Reason[];
}

export interface BoundaryChange {
  class: string;
  before: BoundaryView | null;
  after: BoundaryView | null;
  change: 'held' | 'moved' | 'added' | 'removed';
  /** For a boundary that moved: the first changed block of its prefix, whose reasons move it; null when none is recorded. */
  cause: BlockChange | null;
}

export interface SourceChange {
  path: string;
  before: string | null;
  after: string | null;
  change: Exclude<Change, 'unchanged'>;
  /** For a directory listing: the files added and removed, when both runs recorded names. */
  names?: string[];
}

export interface RequestChange {
  field: string;
  before: string;
  after: string;
}

export interface RealtimeChange {
  voice: { before: string | null; after: string | null };
  toolsChanged: boolean;
  added: string[];
  removed: string[];
}

export interface RunComparison {
  /** The older of the two runs' events first. */
  before: ComparedEvent;
  after: ComparedEvent;
  /** What each run's cache plan counted tokens with (`o200k_base`, `estimate`), for the boundaries' token figures. */
  tokenizer: { before: string | null; after: string | null };
  /** Blocks built from the request's own text (`request:task`, ...) that differ: the text is not a recorded field, so only the block tells. */
  requestText: string[];
  /** The runs compile different subjects: blocks are still paired by kind, but little will match. */
  sameSubject: boolean;
  blocks: BlockChange[];
  boundaries: BoundaryChange[];
  routeKey: { before: string | null; after: string | null };
  sources: SourceChange[];
  request: RequestChange[];
  minute: { before: string; after: string };
  realtime: RealtimeChange | null;
}

/** Recorded options that do not shape the prompt (or that the minute stands for). */
const REQUEST_NOISE = new Set(['format', 'conditional', 'now', 'nowUsed']);

/** `2026-11-30T17:30` (UTC): the minute a compile was made for — the instant it used (`nowUsed`; `now` or the trace time for events recorded before it). */
export function compileMinute(event: TraceEvent): string {
  for (const value of [event.request['nowUsed'], event.request['now'], event.at]) {
    if (typeof value !== 'string') continue;
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) return new Date(ms).toISOString().slice(0, 16);
  }
  return event.at.slice(0, 16);
}

/** `17:30 → 17:31 UTC`, with the dates when they differ. */
export function minuteChange(minute: { before: string; after: string }): string {
  const [dayBefore, timeBefore] = minute.before.split('T');
  const [dayAfter, timeAfter] = minute.after.split('T');
  return dayBefore === dayAfter ? `${timeBefore} → ${timeAfter} UTC` : `${dayBefore} ${timeBefore} → ${dayAfter} ${timeAfter} UTC`;
}

/** A block's brain path (a memory note's file without its `#entry`), or null for `builtin:*` and `request:*`. */
export function brainPath(source: string): string | null {
  if (/^[a-z]+:/.test(source)) return null;
  const hash = source.indexOf('#');
  return hash >= 0 ? source.slice(0, hash) : source;
}

const shown = (value: unknown): string => (value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value));

function requestChanges(before: TraceEvent, after: TraceEvent): RequestChange[] {
  const fields = [...new Set([...Object.keys(before.request), ...Object.keys(after.request)])].filter((field) => !REQUEST_NOISE.has(field));
  return fields
    .filter((field) => JSON.stringify(before.request[field]) !== JSON.stringify(after.request[field]))
    .map((field) => ({ field, before: shown(before.request[field]), after: shown(after.request[field]) }));
}

function sourceChanges(before: TraceEvent, after: TraceEvent): SourceChange[] {
  const changes: SourceChange[] = [];
  const files = (event: TraceEvent) => new Map((event.sources ?? []).map((source) => [source.path, source.sha256]));
  const listings = (event: TraceEvent) => new Map((event.listings ?? []).map((listing) => [`${listing.path}/`, listing]));
  const [filesBefore, filesAfter] = [files(before), files(after)];
  for (const path of new Set([...filesBefore.keys(), ...filesAfter.keys()])) {
    const [then, now] = [filesBefore.get(path) ?? null, filesAfter.get(path) ?? null];
    if (then === now) continue;
    changes.push({ path, before: then, after: now, change: then === null ? 'added' : now === null ? 'removed' : 'changed' });
  }
  const [listedBefore, listedAfter] = [listings(before), listings(after)];
  for (const path of new Set([...listedBefore.keys(), ...listedAfter.keys()])) {
    const [then, now] = [listedBefore.get(path), listedAfter.get(path)];
    if (then?.sha256 === now?.sha256) continue;
    const change: SourceChange = { path, before: then?.sha256 ?? null, after: now?.sha256 ?? null, change: !then ? 'added' : !now ? 'removed' : 'changed' };
    if (then?.names && now?.names) {
      const [old, current] = [new Set(then.names), new Set(now.names)];
      change.names = [...now.names.filter((name) => !old.has(name)).map((name) => `+${name}`), ...then.names.filter((name) => !current.has(name)).map((name) => `−${name}`)];
    }
    changes.push(change);
  }
  return changes.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * Pairs the blocks of two events: first the same kind from the same source, in order (a
 * memory note, a topic file), then what is left of a kind by position.
 */
function pairBlocks(before: TraceBlock[], after: TraceBlock[]): Array<[number | null, number | null]> {
  const pairs: Array<[number | null, number | null]> = [];
  const taken = new Set<number>();
  const afterFor = new Map<number, number>();
  const key = (block: TraceBlock) => `${block.kind}\u0000${block.source}`;
  before.forEach((block, i) => {
    const j = after.findIndex((candidate, index) => !taken.has(index) && key(candidate) === key(block));
    if (j >= 0) {
      taken.add(j);
      afterFor.set(i, j);
    }
  });
  before.forEach((block, i) => {
    if (afterFor.has(i)) return;
    const j = after.findIndex((candidate, index) => !taken.has(index) && candidate.kind === block.kind);
    if (j >= 0) {
      taken.add(j);
      afterFor.set(i, j);
    }
  });
  // In delivered order of the newer event; a block only the older one had goes where it stood.
  const beforeAt = new Map([...afterFor].map(([i, j]) => [j, i]));
  let nextBefore = 0;
  const flushRemoved = (upTo: number) => {
    for (; nextBefore < upTo; nextBefore++) if (!afterFor.has(nextBefore)) pairs.push([nextBefore, null]);
  };
  after.forEach((_, j) => {
    const i = beforeAt.get(j);
    if (i !== undefined) {
      flushRemoved(i);
      nextBefore = Math.max(nextBefore, i + 1);
    }
    pairs.push([i ?? null, j]);
  });
  flushRemoved(before.length);
  return pairs;
}

interface ReasonContext {
  sources: SourceChange[];
  request: RequestChange[];
  minuteChanged: boolean;
  minute: { before: string; after: string };
  /** Brain paths that are a block's own source, in either event: their change explains that block, not derived ones. */
  ownPaths: Set<string>;
}

function reasonsFor(block: TraceBlock, other: TraceBlock | null, context: ReasonContext): Reason[] {
  const reasons: Reason[] = [];
  const request = context.request.map((change) => change.field);
  const path = brainPath(block.source);
  if (block.kind === 'clock' && context.minuteChanged) reasons.push({ kind: 'minute', details: [minuteChange(context.minute)] });
  if (path !== null) {
    const paths = [path, ...(other ? [brainPath(other.source)] : [])].filter((value): value is string => value !== null);
    // Its file, or the listed directory it was found in (`workers/scribe/memory/`).
    const changed = context.sources.filter(
      (source) => paths.includes(source.path) || (source.path.endsWith('/') && paths.some((candidate) => candidate.startsWith(source.path))),
    );
    if (changed.length > 0) reasons.push({ kind: 'sources', details: changed.map((source) => source.path) });
  } else if (block.source.startsWith('request:')) {
    reasons.push({ kind: 'request', details: request.length > 0 ? request : [block.source.slice('request:'.length)] });
    return reasons;
  } else if (block.kind !== 'clock') {
    // A block derived from the brain (live context, tools): any read it does not own.
    const derived = context.sources.filter((source) => !context.ownPaths.has(source.path));
    if (derived.length > 0) reasons.push({ kind: 'sources', details: derived.map((source) => source.path) });
  }
  if (request.length > 0 && (block.kind === 'clock' || reasons.length === 0 || other === null || other.source !== block.source)) {
    reasons.push({ kind: 'request', details: request });
  }
  if (reasons.length === 0) reasons.push({ kind: 'unexplained', details: [] });
  return reasons;
}

function boundaryPosition(blocks: BlockChange[], boundary: BoundaryView, side: 'before' | 'after'): number {
  if (boundary.blockIndex === null) return -1;
  return blocks.findIndex((change) => change[side]?.index === boundary.blockIndex);
}

/**
 * Compares two runs' comparable events, the older first: blocks paired and marked, each
 * change with its reasons; boundaries paired by cache class, a moved one (its prefix sha256
 * differs) with the first changed block at or before it as its cause.
 */
export function compareRuns(a: ComparedEvent, b: ComparedEvent): RunComparison {
  const [before, after] = Date.parse(a.event.at) <= Date.parse(b.event.at) ? [a, b] : [b, a];
  const blocksBefore = before.event.blocks ?? [];
  const blocksAfter = after.event.blocks ?? [];
  const minute = { before: compileMinute(before.event), after: compileMinute(after.event) };
  const sources = sourceChanges(before.event, after.event);
  const context: ReasonContext = {
    sources,
    request: requestChanges(before.event, after.event),
    minuteChanged: minute.before !== minute.after,
    minute,
    ownPaths: new Set([...blocksBefore, ...blocksAfter].map((block) => brainPath(block.source)).filter((path): path is string => path !== null)),
  };

  const blocks: BlockChange[] = pairBlocks(blocksBefore, blocksAfter).map(([i, j]) => {
    const then = i === null ? null : { index: i, block: blocksBefore[i]! };
    const now = j === null ? null : { index: j, block: blocksAfter[j]! };
    const change: Change = !then ? 'added' : !now ? 'removed' : then.block.sha256 === now.block.sha256 ? 'unchanged' : 'changed';
    const subject = (now ?? then)!.block;
    return {
      kind: subject.kind,
      before: then,
      after: now,
      change,
      reasons: change === 'unchanged' ? [] : reasonsFor(subject, now && then ? then.block : null, context),
    };
  });

  const boundariesBefore = layoutEvent(before.event).boundaries;
  const boundariesAfter = layoutEvent(after.event).boundaries;
  const classes = [...new Set([...boundariesAfter, ...boundariesBefore].map((boundary) => boundary.class))];
  const boundaries: BoundaryChange[] = classes.map((name) => {
    const then = boundariesBefore.find((boundary) => boundary.class === name) ?? null;
    const now = boundariesAfter.find((boundary) => boundary.class === name) ?? null;
    const change = !then ? 'added' : !now ? 'removed' : then.prefixSha256 === now.prefixSha256 ? 'held' : 'moved';
    let cause: BlockChange | null = null;
    if (change === 'moved') {
      const end = Math.max(boundaryPosition(blocks, now!, 'after'), boundaryPosition(blocks, then!, 'before'));
      cause = blocks.slice(0, end + 1).find((block) => block.change !== 'unchanged') ?? null;
    }
    return { class: name, before: then, after: now, change, cause };
  });

  const routeKey = (event: TraceEvent) => (typeof event.cache?.['routeKey'] === 'string' ? (event.cache['routeKey'] as string) : null);
  const tokenizer = (event: TraceEvent) => (typeof event.cache?.['tokenizer'] === 'string' ? (event.cache['tokenizer'] as string) : null);
  const requestText = [
    ...new Set(
      blocks
        .filter((block) => block.change !== 'unchanged' && (block.after ?? block.before)!.block.source.startsWith('request:'))
        .map((block) => (block.after ?? block.before)!.block.source.slice('request:'.length)),
    ),
  ];
  return {
    before,
    after,
    tokenizer: { before: tokenizer(before.event), after: tokenizer(after.event) },
    requestText,
    sameSubject: before.event.subject.kind === after.event.subject.kind && before.event.subject.id === after.event.subject.id,
    blocks,
    boundaries,
    routeKey: { before: routeKey(before.event), after: routeKey(after.event) },
    sources,
    request: context.request,
    minute,
    realtime: realtimeChange(before.event, after.event),
  };
}

function realtimeChange(before: TraceEvent, after: TraceEvent): RealtimeChange | null {
  const [then, now] = [before.realtime, after.realtime];
  if (!then && !now) return null;
  const [old, current] = [new Set(then?.toolNames ?? []), new Set(now?.toolNames ?? [])];
  return {
    voice: { before: then?.voice ?? null, after: now?.voice ?? null },
    toolsChanged: then?.toolsSha256 !== now?.toolsSha256,
    added: [...current].filter((name) => !old.has(name)),
    removed: [...old].filter((name) => !current.has(name)),
  };
}

/** A changed block's text against the other run's, or why it is not shown. */
export type BlockTextDiff = { kind: 'diff'; diff: TextDiff } | { kind: 'not-shown'; reason: string };

/**
 * The text diff of every block that is not unchanged (by its index in `comparison.blocks`):
 * each side's delivered text, shown only once its sha256 (`sha256`, the caller's: node's in
 * the CLI, WebCrypto in the viewer) equals the block's recorded digest; an added or removed
 * block as all its lines added or removed.
 */
export async function blockTextDiffs(comparison: RunComparison, sha256: (text: string) => string | Promise<string>): Promise<Map<number, BlockTextDiff>> {
  const out = new Map<number, BlockTextDiff>();
  const layouts = { before: layoutEvent(comparison.before.event), after: layoutEvent(comparison.after.event) };
  const text = async (side: 'before' | 'after', change: BlockChange): Promise<string | { reason: string }> => {
    const place = change[side]!;
    const found = layouts[side].blocks[place.index]?.text ?? null;
    if (found === null) return { reason: `the ${side} run's trace holds no text for this block` };
    if ((await sha256(found)) !== place.block.sha256) return { reason: `the ${side} run's text does not match its recorded sha256` };
    return found;
  };
  for (const [index, change] of comparison.blocks.entries()) {
    if (change.change === 'unchanged') continue;
    const before = change.before ? await text('before', change) : '';
    const after = change.after ? await text('after', change) : '';
    if (typeof before !== 'string') out.set(index, { kind: 'not-shown', reason: before.reason });
    else if (typeof after !== 'string') out.set(index, { kind: 'not-shown', reason: after.reason });
    else if (change.change === 'changed') out.set(index, { kind: 'diff', diff: diffLines(before, after) });
    else {
      // The whole block came or went: every line of it, without a search.
      const op = change.change === 'added' ? 'added' : 'removed';
      const lines = (op === 'added' ? after : before).split('\n').map((line): DiffLine => ({ op, text: line }));
      out.set(index, { kind: 'diff', diff: { kind: 'lines', lines, added: op === 'added' ? lines.length : 0, removed: op === 'removed' ? lines.length : 0 } });
    }
  }
  return out;
}

/** One line for a run's summary: how it differs from the run before it, and the first reason. */
export function comparisonLine(comparison: RunComparison): string {
  const changed = comparison.blocks.filter((block) => block.change !== 'unchanged');
  const moved = comparison.boundaries.filter((boundary) => boundary.change !== 'held');
  if (changed.length === 0 && moved.length === 0) return 'the same prompt: every block and cache boundary held';
  const first = changed[0];
  const why = first ? `: ${first.kind} ${first.change} (${first.reasons.map((reason) => `${REASON_TEXT[reason.kind]}${reason.details.length > 0 ? ` ${reason.details.join(', ')}` : ''}`).join('; ')})` : '';
  const routeKey = comparison.routeKey.before === comparison.routeKey.after ? 'the route key held' : 'the route key changed';
  return `${changed.length} of ${comparison.blocks.length} blocks differ${why}; ${moved.length} of ${comparison.boundaries.length} cache boundaries moved; ${routeKey}`;
}
