import { sha256Hex } from '../../core/digest.js';
import { hudProblems } from '../../core/hud.js';
import { BoundedMemo } from '../../core/memo.js';
import type { ChainStatus } from './chain.js';
import type { TraceBlock, TraceEventInput, TraceEventView, TraceRealtimeView, TraceSegmentView, TraceSource } from './store.js';

/**
 * An event as both backends store it: its own small fields inline, and everything that
 * repeats from call to call — segment texts, block summaries, source records, the cache
 * plan, a persona's tool definitions, the HUD — as references to records stored once by
 * sha256 (per file, or per day in the database). `R` is how a backend refers to a record:
 * `[sha256, offset, length]` in a file, the sha256 alone in the database.
 */
export interface StoredEvent<R> extends Omit<TraceEventInput, 'segments' | 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud'> {
  /** Characters delivered (system + input prompt). */
  chars: number;
  segments?: { system: R[]; input: R[] };
  blocks?: R[];
  sources?: R[];
  cache?: R;
  /** The voice and the tools' names inline, their definitions by reference. */
  realtime?: { voice: string; toolNames: string[]; tools: R };
  hud?: R;
}

/** How an event's repeated parts become references, each given as its JSON text. */
export interface Refs {
  blob(text: string): string;
  data(entry: { json: string; sha: string }): string;
  block(block: TraceBlock): string;
  source(source: TraceSource): string;
  /** A structure as a data record; one handed over again as the very same object is serialised and hashed once. */
  json(value: object): string;
}

const DIGEST_MEMO_SIZE = 512;
/** Characters of segment text the digest memo may hold (its keys are the texts themselves). */
const DIGEST_MEMO_CHARS = 4_000_000;

/**
 * The sha256 of segment texts, block summaries and source records as an append needs them,
 * found without hashing or serialising the same values again: stable segments arrive as
 * the same strings on every call, block summaries and source records as new objects with
 * the same fields.
 */
export class RecordDigests {
  private readonly digests = new BoundedMemo<string, string>(DIGEST_MEMO_SIZE, DIGEST_MEMO_CHARS);
  readonly block = new RecordMemo<TraceBlock>(
    (block) => block.sha256,
    (a, b) =>
      a.kind === b.kind && a.authority === b.authority && a.cacheClass === b.cacheClass && a.source === b.source && a.chars === b.chars && a.approxTokens === b.approxTokens,
    ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 }) => ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 }),
  );
  readonly source = new RecordMemo<TraceSource>(
    (source) => source.sha256,
    (a, b) =>
      a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs && a.truncated === b.truncated && a.maxBytes === b.maxBytes && a.keep === b.keep && a.within === b.within,
    ({ path, size, mtimeMs, sha256, truncated, maxBytes, keep, within }) => {
      const picked: TraceSource = { path, size, mtimeMs, sha256 };
      if (truncated !== undefined) picked.truncated = truncated;
      if (maxBytes !== undefined) picked.maxBytes = maxBytes;
      if (keep !== undefined) picked.keep = keep;
      if (within !== undefined) picked.within = within;
      return picked;
    },
  );

  private readonly objects = new WeakMap<object, { json: string; sha: string }>();

  text(text: string): string {
    return this.digests.get(text) ?? this.digests.set(text, sha256Hex(text), text.length);
  }

  /**
   * The JSON text and sha256 of a structure, serialised once per object (never changed after
   * it is handed over: a shared result's cache plan and HUD, a persona's tools). Hashed
   * without the text memo: a new object is mostly new JSON (a new minute's cache plan), and
   * a memo entry per event would push out the segment texts it is there for.
   */
  object(value: object): { json: string; sha: string } {
    let entry = this.objects.get(value);
    if (!entry) {
      const json = JSON.stringify(value);
      this.objects.set(value, (entry = { json, sha: sha256Hex(json) }));
    }
    return entry;
  }

}

