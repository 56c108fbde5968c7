import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { validationProblem } from './problem.js';

const PART_PREFIX: Record<string, string> = {
  body: '/body',
  querystring: '/query',
  params: '/params',
  headers: '/headers',
};

/**
 * Validates body, query and params with the zod schema declared on the route. Schemas
 * may carry their own error code (an unsafe id is `CC_UNSAFE_ID`) through zod issue params.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const prefix = PART_PREFIX[httpPart ?? 'body'] ?? '/body';
  return (data: unknown) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    return { error: validationProblem(result.error.issues, prefix) };
  };
};
