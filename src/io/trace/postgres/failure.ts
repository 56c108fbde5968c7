/**
 * What a database failure means, said without what could leak: no connection string, no
 * password, no host name. `pg` and the network stack put those in some messages and
 * fields (`connect ECONNREFUSED 10.0.0.5:5432`, an invalid URL's `input`), so a failure
 * is only ever logged or reported through `safeDatabaseError` and `describeDatabaseFailure`.
 */

const BY_CODE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EPIPE: 'connection lost',
  ENOENT: 'no server socket',
  '28P01': 'password authentication failed',
  '28000': 'not authorized',
  '3D000': 'database does not exist',
  '42501': 'permission denied',
  '42P01': 'trace tables missing',
  '53100': 'disk full',
  '53200': 'out of memory',
  '53300': 'too many connections',
  '25006': 'read-only transaction (a standby?)',
  '57P01': 'server shutting down',
  '57P02': 'server crashed',
  '57P03': 'server starting or shutting down',
  '57014': 'statement timed out',
  '08006': 'connection failure',
  '08001': 'cannot connect',
  '40P01': 'deadlock',
  EMIGRATION: 'schema is newer than this release',
  ESEGMENT: 'trace segment removed under the writer',
};

/** Messages `pg` throws without a code, matched by their start. */
const BY_MESSAGE: Array<[RegExp, string, string]> = [
  [/^Connection terminated/i, 'connection lost', 'ECONNLOST'],
  [/^timeout exceeded when trying to connect/i, 'connection timed out', 'ETIMEDOUT'],
  [/^Query read timeout/i, 'query timed out', 'ETIMEDOUT'],
  [/^Client has encountered a connection error/i, 'connection lost', 'ECONNLOST'],
  [/^Client was closed/i, 'connection closed', 'ECONNLOST'],
  [/password/i, 'password authentication failed', '28P01'],
];

/** The error's code (SQLSTATE or errno), or one derived from a code-less `pg` message. */
export function databaseErrorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{2,32}$/.test(code)) return code;
  const message = error instanceof Error ? error.message : '';
  for (const [pattern, , derived] of BY_MESSAGE) if (pattern.test(message)) return derived;
  // An AggregateError (several addresses tried) carries the codes of its parts.
  const inner = (error as { errors?: unknown[] } | null)?.errors?.[0];
  return inner === undefined ? 'error' : databaseErrorCode(inner);
}

function reasonFor(code: string, error: unknown): string {
  if (BY_CODE[code]) return BY_CODE[code]!;
  const message = error instanceof Error ? error.message : '';
  for (const [pattern, reason] of BY_MESSAGE) if (pattern.test(message)) return reason;
  return 'database error';
}

/** A reason fit for `/readyz` and a 503 detail: the variable to check, what happened and its code. */
export function describeDatabaseFailure(error: unknown): string {
  const code = databaseErrorCode(error);
  return `trace database is unavailable (TRACE_DATABASE_URL): ${reasonFor(code, error)} (${code})`;
}

/** A failure as it may be logged: its code, a safe reason, and for a SQL error the server's own message (which never holds the URL). */
export class TraceDatabaseError extends Error {
  override readonly name = 'TraceDatabaseError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The error to log and to hand on: the cause's code and a message without connection details. */
export function safeDatabaseError(error: unknown): TraceDatabaseError {
  if (error instanceof TraceDatabaseError) return error;
  const code = databaseErrorCode(error);
  // A server error (SQLSTATE, five characters) says what the server refused; it never holds the URL.
  const sqlState = /^[0-9A-Z]{5}$/.test(code) && typeof (error as { severity?: unknown } | null)?.severity === 'string';
  const detail = sqlState && error instanceof Error ? `: ${error.message.slice(0, 300)}` : '';
  return new TraceDatabaseError(code, `${reasonFor(code, error)} (${code})${detail}`);
}