/**
 * What events that deliver one shared compiled result have in common, written once per
 * scope of references (a trace file): its result fields and its references, as JSON.
 * Found by the identity of the event's `segments` (a shared result hands out the same
 * object), and used only while its other parts are the very same objects too.
 */
export interface SharedRecord {
  readonly blocks: unknown;
  readonly cache: unknown;
  readonly realtime: unknown;
  readonly hud: unknown;
  readonly budget: unknown;
  readonly tokens: unknown;
  readonly redactions: unknown;
  readonly promptSha256: unknown;
  readonly inputSha256: unknown;
  /** `,"promptSha256":…,"inputSha256":…,"budget":…,"tokens":…,"redactions":…` as JSON.stringify writes them (absent ones left out). */
  readonly fields: string;
  readonly chars: number;
  /** `,"blocks":[…],"cache":…,"realtime":…,"hud":…` and `,"segments":{…}` references. */
  readonly before: string;
  readonly segmentRefs: string;
}

/**
 * The references of the last result written whose blocks began with a given block: the
 * next minute of a persona hands out the very same blocks and segment texts but the
 * clock's (and often the same tools and HUD), so its references are taken from here item
 * by item, by identity, and only what is new is looked up.
 */
interface ResultLine {
  readonly blocks: readonly object[];
  readonly blockRefs: readonly string[];
  readonly system: readonly string[];
  readonly systemRefs: readonly string[];
  readonly input: readonly string[];
  readonly inputRefs: readonly string[];
  /** The voice and tools it was written with: a new result wraps the persona's same tools object in a new `realtime`. */
  readonly voice: string | undefined;
  readonly tools: unknown;
  /** `,"realtime":{…}`. */
  readonly realtimeJson: string;
  readonly hud: unknown;
  /** `,"hud":…`. */
  readonly hudJson: string;
}

/** What one scope of references (a trace file) remembers of the events written to it; valid for that scope alone. */
export class SharedRecords {
  /** Shared records by the `segments` object of the events they describe, from a result's second event on. */
  readonly results = new WeakMap<object, SharedRecord>();
  /**
   * Results written once. A record kept from the first event on would cost more than it
   * saves: it holds the result's parts, which the garbage collector then keeps from the
   * young generation (a new minute on every request: ≈ +40 % per event, measured).
   */
  readonly seen = new WeakSet<object>();
  /** `,"sources":[…]` by the `sources` array (a replayed brain session hands out the same one). */
  readonly sources = new WeakMap<object, string>();
  /** The references of the last result written, by its first block. */
  readonly lines = new WeakMap<object, ResultLine>();
}

/** `,"sources":[…]` for an event, its references joined once per array when `shared` is given. */
function sourceReferences(sources: TraceEventInput['sources'], refs: Refs, shared: SharedRecords | undefined): string {
  if (!sources) return '';
  const known = shared?.sources.get(sources);
  if (known !== undefined) return known;
  const json = `,"sources":[${sources.map(refs.source).join(',')}]`;
  shared?.sources.set(sources, json);
  return json;
}

function realtimeReferences(realtime: NonNullable<TraceEventInput['realtime']>, refs: Refs): string {
  const names = JSON.stringify(realtime.tools.map((tool) => tool.name));
  return `,"realtime":{"voice":${JSON.stringify(realtime.voice)},"toolNames":${names},"tools":${refs.json(realtime.tools)}}`;
}

/**
 * The event as stored, as JSON text (an object), and its own fields for an index. Segment
 * texts, block summaries (only their summary fields: a compiled block passed whole would
 * store its content a second time), source records and the cache plan become references;
 * the references are spliced in as ready JSON, so only the event's own small fields are
 * serialised per call. Given `shared` (valid for `refs`' scope alone), the fields and
 * references of a shared result are serialised once and spliced into every later event
 * that delivers it, and a new result's references are taken, item by item, from those of
 * the last result that began with the same block; byte for byte as they would be written
 * afresh, with the same records referenced in the same order.
 */
