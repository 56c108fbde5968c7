import { sha256Hex } from '../../core/digest.js';
import { createAreas, DEFAULT_CACHE_BYTES } from '../../cache-area.js';
import { area, type MemosOf } from '../../core/area.js';
import type { CompiledContext } from '../../core/types.js';
import type { RunSummaryBody as RunSummary, TraceBlock, TraceCompiledFields, TraceEventInput, TraceSource } from '../../../schemas/trace.js';

/**
 * What a delivered event records of its compiled result, as the result hands it over: the
 * store keeps the blocks' summary fields (their text lives in the segments, stored once).
 */
export function compiledEventFields(compiled: CompiledContext): TraceCompiledFields {
  return {
    blocks: compiled.blocks,
    segments: compiled.segments,
    promptSha256: compiled.promptSha256,
    inputSha256: compiled.inputSha256,
    budget: compiled.budget,
    cache: compiled.cache,
    tokens: compiled.tokens,
    redactions: compiled.redactions,
  };
}

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

/** The JSON text of a record and its sha256, as a data line stores it. */
export interface RecordText {
  readonly json: string;
  readonly sha: string;
}

/** A record as written, with the value it was written from. */
export interface WrittenRecord<T> extends RecordText {
  readonly record: T;
}

const sameBlock = (a: TraceBlock, b: TraceBlock) =>
  a.kind === b.kind && a.authority === b.authority && a.cacheClass === b.cacheClass && a.source === b.source && a.chars === b.chars && a.approxTokens === b.approxTokens;
const sameSource = (a: TraceSource, b: TraceSource) =>
  a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs && a.truncated === b.truncated && a.maxBytes === b.maxBytes && a.keep === b.keep && a.within === b.within;

/**
 * What a trace store remembers between events, areas of the app's cache set (`createCaches`
 * `trace`) so `caches.stats()` counts them: digests of segment texts by the text, and the
 * JSON of block summaries, source records and structures (a result's cache plan and HUD, a
 * persona's tools) by their key or the very object.
 */
export const TRACE_AREAS = {
  texts: area<string, string>('trace.texts', 0.05),
  /** By the block's sha256; kept with the summary it was written from, which must match field for field. */
  blocks: area<string, WrittenRecord<TraceBlock>>('trace.blocks', 0.005),
  /** By the file's sha256, the same way. */
  sources: area<string, WrittenRecord<TraceSource>>('trace.sources', 0.005),
  objects: area<object, RecordText>('trace.objects', 0.01),
  /** The PostgreSQL writer's record keys known to be stored in its database (a record referred to there is not sent again). */
  stored: area<string, true>('trace.stored', 0.005),
};
export type TraceMemo = MemosOf<typeof TRACE_AREAS>;

/** Areas of a trace store's own, for a store built without the app's cache set (a test, the CLI), sized as the default set sizes them. */
export function privateTraceMemo(): TraceMemo {
  return createAreas(TRACE_AREAS, DEFAULT_CACHE_BYTES);
}

function recordText(value: object): RecordText {
  const json = JSON.stringify(value);
  return { json, sha: sha256Hex(json) };
}

/**
 * The sha256 and JSON of what an append refers to, found without hashing or serialising the
 * same values again: stable segments arrive as the same strings on every call, block
 * summaries and source records as new objects with the same fields, structures as the very
 * objects a shared result hands out (never changed once handed out).
 */
export class RecordDigests {
  constructor(private readonly memo: TraceMemo) {}

  text(text: string): string {
    return this.memo.texts.get(text) ?? this.memo.texts.set(text, sha256Hex(text), 2 * text.length + 128);
  }

  block(block: TraceBlock): RecordText {
    const known = this.memo.blocks.get(block.sha256);
    if (known !== undefined && sameBlock(known.record, block)) return known;
    const { kind, authority, cacheClass, source, chars, approxTokens, sha256 } = block;
    const record = { kind, authority, cacheClass, source, chars, approxTokens, sha256 };
    return this.memo.blocks.set(sha256, { ...recordText(record), record }, 1024);
  }

  source(source: TraceSource): RecordText {
    const known = this.memo.sources.get(source.sha256);
    if (known !== undefined && sameSource(known.record, source)) return known;
    const { path, size, mtimeMs, sha256, truncated, maxBytes, keep, within } = source;
    const record: TraceSource = { path, size, mtimeMs, sha256 };
    if (truncated !== undefined) record.truncated = truncated;
    if (maxBytes !== undefined) record.maxBytes = maxBytes;
    if (keep !== undefined) record.keep = keep;
    if (within !== undefined) record.within = within;
    return this.memo.sources.set(sha256, { ...recordText(record), record }, 1024);
  }

