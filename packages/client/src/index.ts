import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import type {
  Compiled,
  CompileRequest,
  Health,
  PersonaCompiled,
  PersonaContextQuery,
  Personas,
  Problem,
  Ready,
  RealtimeSession,
  RunList,
  RunTrace,
  TopicCompiled,
  TopicContextQuery,
  TraceOutcome,
} from './types.js';

/**
 * A typed client for context-compiler, for the voice server and other hosts. It owns a
 * keep-alive undici Pool, puts an explicit deadline on every call (undici's defaults are
 * 300 s), always consumes response bodies so sockets return to the pool, and turns
 * RFC 9457 problems into `ContextCompilerError`s with status, code and detail.
 *
 * The common calls answer with the compile itself: `context()`, `topic()` and `compile()`
 * never return "not modified", so there is no union to narrow. The conditional forms
 * (`contextIfChanged()`, ...) take an ETag and may answer `{ notModified: true }`.
 */

export type * from './types.js';

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

/**
 * `GET /context/:persona` options, as the route takes them (one `topicId`; the format is the
 * method's), with `hud: true` to add the heads-up display of the files the compile read.
 */
export type ContextQuery = Omit<PersonaContextQuery, 'format' | 'topicId' | 'hud'> & { topicId?: string; hud?: boolean };
/** `GET /context/topic/:topicId` options. */
export type TopicQuery = Omit<TopicContextQuery, 'format'>;

/**
 * Per call: correlation with the caller's own request. `requestId` is sent as
 * `x-request-id` and `traceparent` (W3C trace context) as `traceparent`; the service records
 * both in the run's trace event and its log line when they are well formed, and ignores
 * them otherwise.
 */
export interface CallContext {
  requestId?: string;
  traceparent?: string;
}

/** `POST /compile` per call: the correlation ids, and `hud: true` to add the heads-up display. */
export interface CompileOptions extends CallContext {
  hud?: boolean;
}

/** `GET /runs/:runId/trace` options. */
export interface TraceOptions {
  /** Mark brain files that changed since the run (`?verify=sources`). */
  verifySources?: boolean;
  /** Events per page (1-100; the service's default is 20). */
  limit?: number;
  /** `nextCursor` of the page before. */
  cursor?: string;
}

export interface RunsQuery {
  limit?: number;
  cursor?: string;
  persona?: string;
  worker?: string;
  /** The HTTP status delivered, e.g. 200, 304, 422, 503. */
  status?: number;
  outcome?: TraceOutcome;
}

/** The answer of a conditional call whose ETag still holds: the prompt is the one the caller has. */
export interface NotModified {
  notModified: true;
  etag: string | null;
  runId: string | null;
}