export function eventRecord<R>(event: TraceEventInput, refs: Refs, shared?: SharedRecords): { stored: StoredEvent<R>; json: string } {
  if (shared === undefined) return plainRecord<R>(event, refs);
  const known = event.segments === undefined ? undefined : shared.results.get(event.segments);
  if (
    known !== undefined &&
    known.blocks === event.blocks &&
    known.cache === event.cache &&
    known.realtime === event.realtime &&
    known.hud === event.hud &&
    known.budget === event.budget &&
    known.tokens === event.tokens &&
    known.redactions === event.redactions &&
    known.promptSha256 === event.promptSha256 &&
    known.inputSha256 === event.inputSha256
  ) {
    return sharedRecord<R>(event, refs, known, shared);
  }
  return derivedRecord<R>(event, refs, shared);
}

/** Every part serialised and referenced afresh. */
function plainRecord<R>(event: TraceEventInput, refs: Refs): { stored: StoredEvent<R>; json: string } {
  const { segments, blocks, sources, cache, realtime, hud } = event;
  let chars = 0;
  let parts = '';
  if (blocks) parts += `,"blocks":[${blocks.map(refs.block).join(',')}]`;
  const sourceRefs = sourceReferences(sources, refs, undefined);
  if (cache) parts += `,"cache":${refs.json(cache)}`;
  if (realtime) parts += realtimeReferences(realtime, refs);
  if (hud) parts += `,"hud":${refs.json(hud)}`;
  parts += sourceRefs;
  if (segments) {
    const texts = (list: string[]) =>
      list
        .map((text) => {
          chars += text.length;
          return refs.blob(text);
        })
        .join(',');
    parts += `,"segments":{"system":[${texts(segments.system)}],"input":[${texts(segments.input)}]}`;
  }
  const stored = ownFields(event, chars) as StoredEvent<R>;
  const own = JSON.stringify(stored);
  return { stored, json: `${own.slice(0, -1)}${parts}}` };
}

/**
 * A result not written before in this scope: references looked up only for what is not the
 * very item at the same place in the last result that began with the same block, and kept
 * for the events that deliver it again and for the result that follows it.
 */
function derivedRecord<R>(event: TraceEventInput, refs: Refs, shared: SharedRecords): { stored: StoredEvent<R>; json: string } {
  const { segments, blocks, sources, cache, realtime, hud } = event;
  const first = blocks?.[0];
  const line = first === undefined ? undefined : shared.lines.get(first);
  // The same order of lookups as plainRecord's: a record new to the scope is placed where a plain write would place it.
  let before = '';
  let blockRefs: string[] = [];
  if (blocks) {
    blockRefs = keptRefs(blocks, line?.blocks, line?.blockRefs, refs.block);
    before += `,"blocks":[${blockRefs.join(',')}]`;
  }
  const sourceRefs = sourceReferences(sources, refs, shared);
  if (cache) before += `,"cache":${refs.json(cache)}`;
  let realtimeJson = '';
  if (realtime) {
    realtimeJson = line !== undefined && line.tools === realtime.tools && line.voice === realtime.voice ? line.realtimeJson : realtimeReferences(realtime, refs);
    before += realtimeJson;
  }
  let hudJson = '';
  if (hud) {
    hudJson = line !== undefined && line.hud === hud ? line.hudJson : `,"hud":${refs.json(hud)}`;
    before += hudJson;
  }
  let chars = 0;
  let segmentRefs = '';
  let systemRefs: string[] = [];
  let inputRefs: string[] = [];
  if (segments) {
    const blob = (text: string) => refs.blob(text);
    systemRefs = keptRefs(segments.system, line?.system, line?.systemRefs, blob);
    inputRefs = keptRefs(segments.input, line?.input, line?.inputRefs, blob);
    for (const text of segments.system) chars += text.length;
    for (const text of segments.input) chars += text.length;
    segmentRefs = `,"segments":{"system":[${systemRefs.join(',')}],"input":[${inputRefs.join(',')}]}`;
  }
  const stored = ownFields(event, chars) as StoredEvent<R>;
  const own = JSON.stringify(stored);
  if (segments !== undefined && blocks !== undefined) {
    if (!shared.seen.has(segments)) shared.seen.add(segments);
    else {
      const { budget, tokens, redactions, promptSha256, inputSha256 } = event;
      const fields = resultFields(event);
      shared.results.set(segments, { blocks, cache, realtime, hud, budget, tokens, redactions, promptSha256, inputSha256, fields, chars, before, segmentRefs });
    }
    if (first !== undefined) {
      const { system, input } = segments;
      shared.lines.set(first, { blocks, blockRefs, system, systemRefs, input, inputRefs, voice: realtime?.voice, tools: realtime?.tools, realtimeJson, hud, hudJson });
    }
  }
  return { stored, json: `${own.slice(0, -1)}${before}${sourceRefs}${segmentRefs}}` };
}

