/**
 * Writes a compile route's JSON body with `fast-json-stringify` (Fastify's own serializer)
 * compiled from the route's zod response schema, so the bytes are exactly what the schema
 * serializer writes — no member the schema names is ever dropped, none it does not name is
 * ever sent. The members that depend on the compiled result alone (the prompts, blocks,
 * cache plan and the persona's session) are written once per shared result (a persona
 * within one minute) and kept as bytes with it; the rest is written per request.
 *
 * A new result mostly repeats the one before: a persona at its next minute differs from the
 * last only in the clock line and what is derived from it. So a result is written member by
 * member (each with its own serializer, picked from the schema), and what it shares with
 * earlier results is not written again: a member value that is the very object written
 * before (the persona's tools) reuses its bytes, and the strings a result is joined from
 * (its prompts, from their segments) and its long strings are escaped once per piece. JSON
 * escaping is per character, so the JSON of a joined string is the joined JSON of its
 * pieces; a surrogate pair split between two pieces is the one exception, and is escaped
 * whole.
 */
import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import type { Memo } from '../core/memo.js';
import { serializerJsonSchema } from './zod.js';

type ObjectSchema = z.ZodObject<z.ZodRawShape>;
type Write = (value: unknown) => string;

/** One member of an object schema, with its own serializer: `"key":value`, or nothing when it is absent. */
interface Member {
  key: string;
  /** `"key":` as bytes. */
  prefix: Buffer;
  write: Write;
  /** The member's own object schema, so a member object can be written member by member too. */
  object: Members | undefined;
  /**
   * The JSON of member objects already written, by the object: a result that shares one
   * with the result before (the persona's tools) does not write it again. Weak: it holds
   * nothing alive, and values are never changed once handed out.
   */
  kept: WeakMap<object, Buffer>;
  /** For an array of objects: how one item is written, so an array is written item by item. */
  items: Item | undefined;
  /**
   * The JSON of short values written before (a string under `LONG_STRING`, a number, null),
   * by value: a new result repeats most of them (its input digest, route key, engine,
   * tokenizer, voice, a persona's missing topic), and a schema serializer call costs more
   * than the lookup (a nullable member is an `anyOf`, decided by validating the value).
   */
  short: Map<unknown, Buffer>;
}

/**
 * One item of an array of objects, with its own serializer. A new result's arrays mostly
 * hold the very objects of the result before (a persona's next minute shares every block
 * but the clock's, and every cache boundary but the last): an item written before is not
 * written again. Weak, like `Member.kept`.
 */
interface Item {
  write: Write;
  kept: WeakMap<object, Buffer>;
}

interface Members {
  members: Member[];
}

interface Run {
  /** True for members that depend on the compiled result alone. */
  perResult: boolean;
  write: Write;
  members: Member[];
}

/** The JSON of a shared result's members, run by run, as chunks of bytes; `null` for a run written per request. */
export type ResultParts = ReadonlyArray<readonly Buffer[] | null>;

/** A string member that is exactly `pieces.join('')` (a prompt, from its segments). */
export interface ComposedString {
  readonly value: string;
  readonly pieces: readonly string[];
}

export interface PieceOptions {
  /** The result's strings that are joined from pieces; each piece's JSON is escaped once and kept. */
  composed?: readonly ComposedString[];
  /** Where escaped pieces are kept, by their text (the cache set's `answers.pieces` area). */
  pieces?: Memo<string, Buffer>;
  /** Members that override the result's own (a route's extras beside the compile), read without merging the two objects. */
  extra?: Readonly<Record<string, unknown>>;
  /**
   * The parts this encoder wrote for the result before (a persona's previous minute): a member
   * whose value is the same data as then, a prompt piece, an array item, reuses what was
   * written for it, so a new minute writes only what changed.
   */
  previous?: ResultParts;
}

/**
 * What was written for one member, to derive a later result's from: the value, where its
 * chunks are in its run's chunks, and where each piece of a composed string, each item of an
 * array and each member of a member object went.
 */
interface Written {
  readonly value: unknown;
  readonly from: readonly Buffer[];
  readonly start: number;
  readonly end: number;
  readonly pieces?: readonly string[];
  /** The chunk index of each piece's escaped JSON (-1 for an empty piece), or of each array item's JSON. */
  readonly at?: readonly number[];
  readonly inner?: ReadonlyArray<Written | undefined>;
}

export interface AnswerEncoder {
  /**
   * The body: `perRequest` members (run id, sources, warnings, ...) and `result` members
   * (`result()` is only called when a part is not given), in the schema's order.
   */
  body(perRequest: Record<string, unknown>, result: () => Record<string, unknown>, parts?: ResultParts): string | Buffer;
  /** The result's members as bytes, for a shared result to keep and hand back to `body`. */
  resultParts(result: Record<string, unknown>, options?: PieceOptions): ResultParts;
}

