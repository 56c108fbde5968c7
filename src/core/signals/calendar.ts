import { isCalendarDate } from '../time.js';
import { toSingleLine } from '../text.js';
import { headingOf, indentOf, listItemText, markdownLines } from './markdown.js';

/**
 * `calendar/today.md`: `- HH:MM title` or `- HH:MM–HH:MM title` lines (24-hour clock).
 * Documented with examples in docs/brain-formats.md ("Calendar").
 */

export interface CalendarEvent {
  /** `HH:MM`, zero-padded. */
  start: string;
  end: string | undefined;
  title: string;
  line: number;
}

export interface Calendar {
  /** The first `YYYY-MM-DD` in a heading, when the file names its day. */
  date: string | undefined;
  /** Sorted by start time (then end time); ties keep file order. */
  events: CalendarEvent[];
}

export const MAX_EVENT_TITLE_CHARS = 200;

const TIME = '([01]?\\d|2[0-3])[:.]([0-5]\\d)';
const EVENT = new RegExp(
  `^${TIME}(?:[ \\t]*(?:[-–—]|to)[ \\t]*(?:${TIME}|(24)[:.](00)))?(?:[ \\t]*[-–—:|][ \\t]*|[ \\t]+)(.*)$`,
  's',
);

const pad = (hour: string, minute: string) => `${hour.padStart(2, '0')}:${minute}`;

/**
 * Parses today's calendar. Only top-level list items that start with a valid 24-hour time
 * count; nested bullets (agenda notes) and other lines are ignored. Titles are single-line
 * and clamped. Linear in the text.
 */
export function parseCalendar(text: string, options: { maxChars?: number } = {}): Calendar {
  const maxChars = options.maxChars ?? MAX_EVENT_TITLE_CHARS;
  const events: CalendarEvent[] = [];
  let date: string | undefined;
  for (const { number, text: line } of markdownLines(text)) {
    const heading = headingOf(line);
    if (heading !== undefined) {
      if (date === undefined) {
        const found = /\b(\d{4}-\d{2}-\d{2})\b/.exec(heading.text.slice(0, 200));
        if (found && isCalendarDate(found[1]!)) date = found[1];
      }
      continue;
    }
    if (indentOf(line) >= 2) continue;
    const item = listItemText(line);
    if (item === undefined) continue;
    const match = EVENT.exec(item.replace(/^\[[ xX]\][ \t]+/, ''));
    if (!match) continue;
    const title = toSingleLine(match[7]!, maxChars);
    if (title.length === 0) continue;
    const end = match[3] !== undefined ? pad(match[3], match[4]!) : match[5] !== undefined ? '24:00' : undefined;
    events.push({ start: pad(match[1]!, match[2]!), end, title, line: number });
  }
  events.sort((a, b) => (a.start === b.start ? (a.end ?? '').localeCompare(b.end ?? '') : a.start < b.start ? -1 : 1));
  return { date, events };
}
