/**
 * Writes a compile route's JSON body with `fast-json-stringify` (Fastify's own serializer)
 * compiled from the route's zod response schema, so the bytes are exactly what the schema
 * serializer writes — no member the schema names is ever dropped, none it does not name is
 * ever sent. The members that depend on the compiled result alone (the prompts, blocks,
 * cache plan and the persona's session) are written once per shared result (a persona
 * within one minute) and kept as bytes with it; the rest is written per request.
 *
 * A new result mostly repeats the one before: the prompts of a persona at its next minute
 * differ from the last ones only in the clock line. So the strings a result is joined from
 * (its prompts, from their segments) and its other long strings are escaped once per piece
 * and kept (`PieceOptions.memo`); the serializer writes a placeholder where each goes, and
 * the kept bytes are spliced in. Escaping is per character, so the JSON of a joined string
 * is the joined JSON of its pieces (a surrogate pair split between two pieces is the one
 * exception, and is escaped whole).
 */
import fastJson from 'fast-json-stringify';
import type { z } from 'zod';
import type { Memo } from '../core/memo.js';
import { serializerJsonSchema } from './zod.js';

type ObjectSchema = z.ZodObject<z.ZodRawShape>;

interface Run {
  /** True for members that depend on the compiled result alone. */
  perResult: boolean;
  write(value: Record<string, unknown>): string;
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
  memo?: Memo<string, Buffer>;
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

/** Strings at least this long are escaped once per string and kept, like the pieces of a composed one. */
const LONG_STRING = 512;

// A placeholder string for slot n; the serializer writes it as `"\u0000cc:n\u0000"`, which no
// other string's JSON can be mistaken for unless it holds these very characters, and then the
// slots do not add up and the result is written without pieces.
const placeholder = (slot: number) => `\u0000cc:${slot}\u0000`;
const PLACEHOLDER_OPEN = '"\\u0000cc:';
const PLACEHOLDER_CLOSE = '\\u0000"';

/** A high surrogate at the end of `a` and a low one at the start of `b`: one character, escaped differently apart. */
function splitsPair(a: string, b: string): boolean {
  const high = a.charCodeAt(a.length - 1);
  const low = b.charCodeAt(0);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

/** The UTF-8 JSON of `text` without its quotes, kept in `memo` by text. */
function escaped(text: string, memo: Memo<string, Buffer> | undefined): Buffer {
  const known = memo?.get(text);
  if (known !== undefined) return known;
  const bytes = Buffer.from(JSON.stringify(text).slice(1, -1));
  // The text is the key (UTF-16) and the bytes its value.
  return memo === undefined ? bytes : memo.set(text, bytes, 2 * text.length + bytes.length + 64);
}

const QUOTE = Buffer.from('"');

/**
 * An encoder for `schema`: its members cut into runs in wire order, each run either all
 * per-result (`resultKeys`) or all per-request, each compiled to its own serializer. The
 * runs' members joined by commas are byte for byte what one serializer of the whole schema
 * writes.
 */
export function createAnswerEncoder(schema: ObjectSchema, resultKeys: ReadonlySet<string>): AnswerEncoder {
  const runs: Run[] = [];
  let keys: string[] = [];
  let perResult: boolean | undefined;
  const flush = () => {
    if (keys.length === 0) return;
    const mask = Object.fromEntries(keys.map((key) => [key, true])) as Record<string, true>;
    const write = fastJson(serializerJsonSchema(schema.pick(mask)) as unknown as Parameters<typeof fastJson>[0]) as (value: unknown) => string;
    runs.push({ perResult: perResult === true, write });
    keys = [];
  };
  for (const key of wireOrder(schema)) {
    const isResult = resultKeys.has(key);
    if (perResult !== undefined && isResult !== perResult) flush();
    perResult = isResult;
    keys.push(key);
  }
  flush();

  /** The result's runs written whole, without pieces. */
  const plainParts = (result: Record<string, unknown>): ResultParts => runs.map((run) => (run.perResult ? [Buffer.from(members(run.write(result)))] : null));

  function resultParts(result: Record<string, unknown>, options: PieceOptions = {}): ResultParts {
    const composed = options.composed ?? [];
    const { memo } = options;
    const slots: Buffer[][] = [];
    const slotOf = (value: string): string => {
      for (const { value: whole, pieces } of composed) {
        if (value !== whole) continue;
        const chunks: Buffer[] = [QUOTE];
        for (let i = 0; i < pieces.length; i++) {
          // A pair split between two pieces is escaped as one character only when they are escaped together.
          if (i > 0 && splitsPair(pieces[i - 1]!, pieces[i]!)) return placeholder(slots.push([QUOTE, escaped(value, undefined), QUOTE]) - 1);
          if (pieces[i]!.length > 0) chunks.push(escaped(pieces[i]!, memo));
        }
        chunks.push(QUOTE);
        return placeholder(slots.push(chunks) - 1);
      }
      if (value.length < LONG_STRING) return value;
      return placeholder(slots.push([QUOTE, escaped(value, memo), QUOTE]) - 1);
    };
    const swap = (value: unknown): unknown => (typeof value === 'string' && (value.length >= LONG_STRING || composed.length > 0) ? slotOf(value) : value);
    // The members, and the members of member objects (a persona's session holds its instructions), with placeholders.
    const skeleton: Record<string, unknown> = {};
    for (const key of Object.keys(result)) {
      const value = result[key];
      if (!resultKeys.has(key)) {
        skeleton[key] = value;
        continue;
      }
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        let copy: Record<string, unknown> | undefined;
        for (const inner of Object.keys(value)) {
          const original = (value as Record<string, unknown>)[inner];
          const swapped = swap(original);
          if (swapped !== original) (copy ??= { ...(value as Record<string, unknown>) })[inner] = swapped;
        }
        skeleton[key] = copy ?? value;
      } else skeleton[key] = swap(value);
    }
    if (slots.length === 0) return plainParts(result);

    const used = new Array<boolean>(slots.length).fill(false);
    let found = 0;
    const parts: Array<Buffer[] | null> = [];
    for (const run of runs) {
      if (!run.perResult) {
        parts.push(null);
        continue;
      }
      const json = members(run.write(skeleton));
      const chunks: Buffer[] = [];
      let from = 0;
      for (let at = json.indexOf(PLACEHOLDER_OPEN); at >= 0; at = json.indexOf(PLACEHOLDER_OPEN, from)) {
        const close = json.indexOf(PLACEHOLDER_CLOSE, at + PLACEHOLDER_OPEN.length);
        const slot = close < 0 ? NaN : Number(json.slice(at + PLACEHOLDER_OPEN.length, close));
        if (!Number.isInteger(slot) || slot < 0 || slot >= slots.length || used[slot]) return plainParts(result);
        used[slot] = true;
        found++;
        if (at > from) chunks.push(Buffer.from(json.slice(from, at)));
        for (const chunk of slots[slot]!) chunks.push(chunk);
        from = close + PLACEHOLDER_CLOSE.length;
      }
      if (from < json.length) chunks.push(Buffer.from(json.slice(from)));
      parts.push(chunks);
    }
    return found === slots.length ? parts : plainParts(result);
  }

  return {
    resultParts,
    body(perRequest, result, parts) {
      if (parts === undefined) {
        // Written once (POST /compile, or a result not shared): one string, encoded once on the socket.
        let resultValue: Record<string, unknown> | undefined;
        const written: string[] = [];
        for (const run of runs) {
          const json = members(run.write(run.perResult ? (resultValue ??= result()) : perRequest));
          if (json.length > 0) written.push(json);
        }
        return `{${written.join(',')}}`;
      }
      const chunks: Buffer[] = [];
      for (let i = 0; i < runs.length; i++) {
        const part = parts[i];
        const run = part ?? [Buffer.from(members(runs[i]!.write(perRequest)))];
        if (run.length === 0 || (run.length === 1 && run[0]!.length === 0)) continue;
        chunks.push(chunks.length === 0 ? OPEN : COMMA);
        for (const chunk of run) chunks.push(chunk);
      }
      chunks.push(chunks.length === 0 ? EMPTY : CLOSE);
      return Buffer.concat(chunks);
    },
  };
}

const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');
const EMPTY = Buffer.from('{}');
