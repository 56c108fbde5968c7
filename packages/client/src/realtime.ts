/**
 * `realtimeSession()`: a voice server connects a call with whatever this returns, so it always
 * returns a session the realtime API accepts (docs/voice-server.md: a context-service outage is
 * never a voice outage). Within a budget (default 1 s for the whole call) it is the service's compiled,
 * traced session; when the service is down, hung, failing, answering junk or refusing, it is
 * the last session the service answered for the same persona and query, with the clock line
 * of the moment (./last-known-good.ts), while that is from the same day and young enough; else
 * the persona's static session — what the service renders for an empty brain, generated into
 * this package (./static-sessions.ts), with the clock line of the moment. The caller is
 * told through `onFallback` and the result's `warnings`, never by a throw (unless it asks for
 * `fallback: false`). An unknown persona connects as `defaultPersona`.
 */
import { createHash } from 'node:crypto';
import { clockLine, isTimeZone } from './clock.js';
import { ContextCompilerError } from './errors.js';
import { cutAtClock, DEFAULT_STALE_MAX_AGE_MS, staleness, type ClockCut, type KeptSession, type LastKnownGood } from './last-known-good.js';
import { STATIC_SESSIONS, type StaticPersona } from './static-sessions.js';
import type { GeminiSetup, RealtimeSession } from './types.js';

export type { StaticPersona } from './static-sessions.js';

export const DEFAULT_SESSION_BUDGET_MS = 1000;
export const DEFAULT_PERSONA: StaticPersona = 'venus';
/** The longest instructions a session may carry: the service's default prompt budget (48,000), with room for the ASCII form's longer spellings (`...` for an ellipsis). */
export const DEFAULT_PROMPT_LIMIT_CHARS = 64_000;
export { DEFAULT_STALE_MAX_AGE_MS } from './last-known-good.js';

/**
 * Why a result is not the service's session for the persona asked:
 * - `timeout`: no whole answer within the budget (the service or the network is hung);
 * - `network`: no connection (the service is down, refused, reset, or the client is closed);
 * - `server-error`: a 5xx (503 while overloaded, shutting down or unable to trace);
 * - `invalid-answer`: an answer the client does not pass on: a body over `maxBodyBytes`,
 *   not JSON (a proxy's page), without a session of exactly the provider's shape, with
 *   instructions empty or over `promptLimitChars`, or another run than the `runId` asked;
 * - `unknown-persona`: the service has no such persona (a 404, or a 400 for a persona that
 *   is not a slug); the session is `defaultPersona`'s;
 * - `refused`: any other 4xx (a bad token, a rate limit, an invalid query).
 */
export type FallbackReason = 'timeout' | 'network' | 'server-error' | 'invalid-answer' | 'unknown-persona' | 'refused';

/**
 * Where a session came from: `service`, compiled and traced by the service for this call;
 * `stale`, the last session the service answered for the same persona and query, its clock
 * line made anew (nothing traced for this call); `static`, the client's static session.
 */
export type SessionSource = 'service' | 'stale' | 'static';

/** What `onFallback` is told, once per `realtimeSession()` call that did not get the service's session for the persona asked. */
export interface FallbackEvent {
  /** The persona asked for. */
  persona: string;
  /** The persona whose session was returned: `persona`, or `defaultPersona` after an unknown one. */
  servedAs: string;
  /** `service`: compiled by the service for `servedAs`; `stale`: its last such session, with a new clock line; `static`: the client's static session (no live context). */
  source: SessionSource;
  reason: FallbackReason;
  /** The failure, as `context()` would have thrown it. */
  error: ContextCompilerError;
}

/** How `realtimeSession()` connects; per client (`createClient({ realtime })`) and per call. */
export interface RealtimeOptions {
  /** The whole call — connect, answer and a retry as `defaultPersona` — in ms. Default 1000. */
  budgetMs?: number;
  /** `false`: throw a `ContextCompilerError` as `context()` does, instead of falling back. Default true. */
  fallback?: boolean;
  /** The persona an unknown one connects as (it must have a static session). Default `venus`. */
  defaultPersona?: StaticPersona;
  /**
   * The zone of a static session's clock line when the query names no `timezone` and the
   * service has not answered yet (after its first answer, the zone it answered in: the
   * operator's, from heartbeat-state or its DEFAULT_TIMEZONE). Default `UTC`.
   */
  fallbackTimezone?: string;
  /** How old (from its clock line) the last live session may be to be served in a fallback; it must be from the same day in its zone too. Default 6 h. */
  staleMaxAgeMs?: number;
  /** The longest instructions the client passes on; an answer with more is an `invalid-answer`. Default 64,000 chars. */
  promptLimitChars?: number;
  /** Told of every fallback; it may log or count (`cc_client_fallbacks_total`). What it throws is ignored. */
  onFallback?: (event: FallbackEvent) => void;
}

