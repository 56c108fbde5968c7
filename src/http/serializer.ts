import type { FastifySerializerCompiler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { z } from 'zod';

/*
 * Responses written from the routes' zod schemas: each schema's JSON Schema compiled once by
 * `fast-json-stringify`, when the route is registered. Validating requests is zod.ts.
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
 * exactly its members. Problem statuses are documentation (problems are written as strings
 * by the error handler), so theirs are compiled only if ever used.
 */
export const zodSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema, httpStatus }) => {
  const compile = () => fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as (value: unknown) => string;
  if (Number(httpStatus) < 400) return compile();
  let write: ((value: unknown) => string) | undefined;
  return (value) => (write ??= compile())(value);
};
