/**
 * The service's clock line (`clockLine` in src/core/time.ts), for a static session rendered
 * here: `Current date and time: Monday 30 November 2026, 17:05 (UTC, UTC+00:00)`. The
 * package carries no service code, so this is a copy; test/client/static-sessions.test.ts
 * holds it to the service's line for any instant and zone.
 */

let formatters: Map<string, Intl.DateTimeFormat> | undefined;

/** Zone names the way the service accepts them: a plain IANA-shaped name `Intl` knows. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;

function formatterFor(timeZone: string): Intl.DateTimeFormat | undefined {
  formatters ??= new Map();
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    if (timeZone.length > 64 || !ZONE_NAME.test(timeZone)) return undefined;
    try {
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
    } catch {
      return undefined;
    }
    // Valid zone names are a few hundred at most; the cap only bounds a caller's mistakes.
    if (formatters.size >= 64) formatters.clear();
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** True for a zone name the service would take as `timezone`. */
export function isTimeZone(timeZone: string): boolean {
  return formatterFor(timeZone) !== undefined;
}

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

/** `GMT-08:00` → `UTC-08:00`; plain `GMT` (or anything else) → `UTC+00:00`, as the service writes it. */
function offsetOf(name: string | undefined): string {
  const match = /^(?:GMT|UTC)([+-]\d{2}:\d{2})?$/.exec(name ?? 'GMT');
  return `UTC${match?.[1] ?? '+00:00'}`;
}

/**
 * The clock line for `now` (to the minute) in `timeZone`, byte for byte the service's.
 * `timeZone` must be valid (`isTimeZone`); UTC is used otherwise.
 */
export function clockLine(now: Date, timeZone: string): string {
  const zone = isTimeZone(timeZone) ? timeZone : 'UTC';
  const parts: Record<string, string> = {};
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  for (const part of formatterFor(zone)!.formatToParts(minute)) parts[part.type] = part.value;
  const date = `${parts['weekday'] ?? ''} ${Number(parts['day'])} ${parts['month'] ?? 'January'} ${pad(Number(parts['year']), 4)}`;
  return `Current date and time: ${date}, ${pad(Number(parts['hour']))}:${pad(Number(parts['minute']))} (${zone}, ${offsetOf(parts['timeZoneName'])})`;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
/** A clock line's parts; every piece bounded, so matching is linear in the line's length. */
const CLOCK_LINE = /^Current date and time: [A-Za-z]{6,9} (\d{1,2}) ([A-Za-z]{3,9}) (\d{4}), (\d{2}):(\d{2}) \(([A-Za-z][A-Za-z0-9_+\-/]{0,63}), UTC([+-])(\d{2}):(\d{2})\)$/;

/**
 * The instant (to the minute) and zone a clock line states, when `line` is exactly the line
 * `clockLine` renders for them; null for anything else.
 */
export function parseClockLine(line: string): { at: Date; timeZone: string } | null {
  if (line.length > 200) return null;
  const match = CLOCK_LINE.exec(line);
  if (match === null) return null;
  const [, day, monthName, year, hour, minute, timeZone, sign, offsetHours, offsetMinutes] = match as unknown as string[];
  const month = MONTHS.indexOf(monthName!);
  if (month < 0 || !isTimeZone(timeZone!)) return null;
  const offsetMs = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const at = new Date(Date.UTC(Number(year), month, Number(day), Number(hour), Number(minute)) - offsetMs);
  return clockLine(at, timeZone!) === line ? { at, timeZone: timeZone! } : null;
}

/** The calendar day of `now` in `timeZone` (valid, see `isTimeZone`), as `Monday 30 November 2026`. */
export function localDay(now: Date, timeZone: string): string {
  const line = clockLine(now, timeZone);
  return line.slice('Current date and time: '.length, line.indexOf(', ', 'Current date and time: '.length));
}