/** What a connect returns: the session to send, and how it was made. */
export interface SessionResult<S> {
  /** Exactly what the realtime API accepts, no more: send it as it is (add your model). */
  session: S;
  /** The persona the session is for: the one asked, or `defaultPersona` after an unknown one. */
  persona: string;
  /** `service`: compiled and traced by the service, as run `runId`; `stale`: the last such session, with a new clock line; `static`: the client's static session. */
  source: SessionSource;
  /** The call's run: the service's; for a fallback (stale or static), the query's `runId`, else one the client made at connect (the client's `realtimeSession()` and `geminiSetup()` fill it in), which holds nothing until the first refresh after the service recovers opens it. */
  runId: string | null;
  /** sha256 (hex) of the session's instructions exactly as sent, UTF-8: what the call was told. */
  instructionsSha256: string;
  /** For a stale session: the service's run that delivered it and the instant its clock line said then (ISO 8601); null otherwise. */
  stale: { runId: string; at: string } | null;
  /** Why this is not the service's session for the persona asked; null when it is. */
  fallback: FallbackReason | null;
  /** The service's warnings for the compile, then the client's own (each fallback says why). */
  warnings: string[];
}

/** What `realtimeSession()` returns: an OpenAI Realtime session, and how it was made. */
export type RealtimeSessionResult = SessionResult<RealtimeSession>;

/** What `geminiSetup()` returns: a Gemini Live setup (in `setup`), and how it was made, as for `realtimeSession()`. */
export type GeminiSetupResult = Omit<SessionResult<GeminiSetup>, 'session'> & {
  /** Exactly what Gemini Live accepts, no more: send `{setup: {model, ...setup}}`, or pass it as `config` to `ai.live.connect`. */
  setup: GeminiSetup;
};

/** A session the service answered, checked; `cut`: where its clock line is, when the answer can be kept for a fallback. */
export interface ServedSession<S> {
  session: S;
  runId: string;
  warnings: string[];
  cut: ClockCut | null;
}

/** Asks the service for `persona`'s session within `timeoutMs`, checked (`checkedSession`); throws a `ContextCompilerError`. */
export type AskService<S> = (persona: string, timeoutMs: number) => Promise<ServedSession<S>>;

/** A persona's static session at an instant and zone, in the provider's shape (`staticSession` for OpenAI). */
export type StaticSessionOf<S> = (persona: StaticPersona, now: Date, timeZone: string) => S;

export function isStaticPersona(name: unknown): name is StaticPersona {
  return typeof name === 'string' && Object.hasOwn(STATIC_SESSIONS, name);
}

/** The options in force: the call's over the client's over the defaults; a bad value is a TypeError (a programming error). */
export function realtimeOptions(...layers: ReadonlyArray<RealtimeOptions | undefined>): Required<Omit<RealtimeOptions, 'onFallback'>> & Pick<RealtimeOptions, 'onFallback'> {
  const options: Required<Omit<RealtimeOptions, 'onFallback'>> & Pick<RealtimeOptions, 'onFallback'> = {
    budgetMs: DEFAULT_SESSION_BUDGET_MS,
    fallback: true,
    defaultPersona: DEFAULT_PERSONA,
    fallbackTimezone: 'UTC',
    staleMaxAgeMs: DEFAULT_STALE_MAX_AGE_MS,
    promptLimitChars: DEFAULT_PROMPT_LIMIT_CHARS,
  };
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) if (value !== undefined) Object.assign(options, { [key]: value });
  }
  if (!(Number.isFinite(options.budgetMs) && options.budgetMs > 0)) throw new TypeError(`realtime budgetMs must be a positive number of ms, not ${String(options.budgetMs)}`);
  if (!isStaticPersona(options.defaultPersona)) throw new TypeError(`realtime defaultPersona must be one of ${Object.keys(STATIC_SESSIONS).join(', ')}`);
  if (!isTimeZone(options.fallbackTimezone)) throw new TypeError('realtime fallbackTimezone must be an IANA time zone such as UTC or Europe/London');
  if (!(Number.isFinite(options.staleMaxAgeMs) && options.staleMaxAgeMs >= 0)) throw new TypeError(`realtime staleMaxAgeMs must be 0 or more ms, not ${String(options.staleMaxAgeMs)}`);
  if (!(Number.isSafeInteger(options.promptLimitChars) && options.promptLimitChars > 0)) throw new TypeError(`realtime promptLimitChars must be a positive whole number, not ${String(options.promptLimitChars)}`);
  return options;
}

