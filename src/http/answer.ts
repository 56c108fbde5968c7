/**
 * Writes a compile route's JSON body with `fast-json-stringify` (Fastify's own serializer)
 * compiled from the route's zod response schema, so the bytes are exactly what the schema
 * serializer writes. The members are cut into runs in the order they are written: those of
 * the route's result schema (what depends on the compiled result alone) and the rest (run
 * id, sources, warnings, ...). A shared result's runs are written once and kept by delivery
 * (`src/http/delivered.ts`); per request only the rest is written, and the runs are joined.
 * A prompt is written from the JSON of the pieces it is joined from (`PromptParts`), which
 * the encoder keeps per piece once written (a persona's stable prefix is the same at every
 * minute), for as long as the piece lives; a frozen member (a persona's tools, the same
 * frozen array at every minute) likewise, per value.
 * JSON escaping is per character and no piece begins with half of a surrogate pair (a
 * segment begins with a newline or a brace), so the pieces' JSON joined is the prompt's.
 */
import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import type { CompiledContext, PromptPiece } from '../core/types.js';
import { serializerJsonSchema } from './serializer.js';

type ObjectSchema = z.ZodObject<z.ZodRawShape>;
type Write = (value: unknown) => string;
type Members = Readonly<Record<string, unknown>>;

/** The JSON of a result's runs, as chunks of bytes, in run order; `null` for a run written per request. */
export type ResultParts = ReadonlyArray<readonly Uint8Array[] | null>;

/** The prompts of a compile, and the pieces they are joined from. */
export type Prompts = Pick<CompiledContext, 'systemPrompt' | 'inputPrompt' | 'instructions' | 'prompt'>;

type Composed = { readonly value: string; readonly chunks: readonly Uint8Array[] }; // a prompt and its pieces' JSON (escaped, unquoted)

export interface AnswerEncoder {
  /** The body: the per-request members from `perRequest`, the result's from `result()` (called only without `parts`), in the schema's order. */
  body(perRequest: Members, result: () => Members, parts?: ResultParts): string | Buffer;
  /** The result's runs as bytes, for a shared result to keep and hand back to `body`; `prompts` written from their pieces. */
  resultParts(result: Members, prompts?: Prompts): ResultParts;
}

/** The order fast-json-stringify writes members in: required ones first, then optional ones, each in schema order. */
export function wireOrder(schema: ObjectSchema): string[] {
  const json = serializerJsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  const keys = Object.keys(json.properties ?? {});
  const required = new Set(json.required ?? []);
  return [...keys.filter((key) => required.has(key)), ...keys.filter((key) => !required.has(key))];
}


const [OPEN, COMMA, CLOSE, QUOTE, NEWLINES] = ['{', ',', '}', '"', '\\n\\n'].map((text) => Buffer.from(text)) as [Buffer, Buffer, Buffer, Buffer, Buffer];

/**
 * An encoder for `schema` whose members named by `resultSchema` depend on the compiled
 * result alone. Each piece of the body is written by a serializer of consecutive members;
 * joined by commas they are byte for byte what one serializer of the whole schema writes.
 */
