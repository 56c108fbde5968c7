import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { z } from 'zod';
import type { ProblemSchema } from '../../schemas/problem.js';
import { quoteForWarning } from '../core/text.js';
import { CATALOG, codeForStatus, ProblemError, type ErrorCode, type FieldError } from '../errors.js';

const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** RFC 9457 problem details, plus our stable `code` and the request id: the documented schema, its code one of the catalog's. */
export type Problem = z.infer<typeof ProblemSchema> & { code: ErrorCode };

export function problemType(code: ErrorCode): string {
  return `urn:context-compiler:problem:${code.slice(3).toLowerCase().replaceAll('_', '-')}`;
}

/** Builds the problem body for any error; 5xx details stay generic (the log has the rest). */
export function toProblem(error: unknown, request: FastifyRequest): Problem {
  const problemError = asProblemError(error);
  const { code } = problemError;
  const status = CATALOG[code].status;
  const problem: Problem = {
    ...problemError.extensions,
    type: problemType(code),
    title: CATALOG[code].title,
    status,
    detail: status >= 500 && code === 'CC_INTERNAL' ? 'An internal error occurred; it has been logged.' : problemError.detail,
    code,
    instance: request.url.split('?')[0] ?? '/',
    requestId: String(request.id),
  };
  if (problemError.errors && problemError.errors.length > 0) problem.errors = problemError.errors;
  return problem;
}

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
 * A failed validation of the request part at `prefix` (`/body`, `/query`, ...) as a 400: one
 * field's issue in the detail, or how many fields failed and the first; `CC_UNSAFE_ID` when a
 * schema's id rule failed (a zod issue param), else `CC_VALIDATION_FAILED`.
 */
export function validationProblem(issues: readonly z.core.$ZodIssue[], prefix: string): ProblemError {
  const errors = fieldErrors(issues, prefix);
  const unsafe = issues.some((issue) => issue.code === 'custom' && issue.params?.['unsafeId'] === true);
  const first = errors[0]!;
  const listed = issues.length > MAX_LISTED ? ` (the first ${MAX_LISTED} are listed)` : '';
  const detail =
    issues.length === 1 ? `${first.path}: ${first.message}` : `${count(issues.length)} fields are invalid${listed}; the first is ${first.path}: ${first.message}`;
  return new ProblemError(unsafe ? 'CC_UNSAFE_ID' : 'CC_VALIDATION_FAILED', detail, { errors });
}