/** Why a call failed, in the terms of `FallbackReason`. */
export function fallbackReason(error: ContextCompilerError): FallbackReason {
  if (error.code === 'CC_CLIENT_BAD_RESPONSE') return 'invalid-answer';
  if (error.status === 0) return error.code === 'CC_CLIENT_TIMEOUT' ? 'timeout' : 'network';
  if (error.status >= 500) return 'server-error';
  const problem = (error.problem ?? {}) as { personas?: unknown; errors?: Array<{ path?: unknown }> };
  if (error.status === 404 && error.code === 'CC_NOT_FOUND' && Array.isArray(problem.personas)) return 'unknown-persona';
  if (error.status === 400 && error.code === 'CC_UNSAFE_ID' && problem.errors?.some((entry) => entry.path === '/params/persona') === true) return 'unknown-persona';
  return 'refused';
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const hasKeys = (value: Record<string, unknown>, keys: readonly string[]) => {
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((key) => Object.hasOwn(value, key));
};
const FUNCTION_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * True when `value` is exactly a realtime session as the service's schema describes it
 * (`RealtimeSessionSchema`: strict objects, no member more); test/client holds the two together.
 */
export function isRealtimeSession(value: unknown): value is RealtimeSession {
  if (!isRecord(value) || !hasKeys(value, ['type', 'instructions', 'audio', 'tools'])) return false;
  if (value['type'] !== 'realtime' || typeof value['instructions'] !== 'string') return false;
  const audio = value['audio'];
  if (!isRecord(audio) || !hasKeys(audio, ['output']) || !isRecord(audio['output']) || !hasKeys(audio['output'], ['voice'])) return false;
  if (typeof audio['output']['voice'] !== 'string') return false;
  const tools = value['tools'];
  return (
    Array.isArray(tools) &&
    tools.every(
      (tool: unknown) =>
        isRecord(tool) &&
        hasKeys(tool, ['type', 'name', 'description', 'parameters']) &&
        tool['type'] === 'function' &&
        typeof tool['name'] === 'string' &&
        FUNCTION_NAME.test(tool['name']) &&
        typeof tool['description'] === 'string' &&
        isRecord(tool['parameters']),
    )
  );
}

/**
 * True when `value` is a Gemini Live setup as the service's schema describes it
 * (`GeminiSetupSchema`): its members exactly, audio out, one system instruction, at most one
 * tool of function declarations. The declarations' parameters are the service's translation,
 * checked there (test/core/persona), and taken as objects here.
 */
export function isGeminiSetup(value: unknown): value is GeminiSetup {
  if (!isRecord(value) || !hasKeys(value, ['generationConfig', 'systemInstruction', 'tools'])) return false;
  const config = value['generationConfig'];
  if (!isRecord(config) || !hasKeys(config, ['responseModalities', 'speechConfig'])) return false;
  const modalities = config['responseModalities'];
  if (!Array.isArray(modalities) || modalities.length !== 1 || modalities[0] !== 'AUDIO') return false;
  const speech = config['speechConfig'];
  const voice = isRecord(speech) && hasKeys(speech, ['voiceConfig']) && isRecord(speech['voiceConfig']) ? speech['voiceConfig']['prebuiltVoiceConfig'] : undefined;
  if (!isRecord(voice) || !hasKeys(voice, ['voiceName']) || typeof voice['voiceName'] !== 'string') return false;
  const instruction = value['systemInstruction'];
  const parts = isRecord(instruction) && hasKeys(instruction, ['parts']) ? instruction['parts'] : undefined;
  if (!Array.isArray(parts) || parts.length !== 1 || !isRecord(parts[0]) || !hasKeys(parts[0], ['text']) || typeof parts[0]['text'] !== 'string') return false;
  const tools = value['tools'];
  return (
    Array.isArray(tools) &&
    tools.length <= 1 &&
    tools.every(
      (tool: unknown) =>
        isRecord(tool) &&
        hasKeys(tool, ['functionDeclarations']) &&
        Array.isArray(tool['functionDeclarations']) &&
        tool['functionDeclarations'].every(
          (declaration: unknown) =>
            isRecord(declaration) &&
            typeof declaration['name'] === 'string' &&
            typeof declaration['description'] === 'string' &&
            (hasKeys(declaration, ['name', 'description']) || (hasKeys(declaration, ['name', 'description', 'parameters']) && isRecord(declaration['parameters']))),
        ),
    )
  );
}

/**
 * `persona`'s static session at `now` in `timeZone`: byte for byte what the service answers
 * for an empty brain at that minute (test/client/static-sessions.test.ts). A fresh object each
 * time, so a caller may change it.
 */
export function staticSession(persona: StaticPersona, now: Date, timeZone: string): RealtimeSession {
  const parts = STATIC_SESSIONS[persona];
  return {
    type: 'realtime',
    instructions: `${parts.before}${clockLine(now, timeZone)}${parts.after}`,
    audio: { output: { voice: parts.voice } },
    tools: structuredClone(parts.tools),
  };
}

/**
 * `persona`'s static Gemini setup at `now` in `timeZone`: byte for byte what the service
 * answers for an empty brain with `provider=gemini` (test/client/static-sessions.test.ts) —
 * the static session's instructions, the persona's Gemini voice and its tools as Gemini
 * declares them. A fresh object each time.
 */
export function staticGeminiSetup(persona: StaticPersona, now: Date, timeZone: string): GeminiSetup {
  const parts = STATIC_SESSIONS[persona];
  return {
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: parts.gemini.voice } } } },
    systemInstruction: { parts: [{ text: `${parts.before}${clockLine(now, timeZone)}${parts.after}` }] },
    tools: structuredClone(parts.gemini.tools),
  };
}

