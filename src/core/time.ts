import { ProblemError } from '../errors.js';
import { noMemo, type Memo } from './memo.js';

/**
 * Calendar dates and the clock line in the operator's time zone. Only `Intl.DateTimeFormat`
 * does zone arithmetic; dates move by calendar days (never by 24 hours), so "yesterday" is
 * right on DST change days and in half- and quarter-hour zones.
 */

export const MAX_TIMEZONE_LENGTH = 64;

export type TimeZoneSource = 'request' | 'heartbeat' | 'default';

/** An instant and the IANA zone it is read in: what the clock line, "today" and live context need. */
export interface Clock {
  now: Date;
  /** A validated IANA zone (see `isValidTimeZone`, `resolveTimeZone`). */
  timeZone: string;
}

/**
 * What the time functions may remember, owned by the caller (the service's cache set): a
 * formatter per zone (building one costs tens of µs), the local parts per zone and minute,
 * the zone's offset per UTC hour (so a new minute costs arithmetic, not `formatToParts`),
 * and which zone names are valid. Without one every call computes afresh.
 */
export interface TimeMemo {
  formatters: Memo<string, Intl.DateTimeFormat>;
  minutes: Memo<string, LocalMinute>;
  hours: Memo<string, ZoneHour>;
  zones: Memo<string, boolean>;
}

export const NO_TIME_MEMO: TimeMemo = Object.freeze({
  formatters: noMemo<string, Intl.DateTimeFormat>(),
  minutes: noMemo<string, LocalMinute>(),
  hours: noMemo<string, ZoneHour>(),
  zones: noMemo<string, boolean>(),
});

export interface ResolvedTimeZone {
  timeZone: string;
  source: TimeZoneSource;
  warnings: string[];
}

export interface LocalParts {
  year: number;
  month: number;
  day: number;
  weekday: string;
  monthName: string;
  hour: number;
  minute: number;
  offset: string;
}

/**
 * What one formatter costs: ICU's date format, calendar and zone objects live outside the V8
 * heap, ≈ 34 KB of resident memory each (measured: 2,000 formatters, RSS over heap), so the
 * memo charges that, not the few hundred heap bytes V8 sees, and stays bounded by real bytes.
 */
const FORMATTER_BYTES = 36 * 1024;