export function createAnswerEncoder(schema: ObjectSchema, resultSchema: ObjectSchema): AnswerEncoder {
  // Per object schema (the route's, and a member's): its wire order, and serializers of consecutive members compiled on first use.
  // …and the JSON of each frozen value written as one of its members (by member name, then value), kept while the value lives.
  const known = new Map<ObjectSchema, { order: string[]; writers: Map<string, Write>; frozen: Map<string, WeakMap<object, Uint8Array>> }>();
  const of = (object: ObjectSchema) => known.get(object) ?? known.set(object, { order: wireOrder(object), writers: new Map(), frozen: new Map() }).get(object)!;
  /** The JSON of `keys` (consecutive members of `object`) of `value`, without braces. */
  const json = (object: ObjectSchema, keys: readonly string[], value: unknown): string => {
    const { writers } = of(object);
    const name = keys.join(',');
    let write = writers.get(name);
    if (write === undefined) {
      const mask = Object.fromEntries(keys.map((key) => [key, true])) as Record<string, true>;
      writers.set(name, (write = fastJson(serializerJsonSchema(object.pick(mask)) as unknown as Parameters<typeof fastJson>[0]) as Write));
    }
    return write(value).slice(1, -1);
  };
  const resultKeys = new Set(Object.keys(resultSchema.shape));
  const runs: Array<{ perResult: boolean; keys: string[] }> = [];
  for (const key of of(schema).order) {
    const last = runs[runs.length - 1];
    if (last?.perResult === resultKeys.has(key)) last.keys.push(key);
    else runs.push({ perResult: resultKeys.has(key), keys: [key] });
  }
  const prefixes = new Map<string, Buffer>();
  // Each prompt piece's JSON, written once and kept while the piece lives.
  const pieces = new WeakMap<PromptPiece, Uint8Array>();
  const pieceJson = (piece: PromptPiece): Uint8Array => pieces.get(piece) ?? pieces.set(piece, Buffer.from(JSON.stringify(piece.text).slice(1, -1))).get(piece)!;

  function composedOf({ systemPrompt, inputPrompt, instructions, prompt }: Prompts): Composed[] {
    const system = [pieceJson(prompt.stable), Buffer.from(JSON.stringify(prompt.tail).slice(1, -1))];
    if (inputPrompt === null || prompt.input === null) return [{ value: systemPrompt, chunks: system }];
    const input = [pieceJson(prompt.input)];
    return [{ value: systemPrompt, chunks: system }, { value: inputPrompt, chunks: input }, { value: instructions, chunks: [...system, NEWLINES, ...input] }];
  }

  /** The schema of a member that is an object holding a prompt (a persona's session), else undefined. */
  function holding(object: ObjectSchema, key: string, value: unknown, composed: readonly Composed[]): ObjectSchema | undefined {
    const inner = object.shape[key];
    if (!(inner instanceof z.ZodObject) || value === null || typeof value !== 'object') return undefined;
    const fields = value as Members;
    return Object.keys(inner.shape).some((name) => composed.some((prompt) => prompt.value === fields[name])) ? (inner as ObjectSchema) : undefined;
  }

  /** `"key":value` for a frozen `value` (it cannot change, so its JSON is written once per value). */
  function frozenMember(object: ObjectSchema, key: string, value: object): Uint8Array {
    const { frozen } = of(object);
    const byValue = frozen.get(key) ?? frozen.set(key, new WeakMap()).get(key)!;
    return byValue.get(value) ?? byValue.set(value, Buffer.from(json(object, [key], { [key]: value }))).get(value)!;
  }

  /** `value`'s `keys` (of `object`), joined by commas, into `out`: a prompt from its pieces, an object holding one member by member, a frozen member from its kept JSON, runs of other members by one serializer. */
  function write(object: ObjectSchema, keys: readonly string[], value: Members, composed: readonly Composed[], out: Uint8Array[]): void {
    let plain: string[] = [];
    const put = (...chunks: Uint8Array[]) => out.push(...(out.length === 0 || out[out.length - 1] === OPEN ? chunks : [COMMA, ...chunks]));
    const flush = () => {
      const text = plain.length === 0 ? '' : json(object, plain, value);
      if (text.length > 0) put(Buffer.from(text));
      plain = [];
    };
    for (const key of keys) {
      const each = value[key];
      const prompt = typeof each === 'string' ? composed.find((candidate) => candidate.value === each) : undefined;
      const inner = prompt === undefined ? holding(object, key, each, composed) : undefined;
      if (prompt === undefined && inner === undefined) {
        if (each !== null && typeof each === 'object' && Object.isFrozen(each)) {
          flush();
          put(frozenMember(object, key, each));
        } else plain.push(key);
        continue;
      }
      flush();
      const prefix = prefixes.get(key) ?? prefixes.set(key, Buffer.from(`${JSON.stringify(key)}:`)).get(key)!;
      if (prompt !== undefined) put(prefix, QUOTE, ...prompt.chunks, QUOTE);
      else {
        put(prefix, OPEN);
        write(inner!, of(inner!).order, each as Members, composed, out);
        out.push(CLOSE);
      }
    }
    flush();
  }

  return {
    resultParts(result, prompts) {
      const composed = prompts === undefined ? [] : composedOf(prompts);
      return runs.map(({ perResult, keys }) => {
        const out: Uint8Array[] = [];
        if (perResult) write(schema, keys, result, composed, out);
        return perResult ? out : null;
      });
    },
    body(perRequest, result, parts) {
      let resultValue: Members | undefined;
      const texts = runs.map(({ perResult, keys }, i) => parts?.[i] ?? json(schema, keys, perResult ? (resultValue ??= result()) : perRequest));
      // Written once (a result not shared): one string, encoded once on the socket.
      if (parts === undefined) return `{${texts.filter((text) => text.length > 0).join(',')}}`;
      const chunks: Uint8Array[] = [];
      for (const text of texts) {
        const part = typeof text === 'string' ? [Buffer.from(text)] : text;
        if (part.some((chunk) => chunk.length > 0)) chunks.push(chunks.length === 0 ? OPEN : COMMA, ...part);
      }
      chunks.push(chunks.length === 0 ? Buffer.from('{}') : CLOSE);
      return Buffer.concat(chunks);
    },
  };
}