/** The references of `items`: those of the item at the same place in `known` when it is the very same, looked up otherwise. */
function keptRefs<T>(items: readonly T[], known: readonly unknown[] | undefined, knownRefs: readonly string[] | undefined, ref: (item: T) => string): string[] {
  const found: string[] = new Array<string>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    found[i] = known !== undefined && i < known.length && known[i] === item ? knownRefs![i]! : ref(item);
  }
  return found;
}

/** An event of a shared result: its own fields serialised, the result's spliced in where JSON.stringify would write them. */
function sharedRecord<R>(event: TraceEventInput, refs: Refs, known: SharedRecord, shared: SharedRecords): { stored: StoredEvent<R>; json: string } {
  const sources = sourceReferences(event.sources, refs, shared);
  const json = `${ownJson(event, known.fields, known.chars)}${known.before}${sources}${known.segmentRefs}}`;
  return { stored: ownFields(event, known.chars) as StoredEvent<R>, json };
}

/** `,"promptSha256":…,"inputSha256":…,"budget":…,"tokens":…,"redactions":…`, absent ones left out: the compiled result's own fields. */
function resultFields(event: TraceEventInput): string {
  // Composing the budget from its policy limits' kept JSON was tried: keeping each new `omitted` object's JSON cost more than it saved.
  const fields = JSON.stringify({
    promptSha256: event.promptSha256,
    inputSha256: event.inputSha256,
    budget: event.budget,
    tokens: event.tokens,
    redactions: event.redactions,
  });
  return fields.length > 2 ? `,${fields.slice(1, -1)}` : '';
}

/** `JSON.stringify(ownFields(event, chars))` without its closing brace, `fields` (`resultFields`) spliced in where it writes them. */
function ownJson(event: TraceEventInput, fields: string, chars: number): string {
  return `${JSON.stringify(ownHead(event)).slice(0, -1)}${fields},${JSON.stringify(ownTail(event, chars)).slice(1, -1)}`;
}

/** Whether a parsed value has the fields every stored event has. */
export function isStoredEvent<R>(value: unknown): value is StoredEvent<R> {
  const event = value as Partial<StoredEvent<R>> | null;
  return (
    typeof event === 'object' &&
    event !== null &&
    typeof event.runId === 'string' &&
    typeof event.at === 'string' &&
    Number.isFinite(Date.parse(event.at)) &&
    typeof event.route === 'string' &&
    typeof event.subject?.id === 'string' &&
    typeof event.status === 'number' &&
    typeof event.outcome === 'string' &&
    (event.caller === undefined || typeof event.caller === 'string')
  );
}

function isStoredRealtime<R>(value: StoredEvent<R>['realtime']): value is NonNullable<StoredEvent<R>['realtime']> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof value.voice === 'string' &&
    Array.isArray(value.toolNames) &&
    value.toolNames.every((name) => typeof name === 'string') &&
    value.tools !== undefined
  );
}

