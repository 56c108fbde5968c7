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
