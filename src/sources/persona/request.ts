/**
 * What a persona compile is asked for (`PersonaRequest`), and what of it may be used: the
 * persona it names (`getPersona`, `personaOrNotFound`, looked up in the built-in personas'
 * data, `personas.ts`), the topic id (`usableTopicId`) and the zone (`usableZone`), with what
 * the trace may keep of the last two. What the compile reads and answers is `sources.ts`.
 */
import { listPersonas, PERSONAS, type Persona } from '../../core/persona/personas.js';
import type { AnswerProvider } from '../../core/persona/providers.js';
import { NO_TIME_MEMO, type TimeMemo } from '../../core/time.js';
import { isValidTimeZone, MAX_TIMEZONE_LENGTH, zoneSpelling, type ResolvedTimeZone } from '../../core/zones.js';
import { scrubPii } from '../../core/pii.js';
import { quoteForWarning } from '../../core/text.js';
import { ProblemError } from '../../errors.js';
import { sha256Hex } from '../../core/digest.js';
import { isSlug } from '../../../schemas/ids.js';

export interface PersonaRequest {
  /** A persona key (`mars`, `venus`); anything else is a 404 problem listing the personas. */
  persona: string;
  /** The instant to compile for: the caller's `now`, else the time of the request. */
  now: Date;
  /**
   * The caller's IANA zone, as given (any casing); else heartbeat-state, else `defaultTimeZone`.
   * One `Intl` does not know (empty included) fails open: the operator's zone and a
   * `timezone-invalid:` warning naming it (`zone.ts`).
   */
  timezone?: string | undefined;
  /**
   * The caller's topic id, as given: a slug reads `topics/<topicId>.md`; anything else (or a
   * repeated parameter) is unusable, and the persona connects with its generic context and a
   * `topic-unsafe:` warning — a call link always connects.
   */
  topicId?: string | readonly string[] | undefined;
  /** A display label; sanitised to one line of ≤ 80 chars, advisory only. */
  topicName?: string | undefined;
  sanitize?: 'ascii' | undefined;
  /** The engine the prompt is for: enters the route key only. */
  engine?: string | undefined;
  /** The realtime API the answer is for (default `openai`): `session` or Gemini's `setup`, the voice, the cache plan's provider. */
  provider?: AnswerProvider | undefined;
}

/** The caller's topic id when it is usable: one slug (a repeated query parameter is not). An unusable one reads nothing. */
export function usableTopicId(topicId: string | readonly string[] | undefined): string | undefined {
  return typeof topicId === 'string' && isSlug(topicId) ? topicId : undefined;
}

/**
 * What the trace may record of a caller's topic id: the id itself when it is usable, else
 * only its length and a digest prefix — never unsafe text, and never unbounded.
 */
export function topicIdForTrace(topicId: string | readonly string[] | undefined): {
  topicId: string | null;
  rejected?: { reason: 'unsafe'; chars: number; sha256: string };
} {
  if (topicId === undefined) return { topicId: null };
  const usable = usableTopicId(topicId);
  if (usable !== undefined) return { topicId: usable };
  const text = typeof topicId === 'string' ? topicId : topicId.join('&');
  return { topicId: null, rejected: { reason: 'unsafe', chars: text.length, sha256: sha256Hex(text).slice(0, 16) } };
}

/** The built-in persona with this key, or undefined. */
export function getPersona(key: string): Persona | undefined {
  return PERSONAS.find((persona) => persona.key === key);
}

/** The built-in persona for `key`, or a 404 problem that lists the personas. */
export function personaOrNotFound(key: string): Persona {
  const persona = getPersona(key);
  if (persona) return persona;
  const personas = listPersonas().map((summary) => summary.key);
  throw new ProblemError('CC_NOT_FOUND', `No persona "${key}"; the personas are ${personas.join(', ')}.`, { extensions: { personas } });
}

/*
 * A caller's `timezone` on the persona routes. It is optional input, so it fails open as an
 * unusable `topicId` does: a call must connect whatever its voice server sends. An empty or
 * unknown zone compiles in the operator's zone (heartbeat-state, else the default) with a
 * `timezone-invalid:` warning naming the value; `POST /compile` and the CLI stay strict.
 */

/** The stable code that opens the warning for an unusable `timezone`. */
const TIMEZONE_WARNING = 'timezone-invalid';

/** The caller's zone when it is one `Intl` knows (in any casing), else undefined. */
export function usableZone(timezone: string | undefined, memo: TimeMemo = NO_TIME_MEMO): string | undefined {
  if (timezone === undefined || timezone.length > MAX_TIMEZONE_LENGTH) return undefined;
  return isValidTimeZone(zoneSpelling(timezone), memo) ? timezone : undefined;
}

/**
 * The warning for a `timezone` that is not one: the value scrubbed of PII, its invisible
 * characters escaped and clamped, then the zone the persona was compiled in and where it came from.
 */
export function zoneWarning(given: string, used: ResolvedTimeZone): string {
  const shown = quoteForWarning(scrubPii(given.slice(0, MAX_TIMEZONE_LENGTH + 1)).text, MAX_TIMEZONE_LENGTH);
  const from = used.source === 'heartbeat' ? 'memory/heartbeat-state.json' : 'DEFAULT_TIMEZONE';
  return `${TIMEZONE_WARNING}: timezone "${shown}" is not an IANA time zone; compiled in ${used.timeZone} (${from})`;
}

/**
 * What the trace may record of a caller's zone: the zone as given when it is one, else only
 * its length and a digest prefix (as for an unusable topic id), so a refresh of the connect
 * compiles in the operator's zone again.
 */
export function timezoneForTrace(timezone: string | undefined): {
  timezone: string | null;
  rejected?: { reason: 'invalid'; chars: number; sha256: string };
} {
  if (timezone === undefined) return { timezone: null };
  if (usableZone(timezone) !== undefined) return { timezone };
  return { timezone: null, rejected: { reason: 'invalid', chars: timezone.length, sha256: sha256Hex(timezone).slice(0, 16) } };
}