/** How `rebuild` resolves references: a record's sha256, and its value (checked against it). */
export interface RecordReader<R> {
  sha(ref: R): string;
  /** A blob's text, or null when it is missing or altered. */
  blob(ref: R): Promise<string | null>;
  /** A data record's value, or undefined when it is missing or altered. */
  data(ref: R): Promise<unknown>;
}

/**
 * An event as `readRun` returns it: references resolved, prompts rebuilt and checked. A
 * block, source, cache or HUD record that cannot be read back leaves that field out of the
 * view and counts as unreadable; the prompts stand on their own digests. A HUD that reads
 * back malformed (`hudProblems`: a bad digest, an inverted line range, ...) is rejected:
 * left out, its problems in `hudRejected`, and the event is not verified. `link` is what
 * the event's chain link proves, and whether that is enough to vouch for it.
 */
export async function rebuild<R>(
  stored: StoredEvent<R>,
  read: RecordReader<R>,
  link: { status: ChainStatus; holds: boolean },
): Promise<{ event: TraceEventView; unreadable: number }> {
  const { segments, blocks, sources, cache, realtime, hud, ...rest } = stored;
  let unreadable = 0;
  const all = async <T>(refs: R[]): Promise<T[] | undefined> => {
    const values: T[] = [];
    for (const ref of refs) {
      const value = await read.data(ref);
      if (value === undefined) {
        unreadable++;
        return undefined;
      }
      values.push(value as T);
    }
    return values;
  };
  const parts: Partial<Pick<TraceEventView, 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud' | 'hudRejected'>> = {};
  if (blocks) {
    const values = await all<TraceBlock>(blocks);
    if (values) parts.blocks = values;
  }
  if (sources) {
    const values = await all<TraceSource>(sources);
    if (values) parts.sources = values;
  }
  if (cache) {
    const values = await all<Record<string, unknown>>([cache]);
    if (values) parts.cache = values[0]!;
  }
  if (isStoredRealtime(realtime)) {
    const tools = await read.data(realtime.tools);
    if (!Array.isArray(tools)) unreadable++;
    parts.realtime = {
      voice: realtime.voice,
      toolNames: realtime.toolNames,
      toolsSha256: read.sha(realtime.tools),
      tools: Array.isArray(tools) ? (tools as NonNullable<TraceRealtimeView['tools']>) : null,
    };
  }
  let hudHolds = true;
  if (hud) {
    const values = await all<unknown>([hud]);
    if (values) {
      const problems = hudProblems(values[0]);
      if (problems.length === 0) parts.hud = values[0] as TraceEventView['hud'];
      else {
        parts.hudRejected = problems;
        hudHolds = false;
      }
    }
  }
  const base = rest as Omit<TraceEventView, 'chars' | 'segments' | 'systemPrompt' | 'inputPrompt' | 'verified' | 'chain' | 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud' | 'hudRejected'>;
  if (!segments) {
    return {
      event: { ...base, ...parts, chars: stored.chars ?? 0, systemPrompt: null, inputPrompt: null, verified: link.holds && hudHolds ? null : false, chain: link.status },
      unreadable,
    };
  }
  const texts = new Map<string, string | null>();
  let complete = true;
  const assemble = async (refs: R[]) => {
    const views: TraceSegmentView[] = [];
    let text = '';
    for (const segmentRef of refs) {
      const sha = read.sha(segmentRef);
      if (!texts.has(sha)) texts.set(sha, await read.blob(segmentRef));
      const piece = texts.get(sha);
      if (piece === null || piece === undefined) {
        complete = false;
        views.push({ sha256: sha, offset: text.length, chars: 0 });
        continue;
      }
      views.push({ sha256: sha, offset: text.length, chars: piece.length });
      text += piece;
    }
    return { views, text };
  };
  const system = await assemble(segments.system);
  const input = await assemble(segments.input);
  const inputPrompt = stored.inputSha256 === null && input.text === '' ? null : input.text;
  const verified =
    link.holds &&
    hudHolds &&
    complete &&
    typeof stored.promptSha256 === 'string' &&
    sha256Hex(system.text) === stored.promptSha256 &&
    (stored.inputSha256 === null ? inputPrompt === null : stored.inputSha256 === undefined || (inputPrompt !== null && sha256Hex(inputPrompt) === stored.inputSha256));
  return {
    event: {
      ...base,
      ...parts,
      chars: stored.chars,
      segments: { system: system.views, input: input.views },
      systemPrompt: complete ? system.text : null,
      inputPrompt: complete ? inputPrompt : null,
      verified,
      chain: link.status,
    },
    unreadable,
  };
}

