import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import type { z } from 'zod';
import type { CompiledResponse, RealtimeSessionSchema } from '../schemas/compiled.js';
import type { PersonaContextResponseSchema, TopicContextResponseSchema } from '../schemas/context.js';
import type { PersonasResponseSchema } from '../schemas/personas.js';
import type { RunList, RunTrace } from '../schemas/trace.js';

/**
 * A typed client for context-compiler, for the voice server and other hosts. It owns a
 * keep-alive undici Pool, puts an explicit deadline on every call (undici's defaults are
 * 300 s), always consumes response bodies so sockets return to the pool, and turns
 * RFC 9457 problems into `ContextCompilerError`s with status, code and detail.
 */

export interface ClientOptions {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** A bearer token from CONTEXT_COMPILER_TOKENS; omit for a loopback service without tokens. */
  token?: string;
  /** Deadline for a whole call: connect, headers and body. Default 5000 ms. */
  timeoutMs?: number;
  /** Keep-alive connections in the pool. Default 8. */
  connections?: number;
}

/** Codes the client adds for failures that never reached a server answer. */
export type ClientErrorCode = 'CC_CLIENT_TIMEOUT' | 'CC_CLIENT_NETWORK' | 'CC_CLIENT_BAD_RESPONSE';

export interface ProblemDetails {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  instance?: string;
  requestId?: string;
  errors?: Array<{ path: string; message: string }>;
  [extension: string]: unknown;
}

export class ContextCompilerError extends Error {
  override readonly name = 'ContextCompilerError';
  constructor(
    /** HTTP status, or 0 when no response arrived. */
    readonly status: number,
    /** The server's `CC_*` code, or a `CC_CLIENT_*` code. */
    readonly code: string,
    readonly detail: string,
    readonly problem: ProblemDetails | null,
    /** Seconds to wait, from `Retry-After` on a 429. */
    readonly retryAfterSeconds: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(`${status ? `${status} ` : ''}${code}: ${detail}`, options);
  }
}

export interface ContextQuery {
  topicId?: string;
  topicName?: string;
  timezone?: string;
  now?: string;
  runId?: string;
  sanitize?: 'ascii';
  /** The model or engine the prompt is for (a bounded slug such as `gpt-realtime`): enters `cache.routeKey` only. */
  engine?: string;
  /** Add `hud`, the heads-up display of the brain files the compile read. */
  hud?: boolean;
  /** An ETag from an earlier call: an unchanged prompt returns `{ notModified: true }`. */
  ifNoneMatch?: string;
}

export interface RunsQuery {
  limit?: number;
  cursor?: string;
  persona?: string;
  worker?: string;
  status?: string;
}

export type NotModified = { notModified: true; etag: string | null; runId: string | null };

/** A delivered compile, with the response's ETag for a later `ifNoneMatch`. */
export type WithEtag<T> = T & { etag: string | null };
export type CompileResult = WithEtag<CompiledResponse>;
export type PersonaContext = WithEtag<z.infer<typeof PersonaContextResponseSchema>>;
export type TopicContext = WithEtag<z.infer<typeof TopicContextResponseSchema>>;
export type Personas = z.infer<typeof PersonasResponseSchema>;
/** What a voice server sends to open a realtime session: `{type: "realtime", instructions, audio: {output: {voice}}, tools}`. */
export type RealtimeSession = z.infer<typeof RealtimeSessionSchema>;
export type PersonaName = 'mars' | 'venus' | (string & {});

/** `context()` without `ifNoneMatch` always answers with the prompt; with one, maybe `{ notModified: true }`. */
export interface ContextCall {
  (persona: PersonaName, query?: ContextQuery & { ifNoneMatch?: undefined }): Promise<PersonaContext>;
  (persona: PersonaName, query: ContextQuery): Promise<PersonaContext | NotModified>;
}

interface CallOptions {
  method?: 'GET' | 'POST';
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export function createClient(options: ClientOptions) {
  const base = new URL(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 5000;
  const prefix = base.pathname.replace(/\/$/, '');
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 8,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connectTimeout: Math.min(timeoutMs, 10_000),
    keepAliveTimeout: 10_000,
  });
  const authorization = options.token ? { authorization: `Bearer ${options.token}` } : {};