/** The order fast-json-stringify writes members in: required ones first, then optional ones, each in schema order. */
export function wireOrder(schema: ObjectSchema): string[] {
  const json = serializerJsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  const keys = Object.keys(json.properties ?? {});
  const required = new Set(json.required ?? []);
  return [...keys.filter((key) => required.has(key)), ...keys.filter((key) => !required.has(key))];
}

/** Strips the braces of one object's JSON: `{"a":1}` → `"a":1` (empty for `{}`). */
function members(json: string): string {
  return json.slice(1, -1);
}

function serializer(schema: ObjectSchema): Write {
  return fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as Write;
}

/** The members of `schema` in wire order, each with its own serializer, and so on for member objects. */
function membersOf(schema: ObjectSchema): Members {
  return {
    members: wireOrder(schema).map((key) => {
      const write = serializer(schema.pick({ [key]: true } as Record<string, true>));
      const inner = schema.shape[key];
      const object = inner instanceof z.ZodObject ? membersOf(inner as ObjectSchema) : undefined;
      const items = inner instanceof z.ZodArray && inner.element instanceof z.ZodObject ? itemOf(inner.element as ObjectSchema) : undefined;
      return { key, prefix: Buffer.from(`${JSON.stringify(key)}:`), write, object, kept: new WeakMap<object, Buffer>(), items, short: new Map() };
    }),
  };
}

/** An array item's writer: `{"i":item}` by the item schema's serializer, the wrapper cut off, so the bytes are what the array's serializer writes for it. */
function itemOf(element: ObjectSchema): Item {
  const wrapped = serializer(z.object({ i: element }));
  return { write: (value) => wrapped({ i: value }).slice(5, -1), kept: new WeakMap<object, Buffer>() };
}

/** Short values kept per member; past this many the member starts again (a run id never recurs). */
const SHORT_VALUES = 16;

/** Strings at least this long are escaped once per string and kept, like the pieces of a composed one. */
const LONG_STRING = 512;
/** Member objects whose JSON is at least this long are kept by identity. */
const LONG_VALUE = 256;

/** A high surrogate at the end of `a` and a low one at the start of `b`: one character, escaped differently apart. */
function splitsPair(a: string, b: string): boolean {
  const high = a.charCodeAt(a.length - 1);
  const low = b.charCodeAt(0);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

const isObject = (value: unknown): value is object => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Keys compared per object at most when two values are compared as data. */
const SAME_KEYS = 64;

/**
 * True when `a` and `b` are the same data down to `depth` levels (below that, the very same
 * objects), with keys in the same order: their JSON by any one serializer is then the same.
 * Strings from `LONG_STRING` on count as different (comparing one costs what it saves).
 */
function sameData(a: unknown, b: unknown, depth: number): boolean {
  if (typeof a === 'string') return a.length < LONG_STRING && a === b;
  if (a === b) return true;
  if (depth === 0 || a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length || a.length > SAME_KEYS) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i], depth - 1)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  const others = Object.keys(b);
  if (keys.length !== others.length || keys.length > SAME_KEYS) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key !== others[i] || !sameData((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], depth - 1)) return false;
  }
  return true;
}

/** How deep a member is compared with what was written before: a budget's limits, a token count's kinds, an array's items' fields. */
const SAME_DEPTH = 2;

/** One array item's JSON, kept by the item (never changed once handed out). */
function itemChunk(item: Item, value: object): Buffer {
  const known = item.kept.get(value);
  if (known !== undefined) return known;
  const bytes = Buffer.from(item.write(value));
  item.kept.set(value, bytes);
  return bytes;
}

/** Pieces shorter than this (a clock line, a separator) are escaped each time rather than kept: they cost less than a lookup, and a new minute's would only age in the cache. */
const KEPT_PIECE = 256;

/** The UTF-8 JSON of `text` without its quotes, kept in `memo` by text. */
function escaped(text: string, memo: Memo<string, Buffer> | undefined): Buffer {
  if (memo === undefined || text.length < KEPT_PIECE) return Buffer.from(JSON.stringify(text).slice(1, -1));
  const known = memo.get(text);
  if (known !== undefined) return known;
  // The text is the key (UTF-16) and the bytes its value.
  return memo.set(text, Buffer.from(JSON.stringify(text).slice(1, -1)), 2 * text.length + 3 * text.length + 64);
}

