/**
 * Writes a compile route's JSON body with `fast-json-stringify` (Fastify's own serializer)
 * compiled from the route's zod response schema, so the bytes are exactly what the schema
 * serializer writes — no member the schema names is ever dropped, none it does not name is
 * ever sent. The members that depend on the compiled result alone (the prompts, blocks,
 * cache plan and the persona's session) are written once per shared result (a persona
 * within one minute) and kept as bytes with it; the rest is written per request.
 */
import fastJson from 'fast-json-stringify';
import type { z } from 'zod';
import { serializerJsonSchema } from './zod.js';

type ObjectSchema = z.ZodObject<z.ZodRawShape>;

interface Run {
  /** True for members that depend on the compiled result alone. */
  perResult: boolean;
  write(value: Record<string, unknown>): string;
}

/** The JSON of a shared result's members, run by run, as bytes; `null` for a run written per request. */
export type ResultParts = ReadonlyArray<Buffer | null>;

export interface AnswerEncoder {
  /**
   * The body: `perRequest` members (run id, sources, warnings, ...) and `result` members
   * (`result()` is only called when a part is not given), in the schema's order.
   */
  body(perRequest: Record<string, unknown>, result: () => Record<string, unknown>, parts?: ResultParts): string | Buffer;
  /** The result's members as bytes, for a shared result to keep and hand back to `body`. */
  resultParts(result: Record<string, unknown>): ResultParts;
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

  return {
    resultParts(result) {
      return runs.map((run) => (run.perResult ? Buffer.from(members(run.write(result))) : null));
    },
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
        const json = part ?? Buffer.from(members(runs[i]!.write(perRequest)));
        if (json.length === 0) continue;
        chunks.push(chunks.length === 0 ? OPEN : COMMA, json);
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