/** A delivered compile, with the response's ETag for a later conditional call. */
export type WithEtag<T> = T & { etag: string | null };
export type PersonaContext = WithEtag<PersonaCompiled>;
export type TopicContext = WithEtag<TopicCompiled>;
export type CompileResult = WithEtag<Compiled>;
export type PersonaName = 'mars' | 'venus' | (string & {});

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

  /** A compile answer; with an ETag, `{ notModified: true }` when it still holds. */
  async function compiled<T>(path: string, callOptions: CallOptions, etag: string | null = null): Promise<WithEtag<T> | NotModified> {
    const answer = await call(path, { ...callOptions, headers: { ...callOptions.headers, ...(etag === null ? {} : { 'if-none-match': etag }) } });
    const answerEtag = header(answer.headers, 'etag');
    if (answer.status === 304) return { notModified: true, etag: answerEtag, runId: header(answer.headers, 'x-run-id') };
    return { ...parseJson<T>(answer), etag: answerEtag };
  }

  /** Without an ETag the server never answers 304, so the answer is the compile itself. */
  async function fresh<T>(path: string, callOptions: CallOptions): Promise<WithEtag<T>> {
    const answer = await compiled<T>(path, callOptions);
    if ('notModified' in answer) throw new ContextCompilerError(304, 'CC_CLIENT_BAD_RESPONSE', 'not modified, but no ETag was sent', null);
    return answer;
  }

  const contextPath = (persona: PersonaName) => `/context/${encodeURIComponent(persona)}`;
  const topicPath = (topicId: string) => `/context/topic/${encodeURIComponent(topicId)}`;

  const contextQuery = ({ hud, ...rest }: ContextQuery) => ({ ...rest, ...(hud === true ? { hud: '1' } : {}) });
  const context = (persona: PersonaName, query: ContextQuery = {}, callContext: CallContext = {}) =>
    fresh<PersonaCompiled>(contextPath(persona), { query: contextQuery(query), headers: correlation(callContext) });
  const compileCall = ({ hud, ...callContext }: CompileOptions, body: CompileRequest): CallOptions => ({
    method: 'POST',
    body,
    query: hud === true ? { hud: '1' } : {},
    headers: correlation(callContext),
  });

  return {
    health: () => json<Health>('/healthz'),
    /** `GET /readyz`; a service that is not ready answers 503, thrown as a `ContextCompilerError`. */
    ready: () => json<Ready>('/readyz'),
    metrics: async () => (await call('/metrics')).text,
    openapi: () => json<Record<string, unknown>>('/openapi.json'),
    personas: () => json<Personas>('/personas'),
    /** `GET /context/:persona` — the compiled voice persona prompt: prompts, digests, voice, tools, `session`, warnings. */
    context,
    /** `GET /context/:persona` with `If-None-Match: etag`: `{ notModified: true }` while the prompt the caller has still holds. */
    contextIfChanged: (persona: PersonaName, etag: string | null, query: ContextQuery = {}, callContext: CallContext = {}) =>
      compiled<PersonaCompiled>(contextPath(persona), { query: contextQuery(query), headers: correlation(callContext) }, etag),
    /**
     * `GET /context/:persona`, reduced to its `session`: the object to send to the realtime
     * calls endpoint or `session.update` as it is (add your model). A bad or missing
     * `topicId` still connects, with the persona's generic context.
     */
    realtimeSession: async (persona: PersonaName, query: ContextQuery = {}, callContext: CallContext = {}): Promise<RealtimeSession> =>
      (await context(persona, query, callContext)).session,
    /** `GET /context/:persona?format=text` — just the instructions, as text. */
    contextText: async (persona: PersonaName, query: ContextQuery = {}, callContext: CallContext = {}) =>
      (await call(contextPath(persona), { query: { ...contextQuery(query), format: 'text' }, headers: correlation(callContext) })).text,
    /** `GET /context/topic/:topicId` — the topic block alone, compiled and traced. */
    topic: (topicId: string, query: TopicQuery = {}, callContext: CallContext = {}) =>
      fresh<TopicCompiled>(topicPath(topicId), { query: { ...query }, headers: correlation(callContext) }),
    topicIfChanged: (topicId: string, etag: string | null, query: TopicQuery = {}, callContext: CallContext = {}) =>
      compiled<TopicCompiled>(topicPath(topicId), { query: { ...query }, headers: correlation(callContext) }, etag),
    /** `POST /compile` — a worker's prompt for a start or a turn; `{ hud: true }` adds the HUD. */
    compile: (body: CompileRequest, options: CompileOptions = {}) => fresh<Compiled>('/compile', compileCall(options, body)),
    compileIfChanged: (body: CompileRequest, etag: string | null, options: CompileOptions = {}) => compiled<Compiled>('/compile', compileCall(options, body), etag),
    /** `GET /runs/:runId/trace`: one page of the run's events (`nextCursor` names the next; null on the last). */
    trace: (runId: string, options: TraceOptions = {}) => json<RunTrace>(`/runs/${encodeURIComponent(runId)}/trace`, { query: traceQuery(options) }),
    /** Every page of a run, in order, one at a time: `for await (const page of client.tracePages(runId))`. */
    async *tracePages(runId: string, options: TraceOptions = {}): AsyncGenerator<RunTrace> {
      let cursor = options.cursor;
      do {
        const page = await json<RunTrace>(`/runs/${encodeURIComponent(runId)}/trace`, { query: traceQuery({ ...options, ...(cursor === undefined ? {} : { cursor }) }) });
        yield page;
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    },
    runs: (query: RunsQuery = {}) => json<RunList>('/runs', { query: { ...query } }),
    /** Closes the pool; in-flight calls finish first. */
    close: () => pool.close(),
  };
}

export type ContextCompilerClient = ReturnType<typeof createClient>;

function traceQuery({ verifySources, limit, cursor }: TraceOptions): Record<string, string | number | undefined> {
  return { ...(verifySources ? { verify: 'sources' } : {}), limit, cursor };
}

/** The correlation headers of one call: only those the caller gave. */
function correlation({ requestId, traceparent }: CallContext): Record<string, string> {
  return { ...(requestId === undefined ? {} : { 'x-request-id': requestId }), ...(traceparent === undefined ? {} : { traceparent }) };
}

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