const QUOTE = Buffer.from('"');
const EMPTY_PIECE = Buffer.alloc(0);
const NO_PIECES: PieceOptions = Object.freeze({});
const OPEN = Buffer.from('{');
const OPEN_ARRAY = Buffer.from('[');
const CLOSE_ARRAY = Buffer.from(']');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');
const EMPTY = Buffer.from('{}');

/**
 * An encoder for `schema`: its members cut into runs in wire order, each run either all
 * per-result (`resultKeys`) or all per-request. A per-request run is written by one
 * serializer of its members; a result's runs member by member. Either way the runs' members
 * joined by commas are byte for byte what one serializer of the whole schema writes.
 */
export function createAnswerEncoder(schema: ObjectSchema, resultKeys: ReadonlySet<string>): AnswerEncoder {
  const all = membersOf(schema).members;
  const runs: Run[] = [];
  let run: Member[] = [];
  let perResult: boolean | undefined;
  const flush = () => {
    if (run.length === 0) return;
    const mask = Object.fromEntries(run.map((member) => [member.key, true])) as Record<string, true>;
    runs.push({ perResult: perResult === true, write: serializer(schema.pick(mask)), members: run });
    run = [];
  };
  for (const member of all) {
    const isResult = resultKeys.has(member.key);
    if (perResult !== undefined && isResult !== perResult) flush();
    perResult = isResult;
    run.push(member);
  }
  flush();

  /** The last piece escaped afresh, within one `resultParts` call. */
  const recent: { text: string; bytes: Buffer } = { text: '', bytes: EMPTY_PIECE };

  /** Per result's parts: what was written for each member of each run, for a later result to derive its own from. */
  const writtenOf = new WeakMap<ResultParts, ReadonlyArray<ReadonlyArray<Written | undefined> | null>>();

  /**
   * `value`'s JSON appended to `out` as chunks: what `prev` wrote where it is the same data,
   * else from pieces or kept bytes where it can, else its own serializer. Nothing when the
   * member is absent. Returns what was written, for a later result.
   */
  function memberChunks(member: Member, value: unknown, options: PieceOptions, out: Buffer[], prev: Written | undefined): Written | undefined {
    const start = out.length;
    if (prev !== undefined && sameData(value, prev.value, SAME_DEPTH)) {
      for (let i = prev.start; i < prev.end; i++) out.push(prev.from[i]!);
      // Its record still describes these very chunks (where they lie among the earlier result's), pieces and items included.
      return prev;
    }
    if (typeof value === 'string') {
      for (const { value: whole, pieces } of options.composed ?? []) {
        if (value !== whole) continue;
        // A pair split between two pieces is one character only when escaped together: write the string whole.
        for (let i = 1; i < pieces.length; i++) {
          if (splitsPair(pieces[i - 1]!, pieces[i]!)) {
            out.push(member.prefix, QUOTE, escaped(value, undefined), QUOTE);
            return undefined;
          }
        }
        out.push(member.prefix, QUOTE);
        const before = prev?.pieces;
        const at: number[] = [];
        for (let i = 0; i < pieces.length; i++) {
          const piece = pieces[i]!;
          if (piece.length === 0) {
            at.push(-1);
            continue;
          }
          at.push(out.length);
          // The previous result's piece at the same place, when it is the same text (the stable prefix's segments are the very same strings).
          const was = before !== undefined && before[i] === piece ? prev!.at![i]! : -1;
          if (was >= 0) out.push(prev!.from[was]!);
          else {
            // The piece a result's prompts share that is new (the clock's, in the system prompt, the instructions and the session's copy): escaped once.
            if (piece !== recent.text) {
              recent.text = piece;
              recent.bytes = escaped(piece, options.pieces);
            }
            out.push(recent.bytes);
          }
        }
        out.push(QUOTE);
        return { value, from: out, start, end: out.length, pieces, at };
      }
      if (value.length >= LONG_STRING) {
        out.push(member.prefix, QUOTE, escaped(value, options.pieces), QUOTE);
        return { value, from: out, start, end: out.length };
      }
    } else if (value !== null && typeof value === 'object') {
      const known = member.kept.get(value);
      if (known !== undefined) {
        out.push(known);
        return { value, from: out, start, end: out.length };
      }
      // An array of objects (blocks, cache boundaries) item by item, each item written once.
      if (member.items !== undefined && Array.isArray(value) && value.length > 0 && value.every(isObject)) {
        const was = prev?.at !== undefined && Array.isArray(prev.value) ? (prev.value as unknown[]) : undefined;
        const at: number[] = [];
        out.push(member.prefix, OPEN_ARRAY);
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.push(COMMA);
          at.push(out.length);
          const item = value[i] as object;
          out.push(was !== undefined && was[i] === item ? prev!.from[prev!.at![i]!]! : itemChunk(member.items, item));
        }
        out.push(CLOSE_ARRAY);
        return { value, from: out, start, end: out.length, at };
      }
      // A member object holding a joined or long string (a persona's session holds its instructions), or an array of objects (the cache plan's boundaries), is written member by member.
      if (member.object !== undefined && !Array.isArray(value) && splits(member.object, value as Record<string, unknown>, options)) {
        out.push(member.prefix, OPEN);
        const inner: Array<Written | undefined> = [];
        let first = true;
        const members = member.object.members;
        for (let i = 0; i < members.length; i++) {
          const each = members[i]!;
          const before = out.length;
          if (!first) out.push(COMMA);
          inner.push(memberChunks(each, (value as Record<string, unknown>)[each.key], options, out, prev?.inner?.[i]));
          if (out.length === before + (first ? 0 : 1)) out.length = before;
          else first = false;
        }
        out.push(CLOSE);
        return { value, from: out, start, end: out.length, inner };
      }
      const json = members(member.write({ [member.key]: value }));
      const bytes = Buffer.from(json);
      if (json.length >= LONG_VALUE) member.kept.set(value, bytes);
      out.push(bytes);
      return { value, from: out, start, end: out.length };
    }
    const known = member.short.get(value);
    if (known !== undefined) {
      out.push(known);
      return { value, from: out, start, end: out.length };
    }
    const json = members(member.write({ [member.key]: value }));
    if (json.length === 0) return { value, from: out, start, end: start };
    const bytes = Buffer.from(json);
    // Kept by value: a serializer's JSON of a string, number, boolean or null depends on that value alone.
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      if (member.short.size >= SHORT_VALUES) member.short.clear();
      member.short.set(value, bytes);
    }
    out.push(bytes);
    return { value, from: out, start, end: out.length };
  }

  /** The members of one run, joined by commas, as chunks (a request's sources, handed out again by a replayed session, reuse their bytes). */
  function writeMembers(list: readonly Member[], value: Record<string, unknown>, options: PieceOptions, written?: Array<Written | undefined>, prev?: ReadonlyArray<Written | undefined>): Buffer[] {
    const out: Buffer[] = [];
    const { extra } = options;
    for (let i = 0; i < list.length; i++) {
      const member = list[i]!;
      const before = out.length;
      if (before > 0) out.push(COMMA);
      const each = extra !== undefined && member.key in extra ? extra[member.key] : value[member.key];
      const record = memberChunks(member, each, options, out, prev?.[i]);
      written?.push(record);
      // An absent optional member writes nothing, and takes its comma back.
      if (out.length === before + (before > 0 ? 1 : 0)) out.length = before;
    }
    return out;
  }

  function splits(object: Members, value: Record<string, unknown>, options: PieceOptions): boolean {
    for (const inner of object.members) {
      const each = value[inner.key];
      if (inner.items !== undefined && Array.isArray(each) && each.length > 0) return true;
      if (typeof each !== 'string') continue;
      if (each.length >= LONG_STRING) return true;
      for (const { value: whole } of options.composed ?? []) if (each === whole) return true;
    }
    return false;
  }

  return {
    resultParts(result, options = {}) {
      const previous = options.previous === undefined ? undefined : writtenOf.get(options.previous);
      recent.text = '';
      recent.bytes = EMPTY_PIECE;
      const written: Array<Array<Written | undefined> | null> = [];
      const parts = runs.map((each, i) => {
        if (!each.perResult) {
          written.push(null);
          return null;
        }
        const records: Array<Written | undefined> = [];
        written.push(records);
        return writeMembers(each.members, result, options, records, previous?.[i] ?? undefined);
      });
      writtenOf.set(parts, written);
      return parts;
    },
    body(perRequest, result, parts) {
      if (parts === undefined) {
        // Written once (POST /compile, or a result not shared): one string, encoded once on the socket.
        let resultValue: Record<string, unknown> | undefined;
        const written: string[] = [];
        for (const each of runs) {
          const json = members(each.write(each.perResult ? (resultValue ??= result()) : perRequest));
          if (json.length > 0) written.push(json);
        }
        return `{${written.join(',')}}`;
      }
      const chunks: Buffer[] = [];
      for (let i = 0; i < runs.length; i++) {
        const part = parts[i] ?? writeMembers(runs[i]!.members, perRequest, NO_PIECES);
        if (part.length === 0) continue;
        chunks.push(chunks.length === 0 ? OPEN : COMMA);
        for (const chunk of part) chunks.push(chunk);
      }
      chunks.push(chunks.length === 0 ? EMPTY : CLOSE);
      return Buffer.concat(chunks);
    },
  };
}
