/**
 * `realtimeSession()`: a voice server connects a call with whatever this returns, so it always
 * returns a session the realtime API accepts (docs/voice-server.md: a context-service outage is
 * never a voice outage). Within a budget (default 1 s for the whole call) it is the service's compiled,
 * traced session; when the service is down, hung, failing, answering junk or refusing, it is
 * the persona's static session — what the service renders for an empty brain, generated into
 * this package (./static-sessions.ts), with the clock line of the moment — and the caller is
 * told through `onFallback` and the result's `warnings`, never by a throw (unless it asks for
 * `fallback: false`). An unknown persona connects as `defaultPersona`.
 */
import { clockLine, isTimeZone } from './clock.js';
import { ContextCompilerError } from './errors.js';
import { STATIC_SESSIONS, type StaticPersona } from './static-sessions.js';
import type { GeminiSetup, RealtimeSession } from './types.js';

export type { StaticPersona } from './static-sessions.js';

export const DEFAULT_SESSION_BUDGET_MS = 1000;
export const DEFAULT_PERSONA: StaticPersona = 'venus';

/**
 * Why a result is not the service's session for the persona asked:
 * - `timeout`: no whole answer within the budget (the service or the network is hung);
 * - `network`: no connection (the service is down, refused, reset, or the client is closed);
 * - `server-error`: a 5xx (503 while overloaded, shutting down or unable to trace);
 * - `bad-response`: an answer that is not JSON or holds no valid session (a proxy's page);
 * - `unknown-persona`: the service has no such persona (a 404, or a 400 for a persona that
 *   is not a slug); the session is `defaultPersona`'s;
 * - `refused`: any other 4xx (a bad token, a rate limit, an invalid query).
 */
export type FallbackReason = 'timeout' | 'network' | 'server-error' | 'bad-response' | 'unknown-persona' | 'refused';

/** What `onFallback` is told, once per `realtimeSession()` call that did not get the service's session for the persona asked. */
export interface FallbackEvent {
  /** The persona asked for. */
  persona: string;
  /** The persona whose session was returned: `persona`, or `defaultPersona` after an unknown one. */
  servedAs: string;
  /** `static`: the client's static session (no live context, nothing traced by the service); `service`: compiled by the service for `servedAs`. */
  source: 'service' | 'static';
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
   * The zone of a static session's clock line when the query names no `timezone` (the
   * service would use heartbeat-state or its DEFAULT_TIMEZONE, which the client cannot
   * read). Default `UTC`.
   */
  fallbackTimezone?: string;
  /** Told of every fallback; it may log or count (`cc_client_fallbacks_total`). What it throws is ignored. */
  onFallback?: (event: FallbackEvent) => void;
}

/** What a connect returns: the session to send, and how it was made. */
export interface SessionResult<S> {
  /** Exactly what the realtime API accepts, no more: send it as it is (add your model). */
  session: S;
  /** The persona the session is for: the one asked, or `defaultPersona` after an unknown one. */
  persona: string;
  /** `service`: compiled and traced by the service, as run `runId`; `static`: the client's static session. */
  source: 'service' | 'static';
  /** The call's run: the service's; for a fallback, the id the client made at connect (the client's `realtimeSession()` and `geminiSetup()` fill it in), which holds nothing until the first refresh after the service recovers opens it. */
  runId: string | null;
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

/** A session the service answered, checked. */
export interface ServedSession<S> {
  session: S;
  runId: string | null;
  warnings: string[];
}

/** Asks the service for `persona`'s session within `timeoutMs`; throws a `ContextCompilerError`. */
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
  };
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) if (value !== undefined) Object.assign(options, { [key]: value });
  }
  if (!(Number.isFinite(options.budgetMs) && options.budgetMs > 0)) throw new TypeError(`realtime budgetMs must be a positive number of ms, not ${String(options.budgetMs)}`);
  if (!isStaticPersona(options.defaultPersona)) throw new TypeError(`realtime defaultPersona must be one of ${Object.keys(STATIC_SESSIONS).join(', ')}`);
  if (!isTimeZone(options.fallbackTimezone)) throw new TypeError('realtime fallbackTimezone must be an IANA time zone such as UTC or Europe/London');
  return options;
}

/** Why a call failed, in the terms of `FallbackReason`. */
export function fallbackReason(error: ContextCompilerError): FallbackReason {
  if (error.code === 'CC_CLIENT_BAD_RESPONSE') return 'bad-response';
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

/** Text from a failure, for a warning: one line, at most 200 characters. */
function brief(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').trim();
  return line.length <= 200 ? line : `${line.slice(0, 199)}…`;
}

/** What the caller asked for, as `realtimeSession()` needs it. */
export interface SessionRequest {
  persona: string;
  /** The query's `now` and `timezone`, for a static session's clock line. */
  now?: string | undefined;
  timezone?: string | undefined;
}

/**
 * Connects one call: the service's session for `request.persona` (or `defaultPersona` when
 * it has no such persona) within the budget, else `staticOf` that persona. Never throws
 * unless `options.fallback` is false; tells `onFallback` once when the result is not the
 * service's session for the persona asked. The session's shape is the provider's: `ask` and
 * `staticOf` make it.
 */
export async function connectSession<S>(
  ask: AskService<S>,
  staticOf: StaticSessionOf<S>,
  request: SessionRequest,
  options: ReturnType<typeof realtimeOptions>,
): Promise<SessionResult<S>> {
  const started = performance.now();
  const left = () => options.budgetMs - (performance.now() - started);
  const { persona } = request;
  const warnings: string[] = [];
  let servedAs = persona;
  let error: ContextCompilerError;
  try {
    const served = await ask(persona, left());
    return { ...served, persona, source: 'service', fallback: null, warnings: served.warnings };
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
        const served = await ask(servedAs, left());
        const result: SessionResult<S> = { ...served, persona: servedAs, source: 'service', fallback: reason, warnings: [...served.warnings, ...warnings] };
        tell(options.onFallback, { persona, servedAs, source: 'service', reason, error }, result.warnings);
        return result;
      } catch (thrown) {
        error = asClientError(thrown);
        reason = fallbackReason(error);
      }
    }
  }
  const staticPersona = isStaticPersona(servedAs) ? servedAs : options.defaultPersona;
  if (staticPersona !== servedAs) warnings.push(`unknown-persona: the client has no static session for "${brief(servedAs)}"; connected as ${staticPersona}`);
  servedAs = staticPersona;
  warnings.push(`static-session: ${reason} (${error.code}: ${brief(error.detail)}); ${staticPersona} connected on its static session, without live context`);
  const now = request.now === undefined || Number.isNaN(Date.parse(request.now)) ? new Date() : new Date(request.now);
  const timeZone = request.timezone !== undefined && isTimeZone(request.timezone) ? request.timezone : options.fallbackTimezone;
  const result: SessionResult<S> = { session: staticOf(staticPersona, now, timeZone), persona: staticPersona, source: 'static', runId: null, fallback: reason, warnings };
  tell(options.onFallback, { persona, servedAs, source: 'static', reason, error }, warnings);
  return result;
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
