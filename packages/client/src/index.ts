import { createCatchUps } from './catch-up.js';
import { createFallbackCounts, type FallbackCount } from './fallback-counts.js';
import { ContextCompilerError } from './errors.js';
import { createLastKnownGood } from './last-known-good.js';
import {
  checkedSession,
  connectSession,
  GEMINI_SETUP,
  lastKnownGoodKey,
  REALTIME_SESSION,
  realtimeOptions,
  type FallbackEvent,
  type GeminiSetupResult,
  type RealtimeOptions,
  type RealtimeSessionResult,
  type ServedSession,
  type SessionResult,
  type SessionShape,
} from './realtime.js';
import { asRefresh, type Refresh } from './refresh.js';
import { createTransport, DEFAULT_MAX_BODY_BYTES, header, parseJson, TRACE_BODY_BYTES, type CallOptions, type TransportOptions } from './transport.js';
import type {
  Compiled,
  CompileRequest,
  GeminiSetup,
  Health,
  PersonaCompiled,
  PersonaContextQuery,
  PersonaRefresh,
  Personas,
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
 *
 * `realtimeSession()` is the voice server's call, and the one that never throws: within a
 * budget it returns the service's session, else the last one it answered for the same
 * persona and query (with a new clock line), else the persona's static session
 * (./realtime.ts). Every other call throws a `ContextCompilerError` when it fails.
 */

export type * from './types.js';
export { ContextCompilerError, type ClientErrorCode, type ProblemDetails } from './errors.js';
export { SERVICE_MAJOR, type ClientLogger } from './compatibility.js';
export {
  DEFAULT_PERSONA,
  DEFAULT_PROMPT_LIMIT_CHARS,
  DEFAULT_SESSION_BUDGET_MS,
  DEFAULT_STALE_MAX_AGE_MS,
  type FallbackEvent,
  type FallbackReason,
  type GeminiSetupResult,
  type RealtimeOptions,
  type RealtimeSessionResult,
  type SessionResult,
  type SessionSource,
  type StaticPersona,
} from './realtime.js';
export type { FallbackCount } from './fallback-counts.js';
export { LAST_KNOWN_GOOD_CHARS, LAST_KNOWN_GOOD_ENTRIES } from './last-known-good.js';
export { DEFAULT_MAX_BODY_BYTES, TRACE_BODY_BYTES } from './transport.js';

/** How `realtimeSession()` and `geminiSetup()` connect a call, for the whole client. */
export interface ClientRealtimeOptions extends RealtimeOptions {
  /**
   * A file that keeps the last live session per persona and query across restarts of the
   * host: read when the client is created, rewritten (atomically, mode 0600) after each new
   * session. It holds compiled prompts: put it where only the host's user can read. A file
   * that cannot be read, is too large or is not one this client wrote is ignored, with a
   * process warning (`CC_CLIENT_LAST_KNOWN_GOOD`). Default: kept in memory only.
   */
  lastKnownGoodFile?: string;
}

export { liveConfig, type LiveConfig, type LiveEnums, type LiveSchema } from './gemini-live.js';
export type { ClientContentRefresh, ConversationItemRefresh, ReconnectRefresh, Refresh } from './refresh.js';

export interface ClientOptions extends TransportOptions {
  /** How `realtimeSession()` connects a call: its budget, fallback, default persona, `onFallback`, and where the last live sessions are kept. */
  realtime?: ClientRealtimeOptions;
}

/**
 * `GET /context/:persona` options, as the route takes them (one `topicId`; the format and the
 * view are the method's), with `hud: true` to add the heads-up display of the files the compile read.
 */
export type ContextQuery = Omit<PersonaContextQuery, 'format' | 'view' | 'topicId' | 'hud'> & { topicId?: string; hud?: boolean };
/** `realtimeSession()` and `geminiSetup()` options: a connect asks for the lean answer (`view=session`), which carries no HUD. */
export type SessionQuery = Omit<ContextQuery, 'hud'>;
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

/** `realtimeSession()` per call: the correlation ids, and any realtime option the client's own would give. */
export interface RealtimeSessionOptions extends CallContext, RealtimeOptions {}

/**
 * `refresh()` per call: the ETag of the last refresh (sent as `If-None-Match`, so an answer
 * the session already has is a 304), the event's provider and the realtime model (default:
 * the connect's; the model chooses the delivery), the connect's `topicName` when it had one,
 * and the correlation ids.
 */
export interface RefreshOptions extends CallContext {
  etag?: string | null;
  provider?: 'openai' | 'gemini' | 'azure';
  model?: string;
  topicName?: string;
  now?: string;
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
  /** Only this run. */
  runId?: string;
  /** Only the run holding an event of this request (the x-request-id in a log line). */
  requestId?: string;
  /** Only runs holding an event of this W3C trace: a whole traceparent, or its 32-hex trace id. */
  traceparent?: string;
  /** Only runs whose latest event was traced at or after this instant (ISO 8601). */
  from?: string;
  /** Only runs whose latest event was traced before this instant (ISO 8601). */
  to?: string;
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
/** A refresh's answer, by delivery (`Refresh`): narrow on `delivery` before sending. */
export type RefreshResult = Refresh;
export type TopicContext = WithEtag<TopicCompiled>;
export type CompileResult = WithEtag<Compiled>;
export type PersonaName = 'mars' | 'venus' | (string & {});

export function createClient(options: ClientOptions) {
  const call = createTransport(options);
  const { lastKnownGoodFile, ...clientRealtime } = options.realtime ?? {};
  // Checked once here, so a bad option fails at start, not at a call's first fallback.
  realtimeOptions(clientRealtime);
  const lastKnownGood = createLastKnownGood(lastKnownGoodFile);
  const traceBodyBytes = Math.max(options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, TRACE_BODY_BYTES);

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

  const catchUps = createCatchUps();
  const fallbackCounts = createFallbackCounts();
  /**
   * A connect's result with the call's run: the service's, or — on a fallback — the id the
   * client made for it, remembered with what the call was given so its first refresh after
   * the service recovers catches it up (./catch-up.ts).
   */
  function callRun<S>(result: SessionResult<S>, query: ContextQuery & { runId: string }): SessionResult<S> & { runId: string } {
    if (result.source === 'service' && result.runId !== null) return { ...result, runId: result.runId };
    const baseline = result.source === 'stale' && result.stale !== null ? { source: 'stale' as const, runId: result.stale.runId } : { source: 'static' as const };
    catchUps.remember(query.runId, result.persona, baseline, query);
    return { ...result, runId: query.runId };
  }

  const contextPath = (persona: PersonaName) => `/context/${encodeURIComponent(persona)}`;
  const topicPath = (topicId: string) => `/context/topic/${encodeURIComponent(topicId)}`;

  const contextQuery = ({ hud, ...rest }: ContextQuery) => ({ ...rest, ...(hud === true ? { hud: '1' } : {}) });

  /**
   * What the service answers for `persona` in the shape's member (`session`, or Gemini's
   * `setup`), checked before anything of it is used: the lean answer (`view=session`), only
   * what a connect uses, a quarter of the full answer's bytes.
   */
  async function served<S>(persona: PersonaName, query: SessionQuery, headers: Record<string, string>, limitMs: number, shape: SessionShape<S>, promptLimitChars: number): Promise<ServedSession<S>> {
    // A HUD is the full answer's: a caller's `hud` (not in the type, but JavaScript may pass it) is not sent.
    const { hud: _hud, ...asked } = query as ContextQuery;
    const answer = await call(contextPath(persona), { query: { ...asked, view: 'session' }, headers, timeoutMs: limitMs });
    return checkedSession(shape, parseJson<unknown>(answer), answer.status, query.runId, promptLimitChars);
  }

  /** `realtimeSession()` and `geminiSetup()`: one connect in `shape`, with the options in force. */
  function connect<S>(shape: SessionShape<S>, persona: PersonaName, query: SessionQuery, perCall: RealtimeSessionOptions) {
    const { requestId, traceparent, ...realtime } = perCall;
    const headers = correlation({ requestId, traceparent });
    const options = realtimeOptions(clientRealtime, realtime);
    // Every fallback is counted, whatever onFallback is in force for this call (and if it throws).
    const inForce = {
      ...options,
      onFallback: (event: FallbackEvent) => {
        fallbackCounts.add(event);
        return options.onFallback?.(event);
      },
    };
    // The call's run from the start: the caller's, else one made here, so a fallback call's first refresh can open it.
    const callQuery = { ...query, runId: query.runId ?? crypto.randomUUID() };
    return connectSession<S>(
      (name, limitMs) => served(name, callQuery, headers, limitMs, shape, inForce.promptLimitChars),
      shape,
      { persona, now: query.now, timezone: query.timezone, keyOf: (name) => lastKnownGoodKey(shape.member, name, query) },
      inForce,
      lastKnownGood,
    ).then((result) => callRun(result, callQuery));
  }
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
     * The session to connect a call with: `GET /context/:persona?view=session`'s `session` within the
     * budget (default 1 s for the whole call), else its last session for the persona and
     * query with the clock line of now (`source: 'stale'`, from the same day and at most
     * `staleMaxAgeMs` old), else the persona's static session, never a throw (unless
     * `fallback: false`). Every answer is checked first (`maxBodyBytes`, its shape,
     * `promptLimitChars`, the `runId` asked): a bad one is an `invalid-answer` fallback. `result.session` is the object to send to the
     * realtime calls endpoint or `session.update` as it is (add your model); `source`,
     * `fallback` and `warnings` say how it was made, and `onFallback` is told of every
     * fallback. An unknown persona connects as `defaultPersona` (venus); a bad or missing
     * `topicId` connects with the persona's generic context.
     */
    realtimeSession: (persona: PersonaName, query: SessionQuery = {}, sessionOptions: RealtimeSessionOptions = {}): Promise<RealtimeSessionResult> =>
      connect<RealtimeSession>(REALTIME_SESSION, persona, { ...query, provider: query.provider === 'azure' ? 'azure' : 'openai' }, sessionOptions),
    /**
     * `realtimeSession()`'s twin for Gemini Live: `GET /context/:persona?provider=gemini&view=session`'s
     * `setup` within the same budget, else its last live setup for the query (stale), else the persona's static Gemini setup — with the same
     * fallbacks, `onFallback`, `warnings` and `defaultPersona`, never a throw (unless
     * `fallback: false`). Send `{setup: {model, ...result.setup}}` first on the Live API
     * WebSocket, or pass `result.setup` as `config` to `ai.live.connect`.
     */
    geminiSetup: async (persona: PersonaName, query: Omit<SessionQuery, 'provider'> = {}, setupOptions: RealtimeSessionOptions = {}): Promise<GeminiSetupResult> => {
      const { session: setup, ...result } = await connect<GeminiSetup>(GEMINI_SETUP, persona, { ...query, provider: 'gemini' }, setupOptions);
      return { setup, ...result };
    },
    /**
     * The calls of `realtimeSession()` and `geminiSetup()` that did not get the service's
     * session for the persona asked, since this client was created, by the persona served,
     * `source` and `reason` (a copy): for the voice server's own metrics, read at each scrape
     * (`cc_client_fallbacks_total`; docs/voice-server.md).
     */
    fallbackCounts: (): FallbackCount[] => fallbackCounts.list(),
    /**
     * `GET /context/:persona/refresh` — mid-call: what changed in the persona's live context
     * since the connect of run `runId` (the `runId` of `realtimeSession()`, `geminiSetup()` or
     * `context()`), as `{text, event, etag, ...}` — send `event` on the session as it is — or
     * `{ notModified: true }` when nothing changed (or nothing since `options.etag`). Throws a
     * `ContextCompilerError` when it fails; a call goes on without a refresh.
     */
    refresh: async (persona: PersonaName, runId: string, refreshOptions: RefreshOptions = {}): Promise<Refresh | NotModified> => {
      const { etag = null, requestId, traceparent, ...query } = refreshOptions;
      const catchUp = catchUps.queryFor(runId, persona);
      const answer = await compiled<PersonaRefresh>(`${contextPath(persona)}/refresh`, { query: { runId, ...catchUp, ...query }, headers: correlation({ requestId, traceparent }) }, etag);
      catchUps.forget(runId);
      return 'notModified' in answer ? answer : asRefresh(answer, 200);
    },
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
    trace: (runId: string, options: TraceOptions = {}) => json<RunTrace>(`/runs/${encodeURIComponent(runId)}/trace`, { query: traceQuery(options), maxBodyBytes: traceBodyBytes }),
    /** Every page of a run, in order, one at a time: `for await (const page of client.tracePages(runId))`. */
    async *tracePages(runId: string, options: TraceOptions = {}): AsyncGenerator<RunTrace> {
      let cursor = options.cursor;
      do {
        const page = await json<RunTrace>(`/runs/${encodeURIComponent(runId)}/trace`, { query: traceQuery({ ...options, ...(cursor === undefined ? {} : { cursor }) }), maxBodyBytes: traceBodyBytes });
        yield page;
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    },
    runs: (query: RunsQuery = {}) => json<RunList>('/runs', { query: { ...query } }),
    /** Closes the pool (in-flight calls finish first), and finishes writing `lastKnownGoodFile`. */
    close: async () => {
      await call.close();
      await lastKnownGood.flush();
    },
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
