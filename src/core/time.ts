import { area, joinAreas, noMemos, type MemosOf } from './area.js';
import { formatterFor, ZONE_AREAS } from './zones.js';


/**
 * Calendar dates and the clock line in the operator's time zone. Only `Intl.DateTimeFormat`
 * does zone arithmetic; dates move by calendar days (never by 24 hours), so "yesterday" is
 * right on DST change days and in half- and quarter-hour zones.
 */

/** An instant and the IANA zone it is read in: what the clock line, "today" and live context need. */
export interface Clock {
  now: Date;
  /** A validated IANA zone (see `isValidTimeZone`, `resolveTimeZone` in zones.ts). */
  timeZone: string;
}

/**
 * What the time functions may remember, owned by the caller (the service's cache set): a
 * formatter per zone (building one costs tens of µs), the local parts per zone and minute,
 * the zone's offset per UTC hour (so a new minute costs arithmetic, not `formatToParts`),
 * and which zone names are valid. Without one every call computes afresh.
 */
export const TIME_AREAS = joinAreas(ZONE_AREAS, {
  minutes: area<string, LocalMinute>('compiler.time.minutes', 0.0025),
  hours: area<string, ZoneHour>('compiler.time.hours', 0.00125),
});
export type TimeMemo = MemosOf<typeof TIME_AREAS>;

export const NO_TIME_MEMO: TimeMemo = noMemos(TIME_AREAS);

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