/** What connecting needs of a provider's session: the answer's member holding it, its check, its text, and its static form. */
export interface SessionShape<S> {
  member: 'session' | 'setup';
  what: string;
  is: (value: unknown) => value is S;
  textOf: (session: S) => string;
  withText: (session: S, text: string) => S;
  staticOf: StaticSessionOf<S>;
}

export const REALTIME_SESSION: SessionShape<RealtimeSession> = {
  member: 'session',
  what: 'realtime session',
  is: isRealtimeSession,
  textOf: (session) => session.instructions,
  withText: (session, instructions) => ({ ...session, instructions }),
  staticOf: staticSession,
};

export const GEMINI_SETUP: SessionShape<GeminiSetup> = {
  member: 'setup',
  what: 'Gemini setup',
  is: isGeminiSetup,
  textOf: (setup) => setup.systemInstruction.parts[0]?.text ?? '',
  withText: (setup, text) => ({ ...setup, systemInstruction: { parts: [{ text }] } }),
  staticOf: staticGeminiSetup,
};

const RUN_ID = /^[A-Za-z0-9_:-]{1,128}$/;

/**
 * The session in a persona answer's `body`, checked before anything of it is passed on:
 * exactly the provider's shape, instructions neither empty nor over `promptLimitChars`, and
 * a run id that is the one asked for when the query named one. Anything else throws a
 * `CC_CLIENT_BAD_RESPONSE` naming what failed (an `invalid-answer` fallback).
 */
export function checkedSession<S>(shape: SessionShape<S>, body: unknown, status: number, askedRunId: string | undefined, promptLimitChars: number): ServedSession<S> {
  const invalid = (detail: string) => new ContextCompilerError(status, 'CC_CLIENT_BAD_RESPONSE', detail, null);
  if (!isRecord(body)) throw invalid('the answer is not a JSON object');
  const session = body[shape.member];
  if (!shape.is(session)) throw invalid(`the answer holds no valid ${shape.what}`);
  const text = shape.textOf(session);
  if (text.length === 0) throw invalid(`the ${shape.what} has no instructions`);
  if (text.length > promptLimitChars) throw invalid(`the ${shape.what} has ${text.length} chars of instructions, over ${promptLimitChars}`);
  const runId = body['runId'];
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw invalid('the answer names no valid run');
  if (askedRunId !== undefined && runId !== askedRunId) throw invalid(`the answer is run "${brief(runId)}", not the run asked for`);
  const warnings = Array.isArray(body['warnings']) ? body['warnings'].filter((warning): warning is string => typeof warning === 'string') : [];
  return { session, runId, warnings, cut: cutAtClock(body, text) };
}

