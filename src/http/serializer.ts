import type { FastifySerializerCompiler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { z } from 'zod';

/*
 * Responses written from the routes' zod schemas: each schema's JSON Schema compiled once by
 * `fast-json-stringify`, on the first response that uses it. Validating requests is zod.ts.
 */

// Metadata (descriptions, component ids) is for the OpenAPI document; a serializer wants every part inline.
const NO_METADATA = z.registry<Record<string, unknown>>();

/** JSON Schema (draft-07) for a response, generated from its zod schema, for `fast-json-stringify`. */
export function serializerJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, {
    target: 'draft-07',
    io: 'output',
    unrepresentable: 'any',
    metadata: NO_METADATA,
  }) as Record<string, unknown>;
  return json;
}

/**
 * Fastify's serializer for routes whose response schemas are zod: `fast-json-stringify`
 * (Fastify's own) over the schema's JSON Schema, so a route with a response schema writes
 * exactly its members. Each is compiled on its first use, not when the route is registered:
 * most schemas are never used to write (problems are written as strings by the error handler,
 * and the routes that deliver a compile write their answers from encoders of their own, which
 * the warm-up builds), and compiling them all cost every start about 150 ms of CPU.
 */
export const zodSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) => {
  let write: ((value: unknown) => string) | undefined;
  return (value) => {
    write ??= fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as (value: unknown) => string;
    return write(value);
  };
};
