/**
 * The error catalog. Every error a caller can see has a stable `code` (`CC_` + what
 * happened), an HTTP status and a title; the root error handler turns it into an
 * RFC 9457 problem. Core code throws these; IO code wraps causes with `{ cause }`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9457
 */

export interface FieldError {
  /** JSON-pointer-like path of the offending field, e.g. `/body/worker` or `/query/now`. */
  path: string;
  message: string;
}

export interface ProblemOptions {
  errors?: FieldError[];
  cause?: unknown;
  /** Extra members copied into the problem body (e.g. `block`, `limit`, `hint`). */
  extensions?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly errors: FieldError[] | undefined;
  readonly extensions: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  // Plain fields, not getters: Fastify assigns `statusCode` on validation errors.
  statusCode: number;
  readonly title: string;

  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    options: ProblemOptions = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.errors = options.errors;
    this.extensions = options.extensions;
    this.headers = options.headers;
    this.statusCode = CATALOG[code].status;
    this.title = CATALOG[code].title;
  }
}

export const CATALOG = {
  CC_BAD_REQUEST: { status: 400, title: 'Bad request' },
  CC_VALIDATION_FAILED: { status: 400, title: 'Request validation failed' },
  CC_UNSAFE_ID: { status: 400, title: 'Unsafe identifier' },
  CC_INVALID_JSON: { status: 400, title: 'Malformed JSON body' },
  CC_UNAUTHORIZED: { status: 401, title: 'Authentication required' },
  CC_HOST_NOT_ALLOWED: { status: 403, title: 'Host not allowed' },
  CC_ORIGIN_NOT_ALLOWED: { status: 403, title: 'Origin not allowed' },
  CC_NOT_FOUND: { status: 404, title: 'Not found' },
  CC_ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  CC_METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  CC_NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  CC_REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  CC_RUN_OWNED: { status: 409, title: 'Run belongs to another caller' },
  CC_RUN_FULL: { status: 409, title: 'Run is full' },
  CC_PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  CC_BODY_TOO_LARGE: { status: 413, title: 'Request body too large' },
  CC_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  CC_HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large' },
  CC_BUDGET_EXCEEDED: { status: 422, title: 'Prompt budget exceeded' },
  CC_UNPROCESSABLE: { status: 422, title: 'Unprocessable request' },
  CC_ROLE_NOT_ADMITTED: { status: 422, title: 'Role not admitted' },
  CC_RATE_LIMITED: { status: 429, title: 'Too many requests' },
  CC_INTERNAL: { status: 500, title: 'Internal error' },
  CC_TRACE_UNAVAILABLE: { status: 503, title: 'Trace store unavailable' },
  CC_NOT_READY: { status: 503, title: 'Not ready' },
  CC_SHUTTING_DOWN: { status: 503, title: 'Shutting down' },
  CC_OVERLOADED: { status: 503, title: 'Overloaded' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof CATALOG;

/** Maps an HTTP status that did not come from our catalog to the closest code. */
export function codeForStatus(status: number): ErrorCode {
  const byStatus: Record<number, ErrorCode> = {
    400: 'CC_BAD_REQUEST',
    401: 'CC_UNAUTHORIZED',
    404: 'CC_NOT_FOUND',
    405: 'CC_METHOD_NOT_ALLOWED',
    406: 'CC_NOT_ACCEPTABLE',
    408: 'CC_REQUEST_TIMEOUT',
    412: 'CC_PRECONDITION_FAILED',
    413: 'CC_BODY_TOO_LARGE',
    415: 'CC_UNSUPPORTED_MEDIA_TYPE',
    422: 'CC_UNPROCESSABLE',
    429: 'CC_RATE_LIMITED',
    431: 'CC_HEADERS_TOO_LARGE',
    503: 'CC_NOT_READY',
  };
  return byStatus[status] ?? (status >= 500 ? 'CC_INTERNAL' : 'CC_BAD_REQUEST');
}
