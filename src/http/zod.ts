import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { quoteForWarning } from '../core/text.js';
import { ProblemError, type FieldError } from '../errors.js';

const PART_PREFIX: Record<string, string> = {
  body: '/body',
  querystring: '/query',
  params: '/params',
  headers: '/headers',
};

/** A 400 lists at most this many `errors[]`, and an unknown-keys message at most this many keys. */
const MAX_LISTED = 20;
/** Chars of one caller key, path and message in a problem (20 keys of 64 fit one message). */
const MAX_KEY_CHARS = 64;
const MAX_PATH_CHARS = 200;
const MAX_MESSAGE_CHARS = 1_600;

const count = (n: number) => n.toLocaleString('en-US');

/** A JSON-pointer segment: `~` and `/` escaped as the pointer spec says. */
const pointerSegment = (segment: PropertyKey) => String(segment).replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * What a zod issue says, bounded: unknown keys are the caller's, so at most `MAX_LISTED` are
 * named, each clamped with its controls escaped, with how many more there were.
 */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const named = issue.keys.slice(0, MAX_LISTED).map((key) => `"${quoteForWarning(key, MAX_KEY_CHARS)}"`);
  const more = issue.keys.length - named.length;
  return `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${named.join(', ')}${more > 0 ? ` and ${count(more)} more` : ''}`;
}

/**
 * Turns zod issues into RFC 9457 `errors[]` entries with JSON-pointer paths: the first
 * `MAX_LISTED`, each path and message clamped and with every control character escaped, so a
 * problem stays small and inert whatever keys the caller sent.
 */
function fieldErrors(issues: readonly z.core.$ZodIssue[], prefix: string): FieldError[] {
  return issues.slice(0, MAX_LISTED).map((issue) => ({
    path: quoteForWarning([prefix, ...issue.path.map(pointerSegment)].join('/'), MAX_PATH_CHARS),
    message: quoteForWarning(issueMessage(issue), MAX_MESSAGE_CHARS),
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
    const { issues } = result.error;
    const errors = fieldErrors(issues, prefix);
    const unsafe = issues.some((issue) => issue.code === 'custom' && issue.params?.['unsafeId'] === true);
    const first = errors[0]!;
    const listed = issues.length > MAX_LISTED ? ` (the first ${MAX_LISTED} are listed)` : '';
    const detail =
      issues.length === 1 ? `${first.path}: ${first.message}` : `${count(issues.length)} fields are invalid${listed}; the first is ${first.path}: ${first.message}`;
    return { error: new ProblemError(unsafe ? 'CC_UNSAFE_ID' : 'CC_VALIDATION_FAILED', detail, { errors }) };
  };
};
