/**
 * A caller's `timezone` on the persona routes. It is optional input, so it fails open as an
 * unusable `topicId` does: a call must connect whatever its voice server sends. An empty or
 * unknown zone compiles in the operator's zone (heartbeat-state, else the default) with a
 * `timezone-invalid:` warning naming the value; `POST /compile` and the CLI stay strict.
 */
import { sha256Hex } from '../../core/digest.js';
import { scrubPii } from '../../core/pii.js';
import { quoteForWarning } from '../../core/text.js';
import { isValidTimeZone, MAX_TIMEZONE_LENGTH, NO_TIME_MEMO, zoneSpelling, type ResolvedTimeZone, type TimeMemo } from '../../core/time.js';

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