/** Text from a failure, for a warning: one line, at most 200 characters. */
function brief(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim();
  return line.length <= 200 ? line : `${line.slice(0, 199)}…`;
}

/** What the caller asked for, as `realtimeSession()` needs it. */
export interface SessionRequest {
  persona: string;
  /** The query's `now` and `timezone`, for a clock line rendered here. */
  now?: string | undefined;
  timezone?: string | undefined;
  /** The key a persona's session is kept under for this query (`lastKnownGoodKey`). */
  keyOf: (persona: string) => string;
}

/**
 * The key of `persona`'s kept session for a query: what changes the session's text or shape
 * (the provider, topic and zone asked, `sanitize`), not what names the call (`runId`), its
 * instant (`now`, rendered anew) or the answer's extras.
 */
export function lastKnownGoodKey(member: SessionShape<unknown>['member'], persona: string, query: Record<string, unknown>): string {
  const { provider = 'openai', topicId, topicName, timezone, sanitize } = query;
  return JSON.stringify([member, provider, persona, topicId ?? null, topicName ?? null, timezone ?? null, sanitize ?? null]);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * Connects one call: the service's session for `request.persona` (or `defaultPersona` when
 * it has no such persona) within the budget, else the last session the service answered for
 * it and this query (`lastKnownGood`, its clock line made anew) while that is young enough and
 * from the same day, else `shape.staticOf` that persona. Never throws unless
 * `options.fallback` is false; tells `onFallback` once when the result is not the service's
 * session for the persona asked. Every session the service answers is kept for later.
 */
export async function connectSession<S>(
  ask: AskService<S>,
  shape: SessionShape<S>,
  request: SessionRequest,
  options: ReturnType<typeof realtimeOptions>,
  lastKnownGood: LastKnownGood,
): Promise<SessionResult<S>> {
  const started = performance.now();
  const left = () => options.budgetMs - (performance.now() - started);
  const { persona } = request;
  const warnings: string[] = [];
  const live = (served: ServedSession<S>, as: string, reason: FallbackReason | null): SessionResult<S> => {
    keep(lastKnownGood, shape, request, as, served);
    const text = shape.textOf(served.session);
    return { session: served.session, persona: as, source: 'service', runId: served.runId, instructionsSha256: sha256(text), stale: null, fallback: reason, warnings: [...served.warnings, ...warnings] };
  };
  let servedAs = persona;
  let error: ContextCompilerError;
  try {
    // The budget starts here, so the first call has all of it: a timeout then names the budget
    // itself, as a warning documents it, not the budget less a preemption since `started`.
    return live(await ask(persona, options.budgetMs), persona, null);
  } catch (thrown) {
    error = asClientError(thrown);
    if (!options.fallback) throw error;
  }
  let reason = fallbackReason(error);
  if (reason === 'unknown-persona') {
    servedAs = options.defaultPersona;
    warnings.push(`unknown-persona: the service has no persona "${brief(persona)}"; connected as ${servedAs}`);
    if (servedAs !== persona) {
      try {
        const result = live(await ask(servedAs, left()), servedAs, reason);
        tell(options.onFallback, { persona, servedAs, source: 'service', reason, error }, result.warnings);
        return result;
      } catch (thrown) {
        error = asClientError(thrown);
        reason = fallbackReason(error);
      }
    }
  }
  const now = request.now === undefined || Number.isNaN(Date.parse(request.now)) ? new Date() : new Date(request.now);
  const why = `${reason} (${error.code}: ${brief(error.detail)})`;
  const fallbackCase: FallbackCase<S> = { lastKnownGood, shape, request, servedAs, options, now, why, warnings };
  const result = (await staleResult(fallbackCase)) ?? (await staticResult(fallbackCase));
  tell(options.onFallback, { persona, servedAs: result.persona, source: result.source, reason, error }, warnings);
  return { ...result, fallback: reason };
}

/** Keeps a served session for a later fallback, when its clock line was found. */
function keep<S>(lastKnownGood: LastKnownGood, shape: SessionShape<S>, request: SessionRequest, persona: string, served: ServedSession<S>): void {
  if (served.cut === null) return;
  const { before, after, at, timeZone, prefix } = served.cut;
  const kept: KeptSession = { member: shape.member, persona, runId: served.runId, at, timeZone, before, after, shell: JSON.stringify(shape.withText(served.session, '')), prefix };
  // A zone the query did not name (or named wrongly) is the one the service chose: the operator's.
  lastKnownGood.keep(request.keyOf(persona), kept, request.timezone === undefined || !isTimeZone(request.timezone));
}