  /** A structure's JSON and sha256, serialised once per object. */
  object(value: object): RecordText {
    const known = this.memo.objects.get(value);
    if (known !== undefined) return known;
    const record = recordText(value);
    return this.memo.objects.set(value, record, 2 * record.json.length + 256);
  }
}

/**
 * What one scope of references (a trace file, a day in the database) wrote for an event of
 * a shared result: the result's own fields and its references, as JSON. Kept by the writer
 * (`TraceSplices`) and spliced into the result's later events written to the same scope, so
 * they serialise only their own small fields.
 */
export interface TraceSplice {
  /** The HUD it was written with: a later delivery of the result may have built another. */
  readonly hud: unknown;
  /** `,"promptSha256":…,"inputSha256":…,"budget":…,"tokens":…,"redactions":…` as JSON.stringify writes them (absent ones left out). */
  readonly fields: string;
  readonly chars: number;
  /** `,"blocks":[…],"cache":…,"realtime":…,"hud":…`. */
  readonly parts: string;
  /** `,"segments":{…}`. */
  readonly segments: string;
}

/**
 * Where a trace writer keeps what it derives from the shared results it wrote events of, one
 * per scope of references (a trace file, a day in the database), keyed by the result: a
 * `WeakMap`, so an entry lasts no longer than its result or its scope, and the result holds
 * nothing of the writer. The splice is made by the result's second event in a scope, not its
 * first: most results are delivered once (a voice session connects at its own minute), and
 * strings kept from every first event would outlive the young generation with the result for
 * nothing — the first event leaves only a mark (`null`).
 */
export class TraceSplices {
  private readonly byResult = new WeakMap<object, TraceSplice | null>();

  /** The result's splice in this scope; null when only its first event was written here; undefined when none was. */
  get(result: object): TraceSplice | null | undefined {
    return this.byResult.get(result);
  }

  /** Keeps what `eventRecord` gave for an event of `result`, once that event is durable: only then do its references point at stored records. */
  keep(result: object, splice: TraceSplice | undefined): void {
    if (splice !== undefined) this.byResult.set(result, splice);
    else if (!this.byResult.has(result)) this.byResult.set(result, null);
  }
}

function realtimeReferences(realtime: NonNullable<TraceEventInput['realtime']>, refs: Refs): string {
  const names = JSON.stringify(realtime.tools.map((tool) => tool.name));
  return `,"realtime":{"voice":${JSON.stringify(realtime.voice)},"toolNames":${names},"tools":${refs.json(realtime.tools)}}`;
}

/**
 * The event as stored, as JSON text (an object), and the characters it delivered. Segment
 * texts, block summaries (only their summary fields: a compiled block passed whole would
 * store its content a second time), source records, the cache plan, a persona's tools and
 * the HUD become references, spliced in as ready JSON. An event of a shared `result` whose
 * scope's `splices` hold a splice for it (made with the same HUD) takes the result's fields
 * and references from it; otherwise they are written, and from the result's second event in
 * the scope `splice` is what the writer keeps (`TraceSplices.keep`) once the event is
 * durable. Byte for byte the same either way.
 */
export function eventRecord(event: TraceEventInput, refs: Refs, splices?: TraceSplices, result?: object): { json: string; chars: number; splice?: TraceSplice } {
  const kept = result === undefined ? undefined : splices?.get(result);
  if (kept != null && kept.hud === event.hud) {
    const sources = sourceReferences(event.sources, refs);
    return { json: `${ownJson(event, kept.fields, kept.chars)}${kept.parts}${sources}${kept.segments}}`, chars: kept.chars };
  }
  const { segments, blocks, sources, cache, realtime, hud } = event;
  // Looked up in this order, so a record new to the scope is placed where it always was.
  let parts = blocks ? `,"blocks":[${blocks.map(refs.block).join(',')}]` : '';
  const sourceRefs = sourceReferences(sources, refs);
  // A new result's cache plan is new: kept in no memo (its later events splice it in).
  if (cache) parts += `,"cache":${refs.data(recordText(cache))}`;
  if (realtime) parts += realtimeReferences(realtime, refs);
  if (hud) parts += `,"hud":${refs.json(hud)}`;
  let chars = 0;
  let segmentRefs = '';
  if (segments) {
    const texts = (list: string[]) =>
      list
        .map((text) => {
          chars += text.length;
          return refs.blob(text);
        })
        .join(',');
    segmentRefs = `,"segments":{"system":[${texts(segments.system)}],"input":[${texts(segments.input)}]}`;
  }
  const fields = resultFields(event);
  const json = `${ownJson(event, fields, chars)}${parts}${sourceRefs}${segmentRefs}}`;
  const splice = kept !== undefined && segments !== undefined ? { hud, fields, chars, parts, segments: segmentRefs } : undefined;
  return { json, chars, ...(splice ? { splice } : {}) };
}