/** Normalises Fastify's own errors (body parsing, limits, timeouts) into catalog errors. */
export function asProblemError(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  const status = typeof fastifyError.statusCode === 'number' ? fastifyError.statusCode : 500;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ProblemError('CC_BODY_TOO_LARGE', 'The request body is larger than BODY_LIMIT allows.', { cause: error });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError('CC_UNSUPPORTED_MEDIA_TYPE', 'Send the request body as application/json.', { cause: error });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ProblemError('CC_INVALID_JSON', 'The request body is not valid JSON (a "__proto__" or "constructor.prototype" key counts as invalid).', {
        cause: error,
        errors: [{ path: '/body', message: 'not valid JSON' }],
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ProblemError('CC_INVALID_JSON', 'The body is empty but Content-Type is application/json.', { cause: error });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ProblemError('CC_BAD_REQUEST', 'Content-Length does not match the body.', { cause: error });
    default:
      break;
  }
  if (status === 400 && error instanceof SyntaxError) {
    return new ProblemError('CC_INVALID_JSON', 'The request body is not valid JSON.', {
      cause: error,
      errors: [{ path: '/body', message: 'not valid JSON' }],
    });
  }
  if (status >= 400 && status < 500) {
    const code = codeForStatus(status);
    return new ProblemError(code, fastifyError.message ?? CATALOG[code].title, { cause: error });
  }
  if (status === 503) return new ProblemError('CC_NOT_READY', 'The service is not ready.', { cause: error });
  return new ProblemError('CC_INTERNAL', 'internal error', { cause: error });
}

/**
 * Fastify's `frameworkErrors`: a URL that cannot be decoded, or a path parameter longer than
 * the router accepts, is answered like every other bad request instead of Fastify's own JSON.
 */
export function frameworkErrorProblem(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  let problem: ProblemError;
  if (error.code === 'FST_ERR_BAD_URL') problem = new ProblemError('CC_BAD_REQUEST', 'The URL holds an invalid percent-encoding.', { cause: error });
  else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') problem = new ProblemError('CC_UNSAFE_ID', 'A path parameter is far longer than any identifier may be.', { cause: error });
  else problem = asProblemError(error);
  request.log.debug({ code: problem.code }, 'request rejected');
  return sendProblem(reply, toProblem(problem, request));
}

const CLIENT_ERRORS: Record<string, ErrorCode> = {
  ERR_HTTP_REQUEST_TIMEOUT: 'CC_REQUEST_TIMEOUT',
  HPE_HEADER_OVERFLOW: 'CC_HEADERS_TOO_LARGE',
};

/**
 * Fastify's `clientErrorHandler`: errors Node's HTTP parser raises before there is a request
 * (a request not received within `requestTimeout`, headers over the limit, bytes that are not
 * HTTP) get a problem body too, then the socket is closed.
 */
export function writeClientErrorProblem(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code = CLIENT_ERRORS[error.code ?? ''] ?? 'CC_BAD_REQUEST';
  const { status, title } = CATALOG[code];
  const detail =
    code === 'CC_REQUEST_TIMEOUT'
      ? 'The request was not received in time; the connection is closed.'
      : code === 'CC_HEADERS_TOO_LARGE'
        ? 'The request headers are larger than the server accepts.'
        : 'The request is not valid HTTP.';
  const body = JSON.stringify({ type: problemType(code), title, status, detail, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

export function sendProblem(reply: FastifyReply, problem: Problem, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  // A compile route named its run before it could fail: the body says it as the header does.
  const runId = reply.getHeader('x-run-id');
  if (typeof runId === 'string' && problem.runId === undefined) problem.runId = runId;
  // The request's log line carries it (the metrics plugin writes that line).
  reply.problemCode = problem.code;
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every registered route (method, URL pattern) except implicit HEAD routes. */
    routeTable(): Array<{ method: string; url: string }>;
  }
}

interface RoutePattern {
  regex: RegExp;
  methods: Set<string>;
}

/** The paths a route URL (`/runs/:runId/trace`, `/ui/*`) answers, with or without a trailing slash. */
export function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/**
 * One root error handler and one not-found handler for the whole app. The not-found
 * handler answers 405 with `Allow` when the path exists under another method, and is
 * rate limited like every other route.
 */
export const problemPlugin = fp(
  async function problemPlugin(app: FastifyInstance) {
    const patterns = new Map<string, RoutePattern>();
    app.decorate('routeTable', () =>
      [...patterns.entries()].flatMap(([url, { methods }]) => [...methods].filter((m) => m !== 'HEAD').map((method) => ({ method, url }))),
    );
    app.addHook('onRoute', (route) => {
      if (route.url === '*') return;
      const entry = patterns.get(route.url) ?? { regex: routePattern(route.url), methods: new Set<string>() };
      for (const method of [route.method].flat()) entry.methods.add(method);
      patterns.set(route.url, entry);
    });

    app.setErrorHandler((error, request, reply) => {
      const problem = toProblem(error, request);
      // A shed request is expected under load: its request line says so, without a stack per request.
      if (problem.status >= 500 && problem.code !== 'CC_OVERLOADED') request.log.error({ err: error, code: problem.code }, 'request failed');
      else request.log.debug({ code: problem.code }, 'request rejected');
      const headers = error instanceof ProblemError ? error.headers : undefined;
      return sendProblem(reply, problem, headers);
    });

    app.setNotFoundHandler({ preHandler: app.rateLimit() }, (request, reply) => {
      const path = request.url.split('?')[0] ?? '/';
      const allowed = new Set<string>();
      for (const pattern of patterns.values()) {
        if (pattern.regex.test(path)) for (const method of pattern.methods) allowed.add(method);
      }
      if (allowed.size > 0) {
        const allow = [...allowed].sort().join(', ');
        const error = new ProblemError('CC_METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}; use ${allow}.`);
        return sendProblem(reply, toProblem(error, request), { allow });
      }
      const error = new ProblemError('CC_ROUTE_NOT_FOUND', `No route ${request.method} ${path}. GET /openapi.json lists the routes.`);
      return sendProblem(reply, toProblem(error, request));
    });
  },
  { name: 'problem', dependencies: ['@fastify/rate-limit'] },
);
