import { ProblemError } from '../errors.js';
import { BoundedMemo } from './memo.js';

const formatters = new BoundedMemo<string, Intl.DateTimeFormat>(256);
const lines = new BoundedMemo<string, Map<number, string>>(256);

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    try {
      formatter = new Intl.DateTimeFormat('en-GB', {
        timeZone: timezone,
        weekday: 'long',
        year: 'numeric',
        month: 'long',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'shortOffset',
      });
    } catch {
      throw new ProblemError('CC_VALIDATION_FAILED', `timezone must be an IANA time zone such as UTC or Europe/London.`, {
        errors: [{ path: '/timezone', message: 'unknown time zone' }],
      });
    }
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/**
 * The volatile date-and-time line, e.g. `Current date and time: Monday 30 November 2026,
 * 17:20 (Europe/London, GMT)`. Pure: the instant and zone are arguments; minute precision,
 * so every compile within one minute renders the same line.
 */
export function clockLine(now: string, timezone: string): string {
  const epoch = Date.parse(now);
  // An instant without Z or an offset would be read in the host's zone: not deterministic.
  if (!Number.isFinite(epoch) || !/^\d{4}-\d{2}-\d{2}T[^]*(?:Z|[+-]\d{2}:?\d{2})$/i.test(now)) {
    throw new ProblemError('CC_VALIDATION_FAILED', 'now must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:20:00Z.', {
      errors: [{ path: '/now', message: 'not an ISO 8601 date-time' }],
    });
  }
  const minute = Math.floor(epoch / 60_000);
  let byMinute = lines.get(timezone);
  if (!byMinute) byMinute = lines.set(timezone, new Map());
  const known = byMinute.get(minute);
  if (known !== undefined) return known;
  const parts: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const part of formatterFor(timezone).formatToParts(minute * 60_000)) parts[part.type] = part.value;
  const line =
    `Current date and time: ${parts.weekday} ${parts.day} ${parts.month} ${parts.year}, ` +
    `${parts.hour}:${parts.minute} (${timezone}, ${parts.timeZoneName})`;
  if (byMinute.size >= 4096) byMinute.clear();
  byMinute.set(minute, line);
  return line;
}
