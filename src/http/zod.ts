import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import { ProblemError, type FieldError } from '../errors.js';

const PART_PREFIX: Record<string, string> = {
  body: '/body',
  querystring: '/query',
  params: '/params',
  headers: '/headers',
};

/** Turns zod issues into RFC 9457 `errors[]` entries with JSON-pointer paths. */
function fieldErrors(error: z.ZodError, prefix: string): FieldError[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map((segment) => String(segment).replaceAll('~', '~0').replaceAll('/', '~1'))].join('/'),
    message: issue.message,
  }));
}

/**
 * Validates body, query and params with the zod schema declared on the route. Schemas
 * may carry their own error code (an unsafe id is `CC_UNSAFE_ID`) through zod issue params.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const prefix = PART_PREFIX[httpPart ?? 'body'] ?? '/body';
  return (data: unknown) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const errors = fieldErrors(result.error, prefix);
    const unsafe = result.error.issues.some((issue) => issue.code === 'custom' && issue.params?.['unsafeId'] === true);
    const first = errors[0]!;
    const detail =
      errors.length === 1 ? `${first.path}: ${first.message}` : `${errors.length} fields are invalid; the first is ${first.path}: ${first.message}`;
    return { error: new ProblemError(unsafe ? 'CC_UNSAFE_ID' : 'CC_VALIDATION_FAILED', detail, { errors }) };
  };
};

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