/** `,"sources":[…]` for an event. */
function sourceReferences(sources: TraceEventInput['sources'], refs: Refs): string {
  return sources ? `,"sources":[${sources.map(refs.source).join(',')}]` : '';
}

/** The compiled result's fields an event stores inline (the rest of `TraceCompiledFields` go by reference), in the order they are written. */
function inlineResult(event: TraceEventInput) {
  return { promptSha256: event.promptSha256, inputSha256: event.inputSha256, budget: event.budget, tokens: event.tokens, redactions: event.redactions };
}

/** `,"promptSha256":…,"inputSha256":…,"budget":…,"tokens":…,"redactions":…`, absent ones left out: `inlineResult` as JSON. */
function resultFields(event: TraceEventInput): string {
  const fields = JSON.stringify(inlineResult(event));
  return fields.length > 2 ? `,${fields.slice(1, -1)}` : '';
}

/** The event's own fields as a JSON object without its closing brace, `fields` (`resultFields`) spliced in where they belong. */
function ownJson(event: TraceEventInput, fields: string, chars: number): string {
  return `${JSON.stringify(ownRequestFields(event)).slice(0, -1)}${fields},${JSON.stringify(ownOutcomeFields(event, chars)).slice(1, -1)}`;
}

/**
 * The event's own fields are written in this order: what the request was
 * (`ownRequestFields`), the compiled result's inline fields (`inlineResult`), then how it went
 * (`ownOutcomeFields`). Field by field rather than a rest spread of the event, which costs
 * more on this per-event path; the check below fails to compile when TraceEventInput gains a
 * field that is written neither inline nor by reference.
 */
type Unplaced = Exclude<
  keyof TraceEventInput,
  'segments' | 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud' | keyof ReturnType<typeof ownRequestFields> | keyof ReturnType<typeof inlineResult> | keyof ReturnType<typeof ownOutcomeFields>
>;
true satisfies ([Unplaced] extends [never] ? true : { unplaced: Unplaced });

function ownRequestFields(event: TraceEventInput) {
  return {
    runId: event.runId,
    parentRunId: event.parentRunId,
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

function ownOutcomeFields(event: TraceEventInput, chars: number) {
  return {
    warnings: event.warnings,
    absent: event.absent,
    listings: event.listings,
    error: event.error,
    timing: event.timing,
    recall: event.recall,
    receipts: event.receipts,
    refresh: event.refresh,
    chars,
  };
}

/** What `GET /runs` shows of a run beyond its identity, from its latest event. */
export type ListedFields = Pick<RunSummary, 'compiledFor' | 'topicId' | 'role' | 'engine' | 'warnings' | 'requestId' | 'traceparent'>;

/** A short recorded string (an id, an instant), or null: a tampered record cannot put a long text in a listing. */
function shortText(value: unknown): string | null {
  return typeof value === 'string' && value.length <= 128 ? value : null;
}

/**
 * The listed fields of an event (both backends): the minute compiled for (`nowUsed`), the
 * topic asked for, the role played (its receipt, else the role asked for), the engine, how
 * many warnings, and the correlation ids.
 */
export function listedFields(event: Pick<TraceEventInput, 'request' | 'receipts' | 'warnings' | 'requestId' | 'traceparent'>): ListedFields {
  const request: Record<string, unknown> = event.request ?? {};
  const fields: ListedFields = {
    compiledFor: shortText(request['nowUsed']),
    topicId: shortText(request['topicId']),
    role: shortText(event.receipts?.role?.id) ?? shortText(request['role']),
    engine: shortText(request['engine']),
    warnings: Array.isArray(event.warnings) ? event.warnings.length : 0,
  };
  const requestId = shortText(event.requestId);
  if (requestId !== null) fields.requestId = requestId;
  const traceparent = shortText(event.traceparent);
  if (traceparent !== null) fields.traceparent = traceparent;
  return fields;
}

/** The trace id of a recorded traceparent (`00-<trace id>-<parent id>-<flags>`). */
export function traceIdOfTraceparent(traceparent: string | undefined): string | undefined {
  return traceparent === undefined || traceparent.length < 35 ? undefined : traceparent.slice(3, 35);
}
