import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { parseCalendar } from '../../../src/core/signals/calendar.js';

const times = (text: string) => parseCalendar(text).events.map((event) => [event.start, event.end, event.title]);

describe('parseCalendar formats', () => {
  it('reads "- HH:MM title" lines and sorts them by time, not file order', () => {
    expect(times('- 15:00 Late\n- 09:00 Early\n- 12:30 Lunch')).toEqual([
      ['09:00', undefined, 'Early'],
      ['12:30', undefined, 'Lunch'],
      ['15:00', undefined, 'Late'],
    ]);
  });

  it('reads ranges written with an en dash, a hyphen, an em dash or "to"', () => {
    expect(times('- 09:00–10:30 Standup\n- 11:00-11:30 Review\n- 13:00 — 14:00 Focus\n- 16:00 to 17:00 Gym\n- 23:00–24:00 Late')).toEqual([
      ['09:00', '10:30', 'Standup'],
      ['11:00', '11:30', 'Review'],
      ['13:00', '14:00', 'Focus'],
      ['16:00', '17:00', 'Gym'],
      ['23:00', '24:00', 'Late'],
    ]);
  });

  it('accepts single-digit hours, dotted times and a separator before the title', () => {
    expect(times('- 9:05 Coffee\n- 10.15 — Call back\n* 11:00: Dentist')).toEqual([
      ['09:05', undefined, 'Coffee'],
      ['10:15', undefined, 'Call back'],
      ['11:00', undefined, 'Dentist'],
    ]);
  });

  it('keeps file order for events at the same time', () => {
    expect(times('- 10:00 B\n- 10:00 A\n- 10:00 C')).toEqual([
      ['10:00', undefined, 'B'],
      ['10:00', undefined, 'A'],
      ['10:00', undefined, 'C'],
    ]);
  });

  it('ignores invalid times, untimed bullets, nested agenda bullets, comments and code', () => {
    const text = ['- 25:00 Impossible', '- 09:60 Impossible', '- lunch sometime', '- 10:00', '- 11:00 Real', '  - 11:05 agenda item', '<!-- - 12:00 hidden -->', '```', '- 13:00 code', '```'].join('\n');
    expect(times(text)).toEqual([['11:00', undefined, 'Real']]);
  });

  it('takes the date from the first heading that names one', () => {
    expect(parseCalendar('# Today — 2026-11-30\n- 09:00 x').date).toBe('2026-11-30');
    expect(parseCalendar('# Today\n- 09:00 x').date).toBeUndefined();
    expect(parseCalendar('# Today — 2026-02-30\n- 09:00 x').date).toBeUndefined();
  });

  it('makes titles single-line and clamps them', () => {
    const [event] = parseCalendar(`- 09:00 ${'x'.repeat(1000)}\u2028line`).events;
    expect(event!.title.length).toBeLessThanOrEqual(200);
    expect(event!.title).not.toMatch(/[\n\u2028]/);
  });
});

describe('parseCalendar degradation', () => {
  it('returns no events for empty text, garbage and binary junk', () => {
    for (const text of ['', 'nothing here', '\u0000\ufffd\u0001', '- :', '- 9']) {
      expect(parseCalendar(text).events, JSON.stringify(text)).toEqual([]);
    }
  });

  it('parses a 5 MB calendar, including a 1 MB line of spaces, in bounded time', () => {
    const text = '- 09:00 Standup\n'.repeat(300_000) + `- 09:00${' '.repeat(1_000_000)}x\n`;
    expect(parseCalendar(text).events.length).toBe(300_001);
  });
});

describe('parseCalendar on the example brain', () => {
  it('reads five events dated 2026-11-30', () => {
    const calendar = parseCalendar(readFileSync(`${EXAMPLE_BRAIN}/calendar/today.md`, 'utf8'));
    expect(calendar.date).toBe('2026-11-30');
    expect(calendar.events.map((event) => event.start)).toEqual(['09:00', '11:00', '12:30', '15:00', '18:30']);
  });
});