/**
 * The JSON text and sha256 of small records that repeat from event to event (block
 * summaries, source records) as new objects with the same values, found without
 * serialising them again: looked up by `id`, then compared with `same`. The JSON is that
 * of `pick(record)`. Bounded: it starts over when full.
 */
export class RecordMemo<R> {
  private readonly entries = new Map<unknown, Array<{ record: R; json: string; sha: string }>>();
  private count = 0;

  constructor(
    private readonly id: (record: R) => unknown,
    private readonly same: (known: R, record: R) => boolean,
    private readonly pick: (record: R) => R,
    private readonly maxEntries = 4096,
  ) {}

  get(record: R): { json: string; sha: string } {
    const key = this.id(record);
    const candidates = this.entries.get(key);
    if (candidates) for (const entry of candidates) if (this.same(entry.record, record)) return entry;
    const picked = this.pick(record);
    const json = JSON.stringify(picked);
    const entry = { record: picked, json, sha: sha256Hex(json) };
    if (this.count >= this.maxEntries) {
      this.entries.clear();
      this.count = 0;
    }
    const list = this.entries.get(key);
    if (list) list.push(entry);
    else this.entries.set(key, [entry]);
    this.count++;
    return entry;
  }
}

/** Parses a data record's JSON text when it hashes to the sha256 expected; undefined otherwise. */
export function parseRecordJson(json: string, expectedSha: string): unknown {
  if (sha256Hex(json) !== expectedSha) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

type OwnFields = { [K in keyof Required<Omit<TraceEventInput, 'segments' | 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud'>>]: TraceEventInput[K] } & { chars: number };

/**
 * The event's own fields, as stored (the shared result's blocks, sources, cache, realtime,
 * HUD and segments go in by reference), in the order they are written: what the request
 * was (`ownHead`), the compiled result's fields, then how it went (`ownTail`). Field by
 * field rather than a rest spread of the event, which costs more on this per-event path;
 * the type lists every other field of TraceEventInput, so a new one cannot be left out, and
 * `ownJson` writes the same two parts.
 */
function ownFields(event: TraceEventInput, chars: number): OwnFields {
  return {
    ...ownHead(event),
    promptSha256: event.promptSha256,
    inputSha256: event.inputSha256,
    budget: event.budget,
    tokens: event.tokens,
    redactions: event.redactions,
    ...ownTail(event, chars),
  };
}

function ownHead(event: TraceEventInput) {
  return {
    runId: event.runId,
    at: event.at,
    route: event.route,
    subject: event.subject,
    caller: event.caller,
    surface: event.surface,
    status: event.status,
    outcome: event.outcome,
    requestId: event.requestId,
    traceparent: event.traceparent,
    request: event.request,
  };
}

function ownTail(event: TraceEventInput, chars: number) {
  return {
    warnings: event.warnings,
    absent: event.absent,
    listings: event.listings,
    error: event.error,
    timing: event.timing,
    recall: event.recall,
    receipts: event.receipts,
    chars,
  };
}
