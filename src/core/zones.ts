import { ProblemError } from '../errors.js';
import { area, noMemos, type MemosOf } from './area.js';

/**
 * Time zones: which names are zones (`isValidTimeZone`, `zoneSpelling`) and the formatter
 * that reads a zone, and which zone a compile is in (`resolveTimeZone`: the request's,
 * heartbeat-state's, or the default). The clock in a zone is time.ts.
 */

export const MAX_TIMEZONE_LENGTH = 64;

export type TimeZoneSource = 'request' | 'heartbeat' | 'default';

/** What the zone functions may remember, owned by the caller (the service's cache set: `TimeMemo` holds these areas). */
export const ZONE_AREAS = {
  /** A formatter per zone. */
  formatters: area<string, Intl.DateTimeFormat>('compiler.time.formatters', 0.0025),
  /** Whether a name is a zone. */
  zones: area<string, boolean>('compiler.time.zones', 0.00125),
};
export type ZoneMemo = MemosOf<typeof ZONE_AREAS>;

const NO_ZONE_MEMO: ZoneMemo = noMemos(ZONE_AREAS);

export interface ResolvedTimeZone {
  timeZone: string;
  source: TimeZoneSource;
  warnings: string[];
}

/**
 * What one formatter costs: ICU's date format, calendar and zone objects live outside the V8
 * heap, ≈ 34 KB of resident memory each (measured: 2,000 formatters, RSS over heap), so the
 * memo charges that, not the few hundred heap bytes V8 sees, and stays bounded by real bytes.
 */
const FORMATTER_BYTES = 36 * 1024;

export function formatterFor(timeZone: string, memo: ZoneMemo): Intl.DateTimeFormat {
  let formatter = memo.formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    });
    memo.formatters.set(timeZone, formatter, FORMATTER_BYTES);
  }
  return formatter;
}

/** Intl's canonical zone names by their lower case, a read-only table made at load: `Intl` reads zone names case-insensitively. */
const CANONICAL_ZONES: ReadonlyMap<string, string> = new Map(Intl.supportedValuesOf('timeZone').map((zone) => [zone.toLowerCase(), zone]));

/**
 * A zone name as tzdb spells it when it is one of `Intl`'s canonical zones in any casing
 * (`america/new_YORK` → `America/New_York`), else the name as given. One spelling per zone
 * means one formatter, one clock line and one compile per zone, however a caller cases it.
 */
export function zoneSpelling(name: string): string {
  return CANONICAL_ZONES.get(name.toLowerCase()) ?? name;
}

/**
 * True for an IANA zone name (or link) that `Intl` knows, such as `Asia/Kolkata` or
 * `US/Pacific`. Building a formatter to find out costs tens of µs: with a memo, each
 * name (valid or not) is checked once.
 */
export function isValidTimeZone(name: unknown, memo: ZoneMemo = NO_ZONE_MEMO): name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_TIMEZONE_LENGTH) return false;
  let valid = memo.zones.get(name);
  if (valid === undefined) {
    valid = /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name);
    if (valid) {
      try {
        formatterFor(name, memo);
      } catch {
        valid = false;
      }
    }
    memo.zones.set(name, valid, 2 * name.length + 64);
  }
  return valid;
}

/**
 * Picks the operator's zone: the request's `timezone`, else heartbeat-state's
 * `currentLocation.timezone`, else the configured default. An invalid request zone throws a
 * `CC_VALIDATION_FAILED` problem (400, path `/query/timezone`); an unusable heartbeat file
 * or zone only adds a warning. Warnings never quote the file's text.
 */
export function resolveTimeZone(options: {
  requested?: string | undefined;
  heartbeatText?: string | undefined;
  defaultTimeZone: string;
  /** Where the request zone came from, for the problem's field path. */
  requestPath?: string;
}, memo: ZoneMemo = NO_ZONE_MEMO): ResolvedTimeZone {
  const { requested, heartbeatText, defaultTimeZone } = options;
  if (requested !== undefined) {
    if (requested.length > MAX_TIMEZONE_LENGTH || !isValidTimeZone(zoneSpelling(requested), memo)) {
      const path = options.requestPath ?? '/query/timezone';
      throw new ProblemError('CC_VALIDATION_FAILED', 'timezone must be an IANA time zone such as UTC or Europe/London', {
        errors: [{ path, message: 'must be an IANA time zone such as UTC or Europe/London' }],
      });
    }
    return { timeZone: zoneSpelling(requested), source: 'request', warnings: [] };
  }
  const warnings: string[] = [];
  const fallback = isValidTimeZone(defaultTimeZone, memo) ? defaultTimeZone : 'UTC';
  if (heartbeatText !== undefined) {
    const fromHeartbeat = heartbeatTimeZone(heartbeatText, memo);
    if (fromHeartbeat.ok) return { timeZone: fromHeartbeat.timeZone, source: 'heartbeat', warnings };
    if (fromHeartbeat.reason !== undefined) {
      warnings.push(`memory/heartbeat-state.json: ${fromHeartbeat.reason}; using ${fallback}`);
    }
  }
  return { timeZone: fallback, source: 'default', warnings };
}

/** What heartbeat-state says about the zone: a valid zone, nothing, or why it is unusable (never quoting the file). */
export type HeartbeatZone = { ok: true; timeZone: string } | { ok: false; reason?: string };

/** Parses `memory/heartbeat-state.json` text for `currentLocation.timezone`; never throws. */
export function heartbeatTimeZone(text: string, memo: ZoneMemo = NO_ZONE_MEMO): HeartbeatZone {
  let state: unknown;
  try {
    state = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return { ok: false, reason: 'not valid JSON' };
  }
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return { ok: false, reason: 'not a JSON object' };
  const location = (state as Record<string, unknown>)['currentLocation'];
  if (location === undefined) return { ok: false };
  if (typeof location !== 'object' || location === null) return { ok: false, reason: 'currentLocation is not an object' };
  const zone = (location as Record<string, unknown>)['timezone'];
  if (zone === undefined) return { ok: false };
  const spelled = typeof zone === 'string' && zone.length <= MAX_TIMEZONE_LENGTH ? zoneSpelling(zone) : zone;
  if (!isValidTimeZone(spelled, memo)) return { ok: false, reason: 'currentLocation.timezone is not a valid IANA time zone' };
  return { ok: true, timeZone: spelled };
}