function formatterFor(timeZone: string, memo: TimeMemo): Intl.DateTimeFormat {
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

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** A zone's local date and time parts for one minute, and the clock line they give. */
export interface LocalMinute {
  parts: LocalParts;
  line: string;
}

/**
 * A zone's offset through one UTC hour, when it is the same at the hour's first and last
 * minute (tzdb never changes an offset twice within an hour), else null: every minute of
 * that hour is then read from `Intl`.
 */
export interface ZoneHour {
  offsetMs: number | null;
  offset: string;
}

// Local parts by arithmetic on the hour's offset, for instants whose calendar the UTC
// fields of a Date state exactly as Intl does (Gregorian, four-digit years).
const ARITHMETIC_FROM_MS = Date.UTC(1900, 0, 1);
const ARITHMETIC_UNTIL_MS = Date.UTC(9999, 0, 1);

// formatToParts is the costly step and every caller wants minute precision: remembered by
// zone and minute, so calls within a minute share one; a new minute of an hour already
// seen is arithmetic on that hour's offset.
function localMinute(now: Date, timeZone: string, memo: TimeMemo): LocalMinute {
  const minute = Math.floor(now.getTime() / 60_000);
  const key = `${minute} ${timeZone}`;
  let entry = memo.minutes.get(key);
  if (entry === undefined) {
    const parts = minuteParts(minute, timeZone, memo);
    const line =
      `Current date and time: ${parts.weekday} ${parts.day} ${parts.monthName} ${pad(parts.year, 4)}, ` +
      `${pad(parts.hour)}:${pad(parts.minute)} (${timeZone}, ${parts.offset})`;
    entry = memo.minutes.set(key, { parts, line }, 512);
  }
  return entry;
}

function minuteParts(minute: number, timeZone: string, memo: TimeMemo): LocalParts {
  const ms = minute * 60_000;
  if (ms < ARITHMETIC_FROM_MS || ms >= ARITHMETIC_UNTIL_MS) return formatParts(new Date(ms), timeZone, memo);
  const hour = zoneHour(Math.floor(minute / 60), timeZone, memo);
  if (hour.offsetMs === null) return formatParts(new Date(ms), timeZone, memo);
  const local = new Date(ms + hour.offsetMs);
  return {
    year: local.getUTCFullYear(),
    month: local.getUTCMonth() + 1,
    day: local.getUTCDate(),
    weekday: WEEKDAYS[local.getUTCDay()]!,
    monthName: MONTHS[local.getUTCMonth()]!,
    hour: local.getUTCHours(),
    minute: local.getUTCMinutes(),
    offset: hour.offset,
  };
}

function zoneHour(hour: number, timeZone: string, memo: TimeMemo): ZoneHour {
  const key = `${hour} ${timeZone}`;
  let entry = memo.hours.get(key);
  if (entry === undefined) {
    const first = formatterFor(timeZone, memo).formatToParts(new Date(hour * 3_600_000));
    const last = formatterFor(timeZone, memo).formatToParts(new Date(hour * 3_600_000 + 59 * 60_000));
    const name = partOf(first, 'timeZoneName') ?? 'GMT';
    const offsetMs = name === (partOf(last, 'timeZoneName') ?? 'GMT') ? offsetMillis(name) : null;
    entry = memo.hours.set(key, { offsetMs, offset: normaliseOffset(name) }, 256);
  }
  return entry;
}

function partOf(parts: readonly Intl.DateTimeFormatPart[], type: Intl.DateTimeFormatPartTypes): string | undefined {
  for (const part of parts) if (part.type === type) return part.value;
  return undefined;
}

/** `GMT-08:00` → -28,800,000; `GMT+05:45:30` (historic local mean time) with its seconds; plain `GMT` → 0; else null. */
function offsetMillis(name: string): number | null {
  const match = /^(?:GMT|UTC)(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(name);
  if (!match) return null;
  if (match[1] === undefined) return 0;
  const ms = (Number(match[2]) * 3600 + Number(match[3]) * 60 + Number(match[4] ?? 0)) * 1000;
  return match[1] === '-' ? -ms : ms;
}

function localParts(now: Date, timeZone: string, memo: TimeMemo): LocalParts {
  return localMinute(now, timeZone, memo).parts;
}

function formatParts(now: Date, timeZone: string, memo: TimeMemo): LocalParts {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone, memo).formatToParts(now)) parts[part.type] = part.value;
  const monthName = parts['month'] ?? 'January';
  return {
    year: Number(parts['year']),
    month: MONTHS.indexOf(monthName) + 1,
    day: Number(parts['day']),
    weekday: parts['weekday'] ?? '',
    monthName,
    hour: Number(parts['hour']),
    minute: Number(parts['minute']),
    offset: normaliseOffset(parts['timeZoneName'] ?? 'GMT'),
  };
}

