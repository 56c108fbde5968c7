import type { Problem } from './types.js';

/** Codes the client adds for failures that never reached a server answer. */
export type ClientErrorCode = 'CC_CLIENT_TIMEOUT' | 'CC_CLIENT_NETWORK' | 'CC_CLIENT_BAD_RESPONSE';

/** A problem as the service writes it; any member may be missing from a proxy's error page. */
export type ProblemDetails = Partial<Problem>;

export class ContextCompilerError extends Error {
  override readonly name = 'ContextCompilerError';
  constructor(
    /** HTTP status, or 0 when no response arrived. */
    readonly status: number,
    /** The server's `CC_*` code, or a `CC_CLIENT_*` code. */
    readonly code: string,
    readonly detail: string,
    readonly problem: ProblemDetails | null,
    /**
     * Seconds to wait before trying again, from the answer's `Retry-After` (delay-seconds)
     * on any problem that sends one: a 429 rate limit, a 503 while the service is overloaded,
     * shutting down or cannot make its trace durable. null when there is none.
     */
    readonly retryAfterSeconds: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(`${status ? `${status} ` : ''}${code}: ${detail}`, options);
  }
}