  async function call(path: string, callOptions: CallOptions = {}): Promise<Answer> {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(callOptions.query ?? {})) if (value !== undefined) search.set(key, String(value));
    const fullPath = `${prefix}${path}${search.size > 0 ? `?${search}` : ''}`;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = callOptions.signal ? AbortSignal.any([deadline, callOptions.signal]) : deadline;
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
      throw transportError(error, deadline, timeoutMs);
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw transportError(error, deadline, timeoutMs);
    }
    if (response.statusCode >= 400) throw problemError(response.statusCode, response.headers, text);
    return { status: response.statusCode, headers: response.headers, text };
  }

  async function json<T>(path: string, callOptions?: CallOptions): Promise<T> {
    const answer = await call(path, callOptions);
    return parseJson<T>(answer);
  }

  async function compiled<T>(path: string, callOptions: CallOptions, ifNoneMatch?: string): Promise<WithEtag<T> | NotModified> {
    const answer = await call(path, { ...callOptions, headers: ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {} });
    const etag = header(answer.headers, 'etag');
    if (answer.status === 304) return { notModified: true, etag, runId: header(answer.headers, 'x-run-id') };
    return { ...parseJson<T>(answer), etag };
  }

  const context = ((persona: PersonaName, query: ContextQuery = {}) => {
    const { ifNoneMatch, hud, ...rest } = query;
    return compiled<z.infer<typeof PersonaContextResponseSchema>>(
      `/context/${encodeURIComponent(persona)}`,
      { query: { ...rest, ...(hud === true ? { hud: '1' } : {}) } },
      ifNoneMatch,
    );
  }) as ContextCall;

  return {
    health: () => json<{ status: 'ok' }>('/healthz'),
    ready: () => json<{ status: 'ready'; checks: Array<{ name: string; ok: boolean; reason?: string }> }>('/readyz'),
    metrics: async () => (await call('/metrics')).text,
    openapi: () => json<Record<string, unknown>>('/openapi.json'),
    personas: () => json<Personas>('/personas'),
    /** `GET /context/:persona` — the compiled voice persona prompt (or `{ notModified: true }` when `ifNoneMatch` still holds). */
    context,
    /**
     * `GET /context/:persona`, reduced to its `session`: the object to send to the realtime
     * calls endpoint or `session.update` as it is (add your model). A bad or missing
     * `topicId` still connects, with the persona's generic context.
     */
    realtimeSession: async (persona: PersonaName, query: Pick<ContextQuery, 'topicId' | 'topicName' | 'timezone'> = {}): Promise<RealtimeSession> =>
      (await context(persona, { topicId: query.topicId, topicName: query.topicName, timezone: query.timezone })).session,
    /** `GET /context/:persona?format=text` — just the instructions, as text. */
    contextText: async (persona: string, query: Omit<ContextQuery, 'ifNoneMatch' | 'hud'> = {}) =>
      (await call(`/context/${encodeURIComponent(persona)}`, { query: { ...query, format: 'text' } })).text,
    /** `GET /context/topic/:topicId` — the topic block alone, compiled and traced. */
    topic: (topicId: string, query: Pick<ContextQuery, 'topicName' | 'runId' | 'sanitize' | 'ifNoneMatch'> = {}) => {
      const { ifNoneMatch, ...rest } = query;
      return compiled<z.infer<typeof TopicContextResponseSchema>>(`/context/topic/${encodeURIComponent(topicId)}`, { query: { ...rest } }, ifNoneMatch);
    },
    /** `POST /compile` — a worker's prompt for a start or a turn. */
    compile: (body: Record<string, unknown>, ifNoneMatch?: string) => compiled<CompiledResponse>('/compile', { method: 'POST', body }, ifNoneMatch),
    trace: (runId: string, options: { verifySources?: boolean } = {}) =>
      json<RunTrace>(`/runs/${encodeURIComponent(runId)}/trace`, {
        query: options.verifySources ? { verify: 'sources' } : {},
      }),
    runs: (query: RunsQuery = {}) => json<RunList>('/runs', { query: { ...query } }),
    /** Closes the pool; in-flight calls finish first. */
    close: () => pool.close(),
  };
}

export type ContextCompilerClient = ReturnType<typeof createClient>;

function header(headers: Answer['headers'], name: string): string | null {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function parseJson<T>(answer: Answer): T {
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
  if (timedOut) return new ContextCompilerError(0, 'CC_CLIENT_TIMEOUT', `no answer within ${timeoutMs} ms`, null, null, { cause: error });
  return new ContextCompilerError(0, 'CC_CLIENT_NETWORK', (error as Error).message ?? 'network error', null, null, { cause: error });
}
