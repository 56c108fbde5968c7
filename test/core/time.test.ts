import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { ProblemError } from '../../src/errors.js';
import { addDays, clockLine, isCalendarDate, localDate, localTime, parseInstant, previousLocalDate } from '../../src/core/time.js';
import { isValidTimeZone, resolveTimeZone } from '../../src/core/zones.js';

const at = (iso: string) => new Date(iso);

describe('isValidTimeZone', () => {
  it('accepts IANA zones and links, rejects everything else', () => {
    for (const zone of ['UTC', 'Europe/London', 'Asia/Kolkata', 'Asia/Kathmandu', 'US/Pacific', 'America/Port-au-Prince', 'Etc/GMT+5']) {
      expect(isValidTimeZone(zone), zone).toBe(true);
    }
    for (const zone of ['', 'Mars/Olympus', '+05:30', '../etc/passwd', 'UTC\n', 'A'.repeat(65), 42, undefined]) {
      expect(isValidTimeZone(zone), String(zone)).toBe(false);
    }
  });
});

describe('resolveTimeZone', () => {
  const heartbeat = JSON.stringify({ currentLocation: { timezone: 'America/Los_Angeles', city: 'Portland' } });

  it('prefers the request, then heartbeat-state, then the default', () => {
    expect(resolveTimeZone({ requested: 'Asia/Kolkata', heartbeatText: heartbeat, defaultTimeZone: 'UTC' })).toEqual({
      timeZone: 'Asia/Kolkata',
      source: 'request',
      warnings: [],
    });
    expect(resolveTimeZone({ heartbeatText: heartbeat, defaultTimeZone: 'UTC' })).toEqual({
      timeZone: 'America/Los_Angeles',
      source: 'heartbeat',
      warnings: [],
    });
    expect(resolveTimeZone({ defaultTimeZone: 'Europe/London' })).toEqual({ timeZone: 'Europe/London', source: 'default', warnings: [] });
  });

  it('accepts the US/Pacific link the spec shows for heartbeat-state', () => {
    const text = JSON.stringify({ currentLocation: { timezone: 'US/Pacific' } });
    expect(resolveTimeZone({ heartbeatText: text, defaultTimeZone: 'UTC' }).timeZone).toBe('US/Pacific');
  });

  it('throws a 400 problem naming the field for an invalid request zone', () => {
    let caught: unknown;
    try {
      resolveTimeZone({ requested: 'Mars/Olympus', defaultTimeZone: 'UTC' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ProblemError);
    const problem = caught as ProblemError;
    expect(problem.statusCode).toBe(400);
    expect(problem.errors).toEqual([{ path: '/query/timezone', message: expect.stringContaining('IANA') }]);
  });

  it.each([
    ['broken JSON', '{"currentLocation": ', 'not valid JSON'],
    ['an array', '[1, 2]', 'not a JSON object'],
    ['a non-object location', '{"currentLocation": "Portland"}', 'currentLocation is not an object'],
    ['an invalid zone', '{"currentLocation": {"timezone": "Mars/Olympus"}}', 'not a valid IANA time zone'],
    ['a non-string zone', '{"currentLocation": {"timezone": 7}}', 'not a valid IANA time zone'],
    ['binary junk', '\u0000\u0001\ufffd\ufffd', 'not valid JSON'],
  ])('degrades to the default with a warning on %s', (_name, text, reason) => {
    const resolved = resolveTimeZone({ heartbeatText: text, defaultTimeZone: 'Europe/London' });
    expect(resolved.timeZone).toBe('Europe/London');
    expect(resolved.source).toBe('default');
    expect(resolved.warnings).toHaveLength(1);
    expect(resolved.warnings[0]).toContain(reason);
    expect(resolved.warnings[0]).not.toContain('Mars');
  });

  it('uses the default silently when heartbeat-state has no location', () => {
    expect(resolveTimeZone({ heartbeatText: '{"lastHeartbeat": "x"}', defaultTimeZone: 'UTC' }).warnings).toEqual([]);
  });
});

describe('localDate and previousLocalDate', () => {
  it('follows the half-hour offset of Asia/Kolkata (UTC+05:30)', () => {
    expect(localDate(at('2026-11-30T18:29:59Z'), 'Asia/Kolkata')).toBe('2026-11-30');
    expect(localDate(at('2026-11-30T18:30:00Z'), 'Asia/Kolkata')).toBe('2026-12-01');
    expect(previousLocalDate(at('2026-11-30T18:30:00Z'), 'Asia/Kolkata')).toBe('2026-11-30');
  });

  it('follows the 45-minute offset of Asia/Kathmandu (UTC+05:45)', () => {
    expect(localDate(at('2026-11-30T18:14:59Z'), 'Asia/Kathmandu')).toBe('2026-11-30');
    expect(localDate(at('2026-11-30T18:15:00Z'), 'Asia/Kathmandu')).toBe('2026-12-01');
  });

  it('follows Australia/Adelaide in summer (UTC+10:30) and winter (UTC+09:30)', () => {
    expect(localDate(at('2026-11-30T13:29:59Z'), 'Australia/Adelaide')).toBe('2026-11-30');
    expect(localDate(at('2026-11-30T13:30:00Z'), 'Australia/Adelaide')).toBe('2026-12-01');
    expect(localDate(at('2026-06-30T14:29:59Z'), 'Australia/Adelaide')).toBe('2026-06-30');
    expect(localDate(at('2026-06-30T14:30:00Z'), 'Australia/Adelaide')).toBe('2026-07-01');
  });

  // Each case is an instant where "now minus 24 hours" lands on the wrong calendar day.
  it.each([
    ['America/New_York spring-forward day (23 h)', 'America/New_York', '2026-03-09T04:30:00Z', '2026-03-09', '2026-03-08'],
    ['America/New_York, late on spring-forward day', 'America/New_York', '2026-03-09T03:30:00Z', '2026-03-08', '2026-03-07'],
    ['America/New_York fall-back day (25 h)', 'America/New_York', '2026-11-02T04:30:00Z', '2026-11-01', '2026-10-31'],
    ['America/New_York, just after fall-back', 'America/New_York', '2026-11-01T06:30:00Z', '2026-11-01', '2026-10-31'],
    ['Europe/London spring-forward day', 'Europe/London', '2026-03-29T23:30:00Z', '2026-03-30', '2026-03-29'],
    ['Europe/London, just after spring-forward', 'Europe/London', '2026-03-29T01:30:00Z', '2026-03-29', '2026-03-28'],
    ['Europe/London fall-back day', 'Europe/London', '2026-10-25T23:30:00Z', '2026-10-25', '2026-10-24'],
    ['Europe/London, just after fall-back', 'Europe/London', '2026-10-25T01:30:00Z', '2026-10-25', '2026-10-24'],
  ])('%s: today and yesterday are the right dates', (_name, zone, iso, today, yesterday) => {
    expect(localDate(at(iso), zone)).toBe(today);
    expect(previousLocalDate(at(iso), zone)).toBe(yesterday);
  });

  it('always makes yesterday the calendar day before today, in any zone', () => {
    const zones = ['UTC', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Adelaide', 'America/New_York', 'Europe/London', 'Pacific/Kiritimati', 'Pacific/Pago_Pago'];
    fc.assert(
      fc.property(fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2090-01-01T00:00:00Z'), noInvalidDate: true }), fc.constantFrom(...zones), (now, zone) => {
        const today = localDate(now, zone);
        expect(isCalendarDate(today)).toBe(true);
        expect(addDays(previousLocalDate(now, zone), 1)).toBe(today);
        const utc = now.toISOString().slice(0, 10);
        expect([addDays(utc, -1), utc, addDays(utc, 1)]).toContain(today);
      }),
      { numRuns: 500 },
    );
  });
});

describe('addDays and isCalendarDate', () => {
  it('moves across months, years and leap days', () => {
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
    expect(addDays('2028-03-01', -1)).toBe('2028-02-29');
    expect(addDays('2026-12-31', 1)).toBe('2027-01-01');
    expect(addDays('2026-01-01', -1)).toBe('2025-12-31');
  });

  it('rejects impossible dates and other shapes', () => {
    expect(isCalendarDate('2026-02-29')).toBe(false);
    expect(isCalendarDate('2028-02-29')).toBe(true);
    expect(isCalendarDate('2026-13-01')).toBe(false);
    expect(isCalendarDate('2026-1-1')).toBe(false);
    expect(() => addDays('yesterday', 1)).toThrow(RangeError);
  });
});

describe('clockLine and localTime', () => {
  it('renders the example line for Portland', () => {
    expect(clockLine(at('2026-11-30T17:05:00Z'), 'America/Los_Angeles')).toBe(
      'Current date and time: Monday 30 November 2026, 09:05 (America/Los_Angeles, UTC-08:00)',
    );
  });

  it('shows half-hour, 45-minute and zero offsets', () => {
    expect(clockLine(at('2026-11-30T18:30:00Z'), 'Asia/Kolkata')).toBe('Current date and time: Tuesday 1 December 2026, 00:00 (Asia/Kolkata, UTC+05:30)');
    expect(clockLine(at('2026-11-30T18:14:00Z'), 'Asia/Kathmandu')).toBe('Current date and time: Monday 30 November 2026, 23:59 (Asia/Kathmandu, UTC+05:45)');
    expect(clockLine(at('2026-11-30T00:00:00Z'), 'UTC')).toBe('Current date and time: Monday 30 November 2026, 00:00 (UTC, UTC+00:00)');
  });

  it('shows the offset in force on each side of a DST change', () => {
    expect(clockLine(at('2026-03-08T06:59:00Z'), 'America/New_York')).toBe('Current date and time: Sunday 8 March 2026, 01:59 (America/New_York, UTC-05:00)');
    expect(clockLine(at('2026-03-08T07:00:00Z'), 'America/New_York')).toBe('Current date and time: Sunday 8 March 2026, 03:00 (America/New_York, UTC-04:00)');
  });

  it('derives each new minute from its hour offset exactly as Intl formats that minute: DST changes, half-hour and historic offsets', () => {
    // The reference: Intl for the minute itself, as the clock line was computed before hours were remembered.
    const formats = new Map<string, Intl.DateTimeFormat>();
    const format = (zone: string) => {
      const options = { timeZone: zone, weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'longOffset' } as const;
      if (!formats.has(zone)) formats.set(zone, new Intl.DateTimeFormat('en-GB', options));
      return formats.get(zone)!;
    };
    const reference = (minute: number, zone: string) => {
      const parts = Object.fromEntries(
        format(zone)
          .formatToParts(new Date(minute * 60_000))
          .map((part) => [part.type, part.value]),
      );
      const offset = /^(?:GMT|UTC)([+-]\d{2}:\d{2})?$/.exec(parts['timeZoneName'] ?? 'GMT')?.[1] ?? '+00:00';
      return `Current date and time: ${parts['weekday']} ${parts['day']} ${parts['month']} ${String(parts['year']).padStart(4, '0')}, ${parts['hour']}:${parts['minute']} (${zone}, UTC${offset})`;
    };
    const zones = ['UTC', 'America/Los_Angeles', 'America/New_York', 'Europe/London', 'Europe/Dublin', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/St_Johns', 'Africa/Monrovia', 'Pacific/Chatham', 'Asia/Tehran', 'Pacific/Apia', 'America/Caracas', 'Europe/Amsterdam'];
    const memo = createCaches().compiler.time;
    // Every minute of the days around 2026's DST changes (and Lord Howe's half-hour one), in each zone.
    for (const day of ['2026-03-08', '2026-03-29', '2026-04-05', '2026-10-04', '2026-10-25', '2026-11-01']) {
      const start = Date.parse(`${day}T00:00:00Z`) / 60_000 - 14 * 60;
      for (const zone of zones) {
        for (let minute = start; minute < start + 48 * 60; minute += 13) {
          expect(clockLine(new Date(minute * 60_000 + 59_999), zone, memo), `${zone} ${minute}`).toBe(reference(minute, zone));
        }
      }
    }
    fc.assert(
      fc.property(fc.constantFrom(...zones), fc.integer({ min: Date.UTC(1850, 0, 1) / 60_000, max: Date.UTC(2200, 0, 1) / 60_000 }), (zone, minute) => {
        expect(clockLine(new Date(minute * 60_000), zone, memo)).toBe(reference(minute, zone));
        expect(clockLine(new Date(minute * 60_000), 'UTC')).toBe(reference(minute, 'UTC'));
      }),
      { numRuns: 2000 },
    );
  });

  it('uses a 24-hour clock with midnight as 00', () => {
    expect(localTime(at('2026-11-30T08:00:00Z'), 'UTC')).toBe('08:00');
    expect(localTime(at('2026-11-30T00:00:00Z'), 'UTC')).toBe('00:00');
    expect(localTime(at('2026-11-30T23:59:00Z'), 'UTC')).toBe('23:59');
  });
});

describe('parseInstant', () => {
  it('parses ISO 8601 instants with an explicit offset', () => {
    expect(parseInstant('2026-11-30T17:05:00Z')?.toISOString()).toBe('2026-11-30T17:05:00.000Z');
    expect(parseInstant('2026-11-30T09:05-08:00')?.toISOString()).toBe('2026-11-30T17:05:00.000Z');
    expect(parseInstant('2026-11-30T23:05:00.123456+0530')?.toISOString()).toBe('2026-11-30T17:35:00.123Z');
  });

  it('rejects local times without an offset, impossible dates and junk', () => {
    for (const text of ['2026-11-30T17:05:00', '2026-02-30T00:00:00Z', '2026-11-30T24:00:00Z', '2026-11-30T10:00:00+25:00', 'now', '', '2026-11-30']) {
      expect(parseInstant(text), text).toBeUndefined();
    }
  });
});
