/**
 * Writes a compile route's JSON body with `fast-json-stringify` (Fastify's own serializer)
 * compiled from the route's zod response schema, so the bytes are exactly what the schema
 * serializer writes: no member the schema names is ever dropped, none it does not name is
 * ever sent. The response's members are cut into runs, in the order they are written: the
 * members of the route's result schema (what depends on the compiled result alone: prompts,
 * blocks, cache plan, a persona's session) and the rest (run id, sources, warnings, ...). A
 * shared result's runs are written once and kept on the result itself (`Derived.answer`);
 * per request only the rest is written, and the runs are joined.
 */
import fastJson from 'fast-json-stringify';
import type { z } from 'zod';
import { serializerJsonSchema } from './zod.js';

type ObjectSchema = z.ZodObject<z.ZodRawShape>;
type Write = (value: unknown) => string;

/** The JSON of a result's runs, as bytes, in run order; `null` for a run written per request. */
export type ResultParts = ReadonlyArray<Buffer | null>;

export interface AnswerEncoder {
  /**
   * The body: the per-request members from `perRequest` and the result's from `result()`
   * (called only when `parts` are not given), in the schema's order.
   */
  body(perRequest: Readonly<Record<string, unknown>>, result: () => Readonly<Record<string, unknown>>, parts?: ResultParts): string | Buffer;
  /** The result's runs as bytes, for a shared result to keep and hand back to `body`. */
  resultParts(result: Readonly<Record<string, unknown>>): ResultParts;
}

interface Run {
  /** True for a run of the result schema's members. */
  perResult: boolean;
  write: Write;
}

/** The order fast-json-stringify writes members in: required ones first, then optional ones, each in schema order. */
export function wireOrder(schema: ObjectSchema): string[] {
  const json = serializerJsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  const keys = Object.keys(json.properties ?? {});
  const required = new Set(json.required ?? []);
  return [...keys.filter((key) => required.has(key)), ...keys.filter((key) => !required.has(key))];
}

function serializer(schema: ObjectSchema): Write {
  return fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as Write;
}

/** Strips the braces of one object's JSON: `{"a":1}` → `"a":1` (empty for `{}`). */
function members(json: string): string {
  return json.slice(1, -1);
}

const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');

/**
 * An encoder for `schema` whose members named by `resultSchema` depend on the compiled
 * result alone. Each run is written by one serializer of its members; the runs joined by
 * commas are byte for byte what one serializer of the whole schema writes (JSON members
 * are independent, and each run's serializer writes them in the same order).
 */
export function createAnswerEncoder(schema: ObjectSchema, resultSchema: ObjectSchema): AnswerEncoder {
  const resultKeys = new Set(Object.keys(resultSchema.shape));
  const runs: Run[] = [];
  let run: string[] = [];
  let perResult = false;
  const flush = () => {
    if (run.length === 0) return;
    runs.push({ perResult, write: serializer(schema.pick(Object.fromEntries(run.map((key) => [key, true])) as Record<string, true>)) });
    run = [];
  };
  for (const key of wireOrder(schema)) {
    if (resultKeys.has(key) !== perResult) flush();
    perResult = resultKeys.has(key);
    run.push(key);
  }
  flush();

  return {
    resultParts(result) {
      return runs.map((each) => (each.perResult ? Buffer.from(members(each.write(result))) : null));
    },
    body(perRequest, result, parts) {
      if (parts === undefined) {
        // Written once (a result not shared): one string, encoded once on the socket.
        let resultValue: Readonly<Record<string, unknown>> | undefined;
        const written: string[] = [];
        for (const each of runs) {
          const json = members(each.write(each.perResult ? (resultValue ??= result()) : perRequest));
          if (json.length > 0) written.push(json);
        }
        return `{${written.join(',')}}`;
      }
      const chunks: Buffer[] = [];
      for (let i = 0; i < runs.length; i++) {
        const part = parts[i] ?? Buffer.from(members(runs[i]!.write(perRequest)));
        if (part.length === 0) continue;
        chunks.push(chunks.length === 0 ? OPEN : COMMA, part);
      }
      if (chunks.length === 0) chunks.push(OPEN);
      chunks.push(CLOSE);
      return Buffer.concat(chunks);
    },
  };
}