type Fallback<S> = Omit<SessionResult<S>, 'fallback'>;

/** One fallback's case: what was asked, at `now`, why the service's session is not served, and the warnings so far (added to). */
interface FallbackCase<S> {
  lastKnownGood: LastKnownGood;
  shape: SessionShape<S>;
  request: SessionRequest;
  servedAs: string;
  options: ReturnType<typeof realtimeOptions>;
  now: Date;
  why: string;
  warnings: string[];
}

/** The last session the service answered for `servedAs` (else, for a persona without a static session, for `defaultPersona`) and this query, at `now`; null when none may be served. */
async function staleResult<S>({ lastKnownGood, shape, request, servedAs, options, now, why, warnings }: FallbackCase<S>): Promise<Fallback<S> | null> {
  for (const persona of isStaticPersona(servedAs) ? [servedAs] : [servedAs, options.defaultPersona]) {
    const kept = await lastKnownGood.find(request.keyOf(persona));
    if (kept === undefined || kept.member !== shape.member) continue;
    const unusable = staleness(kept, now, options.staleMaxAgeMs);
    if (unusable !== null) {
      warnings.push(`stale-expired: ${persona}'s last live session (run ${brief(kept.runId)}) ${unusable}`);
      continue;
    }
    let session: S | undefined;
    try {
      session = shape.withText(JSON.parse(kept.shell) as S, `${kept.before}${clockLine(now, kept.timeZone)}${staleNoteLine(persona)}${kept.after}`);
    } catch {
      session = undefined;
    }
    if (!shape.is(session)) continue;
    if (persona !== servedAs) warnings.push(`unknown-persona: the client has no session for "${brief(servedAs)}"; connected as ${persona}`);
    const age = Math.max(0, Math.round((now.getTime() - kept.at) / 60_000));
    warnings.push(`stale-session: ${why}; ${persona} connected on its last live session (run ${brief(kept.runId)}, ${age} min old), with the clock line of now`);
    const text = shape.textOf(session);
    return { session, persona, source: 'stale', runId: null, instructionsSha256: sha256(text), stale: { runId: kept.runId, at: new Date(kept.at).toISOString() }, warnings };
  }
  return null;
}

/** The persona's sentence on what it cannot see now, as a line after the fresh clock line: in the volatile tail, so the stable prefix is the one compiled. */
function staleNoteLine(persona: string): string {
  return isStaticPersona(persona) ? `\n${STATIC_SESSIONS[persona].staleNote}` : '';
}

/** `servedAs`'s static session (or `defaultPersona`'s, when the client has none for it) at `now`, in the query's zone, else the operator's as last answered, else `fallbackTimezone`. */
async function staticResult<S>({ lastKnownGood, shape, request, servedAs, options, now, why, warnings }: FallbackCase<S>): Promise<Fallback<S>> {
  const persona = isStaticPersona(servedAs) ? servedAs : options.defaultPersona;
  if (persona !== servedAs) warnings.push(`unknown-persona: the client has no static session for "${brief(servedAs)}"; connected as ${persona}`);
  warnings.push(`static-session: ${why}; ${persona} connected on its static session, without live context`);
  const timeZone = request.timezone !== undefined && isTimeZone(request.timezone) ? request.timezone : ((await lastKnownGood.zone()) ?? options.fallbackTimezone);
  const session = shape.staticOf(persona, now, timeZone);
  return { session, persona, source: 'static', runId: null, instructionsSha256: sha256(shape.textOf(session)), stale: null, warnings };
}

/** Anything `ask` threw, as a client error (it throws only those; a bug is still reported, as a network failure). */
function asClientError(thrown: unknown): ContextCompilerError {
  if (thrown instanceof ContextCompilerError) return thrown;
  return new ContextCompilerError(0, 'CC_CLIENT_NETWORK', thrown instanceof Error ? thrown.message : 'the call failed', null, null, { cause: thrown });
}

/** Calls `onFallback`; what it throws (or rejects with) never reaches the call. */
function tell(onFallback: RealtimeOptions['onFallback'], event: FallbackEvent, warnings: string[]): void {
  if (onFallback === undefined) return;
  try {
    const returned: unknown = onFallback(event);
    if (returned instanceof Promise) returned.catch(() => undefined);
  } catch {
    warnings.push('onFallback threw; ignored');
  }
}
