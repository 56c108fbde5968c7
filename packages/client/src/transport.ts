import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { createVersionCheck, type ClientLogger } from './compatibility.js';
import { ContextCompilerError, type ProblemDetails } from './errors.js';

/**
 * How the client talks HTTP: one keep-alive undici `Pool` per client, an explicit deadline on
 * every call (undici's own defaults are 300 s) kept by one timer that is cleared when the call
 * settles, bodies always consumed so sockets return to the pool, and RFC 9457 problems,
 * timeouts and network failures turned into `ContextCompilerError`s.
 */

export interface TransportOptions {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** A bearer token from CONTEXT_COMPILER_TOKENS; omit for a loopback service without tokens. */
  token?: string;
  /** Deadline for a whole call: connect, headers and body. Default 5000 ms. */
  timeoutMs?: number;
  /** Keep-alive connections in the pool. Default 8. */
  connections?: number;
  /**
   * The most bytes an answer body may have; the client stops reading past it (the call is a
   * `CC_CLIENT_BAD_RESPONSE`). Default 1 MiB. Trace pages may hold up to `TRACE_BODY_BYTES`.
   */
  maxBodyBytes?: number;
  /** Where the client warns, once, of a service of another major version than it was built for; default Node's `process.emitWarning`. */
  logger?: ClientLogger;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** A trace page ends once its events hold 1,000,000 characters: about 2 MB of JSON, more for text outside ASCII. */
export const TRACE_BODY_BYTES = 8 * 1024 * 1024;

export interface CallOptions {
  method?: 'GET' | 'POST';
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** A deadline shorter than the client's `timeoutMs` (a realtime session's budget left). */
  timeoutMs?: number;
  /** A body cap other than the client's `maxBodyBytes` (a trace page's). */
  maxBodyBytes?: number;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A call: any answer under 400, else a thrown `ContextCompilerError`; `close()` closes the pool. */
export type Transport = ((path: string, callOptions?: CallOptions) => Promise<Answer>) & { close(): Promise<void> };

export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) throw new TypeError(`maxBodyBytes must be a positive whole number of bytes, not ${String(maxBodyBytes)}`);
  const prefix = base.pathname.replace(/\/$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 8,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connectTimeout: Math.min(timeoutMs, 10_000),
    keepAliveTimeout: 10_000,
  });
  const authorization = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const checkVersion = createVersionCheck(options.logger);

  async function call(path: string, callOptions: CallOptions = {}): Promise<Answer> {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(callOptions.query ?? {})) if (value !== undefined) search.set(key, String(value));
    const fullPath = `${prefix}${path}${search.size > 0 ? `?${search}` : ''}`;
    const limitMs = Math.max(0, Math.min(callOptions.timeoutMs ?? timeoutMs, timeoutMs));
    if (limitMs === 0) throw new ContextCompilerError(0, 'CC_CLIENT_TIMEOUT', 'no time left for a call', null);
    // One timer per call, cleared when it settles: the client never leaves a timer behind.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), limitMs);
    try {
      return await send(fullPath, callOptions, deadline.signal, limitMs);
    } finally {
      clearTimeout(timer);
    }
  }

  async function send(fullPath: string, callOptions: CallOptions, signal: AbortSignal, limitMs: number): Promise<Answer> {
    const request: Dispatcher.RequestOptions = {
      path: fullPath,
      method: callOptions.method ?? 'GET',
      headers: {
        accept: 'application/json, application/problem+json, text/plain',
        ...authorization,
        ...(callOptions.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...callOptions.headers,
      },
      body: callOptions.body === undefined ? null : JSON.stringify(callOptions.body),
      signal,
    };
    let response: Dispatcher.ResponseData;
    try {
      response = await pool.request(request);
    } catch (error) {
      throw transportError(error, signal, limitMs);
    }
    checkVersion(header(response.headers, 'x-context-compiler-version'));
    let text: string;
    try {
      text = await bodyText(response, callOptions.maxBodyBytes ?? maxBodyBytes);
    } catch (error) {
      if (error instanceof ContextCompilerError) throw error;
      throw transportError(error, signal, limitMs);
    }
    if (response.statusCode >= 400) throw problemError(response.statusCode, response.headers, text);
    return { status: response.statusCode, headers: response.headers, text };
  }

  return Object.assign(call, { close: () => pool.close() });
}

/**
 * The body as text, read chunk by chunk up to `cap` bytes: past it (or when Content-Length
 * says it will be) the body is destroyed, which aborts the request and closes its socket, so
 * an answer of any size costs at most `cap` bytes of memory.
 */
async function bodyText(response: Dispatcher.ResponseData, cap: number): Promise<string> {
  const tooLarge = () => new ContextCompilerError(response.statusCode, 'CC_CLIENT_BAD_RESPONSE', `the answer body is over ${cap} bytes; the client stopped reading it`, null);
  const declared = Number(header(response.headers, 'content-length') ?? Number.NaN);
  if (declared > cap) {
    response.body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // Leaving the loop early (the throw) destroys the stream.
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

export function header(headers: Answer['headers'], name: string): string | null {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

export function parseJson<T>(answer: Answer): T {
  try {
    return JSON.parse(answer.text) as T;
  } catch (error) {
    throw new ContextCompilerError(answer.status, 'CC_CLIENT_BAD_RESPONSE', 'the response body is not JSON', null, null, { cause: error });
  }
}

function problemError(status: number, headers: Answer['headers'], text: string): ContextCompilerError {
  const retryAfter = Number(header(headers, 'retry-after'));
  const retryAfterSeconds = Number.isFinite(retryAfter) && header(headers, 'retry-after') !== null ? retryAfter : null;
  let problem: ProblemDetails | null = null;
  if (/^application\/(problem\+)?json/.test(header(headers, 'content-type') ?? '')) {
    try {
      problem = JSON.parse(text) as ProblemDetails;
    } catch {
      problem = null;
    }
  }
  return new ContextCompilerError(
    status,
    typeof problem?.code === 'string' ? problem.code : `HTTP_${status}`,
    typeof problem?.detail === 'string' ? problem.detail : text.slice(0, 200) || `HTTP ${status}`,
    problem,
    retryAfterSeconds,
  );
}

function transportError(error: unknown, deadline: AbortSignal, timeoutMs: number): ContextCompilerError {
  const timedOut =
    deadline.aborted ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError;
  if (timedOut) return new ContextCompilerError(0, 'CC_CLIENT_TIMEOUT', `no answer within ${Math.round(timeoutMs)} ms`, null, null, { cause: error });
  return new ContextCompilerError(0, 'CC_CLIENT_NETWORK', (error as Error).message ?? 'network error', null, null, { cause: error });
}