/** `GMT-08:00` → `UTC-08:00`; plain `GMT` → `UTC+00:00`. */
function normaliseOffset(name: string): string {
  const match = /^(?:GMT|UTC)([+-]\d{2}:\d{2})?$/.exec(name);
  return `UTC${match?.[1] ?? '+00:00'}`;
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

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
export function isValidTimeZone(name: unknown, memo: TimeMemo = NO_TIME_MEMO): name is string {
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
}, memo: TimeMemo = NO_TIME_MEMO): ResolvedTimeZone {
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
export function heartbeatTimeZone(text: string, memo: TimeMemo = NO_TIME_MEMO): HeartbeatZone {
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

/** The calendar date (`YYYY-MM-DD`) at instant `now` in `timeZone`. */
export function localDate(now: Date, timeZone: string, memo: TimeMemo = NO_TIME_MEMO): string {
  const { year, month, day } = localParts(now, timeZone, memo);
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
}

/** The wall-clock time (`HH:MM`, 24-hour) at instant `now` in `timeZone`. */
export function localTime(now: Date, timeZone: string, memo: TimeMemo = NO_TIME_MEMO): string {
  const { hour, minute } = localParts(now, timeZone, memo);
  return `${pad(hour)}:${pad(minute)}`;
}

/** Moves a `YYYY-MM-DD` date by whole calendar days (proleptic Gregorian, no zone involved). */
export function addDays(date: string, days: number): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) throw new RangeError(`not a YYYY-MM-DD date: ${date.slice(0, 32)}`);
  const moved = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]) + days));
  return `${pad(moved.getUTCFullYear(), 4)}-${pad(moved.getUTCMonth() + 1)}-${pad(moved.getUTCDate())}`;
}

/** The calendar date before "today" in `timeZone`: correct on 23- and 25-hour days. */
export function previousLocalDate(now: Date, timeZone: string, memo: TimeMemo = NO_TIME_MEMO): string {
  return addDays(localDate(now, timeZone, memo), -1);
}

/** True when `text` is a real calendar date written `YYYY-MM-DD` (no 2026-02-30). */
export function isCalendarDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * The human clock line for the volatile block, e.g.
 * `Current date and time: Monday 30 November 2026, 09:05 (America/Los_Angeles, UTC-08:00)`.
 * Deterministic for a given instant and zone; minute precision, so every compile within one
 * minute renders the same line.
 */
export function clockLine(now: Date, timeZone: string, memo: TimeMemo = NO_TIME_MEMO): string {
  return localMinute(now, timeZone, memo).line;
}

const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;

/**
 * Where a line shaped like the clock's, `<day>, HH:MM (<zone>)`, is cut into its day (up to
 * and with its comma), its ` HH:MM` and its ` (<zone>)`: the index of ` HH:MM` and of ` (`.
 * Undefined for a line of any other shape. The zone part is found last (no IANA name holds
 * ` (`), and only the four digits differ between two minutes of one day and offset.
 */
export function clockLineCuts(line: string): { time: number; zone: number } | undefined {
  const zone = line.lastIndexOf(' (');
  const time = zone - 6;
  if (
    time < 1 ||
    line.charCodeAt(time - 1) !== 0x2c /* , */ ||
    line.charCodeAt(time) !== 0x20 ||
    !isDigit(line.charCodeAt(time + 1)) ||
    !isDigit(line.charCodeAt(time + 2)) ||
    line.charCodeAt(time + 3) !== 0x3a /* : */ ||
    !isDigit(line.charCodeAt(time + 4)) ||
    !isDigit(line.charCodeAt(time + 5))
  ) {
    return undefined;
  }
  return { time, zone };
}

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * Parses a caller's `now`: an ISO 8601 instant with seconds optional and an explicit offset
 * (`2026-11-30T17:05:00Z`, `2026-11-30T09:05-08:00`). Returns undefined for anything else,
 * including impossible dates, so the caller can answer 400.
 */
export function parseInstant(text: string): Date | undefined {
  if (text.length > 40) return undefined;
  const match = ISO_INSTANT.exec(text);
  if (!match) return undefined;
  if (!isCalendarDate(`${match[1]}-${match[2]}-${match[3]}`)) return undefined;
  if (Number(match[4]) > 23 || Number(match[5]) > 59 || Number(match[6] ?? 0) > 59) return undefined;
  const zone = match[8]!;
  if (zone !== 'Z') {
    const digits = zone.replace(':', '');
    if (Number(digits.slice(1, 3)) > 23 || Number(digits.slice(3, 5)) > 59) return undefined;
  }
  const millis = (match[7] ?? '').padEnd(3, '0').slice(0, 3);
  const normalised = `${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${match[6] ?? '00'}.${millis}${zone === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.replace(':', '').slice(3)}`}`;
  const date = new Date(normalised);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
