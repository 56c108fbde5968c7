import { isCalendarDate } from '../time.js';
import { toSingleLine } from '../text.js';
import { headingOf, isRule, listItemText, markdownLines } from './markdown.js';

/**
 * `meetings/YYYY-MM-DD-<slug>.md`: meeting notes; the newest gives a one-line summary.
 * Documented with examples in docs/brain-formats.md ("Meetings").
 */

export const MEETING_FILE_NAME = /^(\d{4}-\d{2}-\d{2})-([a-z0-9][a-z0-9-]{0,120})\.md$/;
export const MAX_MEETING_LINE_CHARS = 240;

export interface MeetingName {
  date: string;
  slug: string;
}

/** `2026-11-27-roadmap-review.md` → `{date, slug}`; undefined for other names or impossible dates. */
export function parseMeetingFileName(name: string): MeetingName | undefined {
  const match = MEETING_FILE_NAME.exec(name);
  if (!match || !isCalendarDate(match[1]!)) return undefined;
  return { date: match[1]!, slug: match[2]! };
}

/**
 * Picks the newest meeting file from a directory listing: the latest date in the name, then
 * the greatest slug on the same day. With `onOrBefore` (today's date), notes dated in the
 * future (agendas) are skipped. Other names are ignored. Independent of listing order.
 */
export function newestMeetingFile(names: readonly string[], options: { onOrBefore?: string } = {}): string | undefined {
  let best: { name: string; key: string } | undefined;
  for (const name of names) {
    const parsed = parseMeetingFileName(name);
    if (parsed === undefined) continue;
    if (options.onOrBefore !== undefined && parsed.date > options.onOrBefore) continue;
    const key = `${parsed.date} ${parsed.slug}`;
    if (best === undefined || key > best.key) best = { name, key };
  }
  return best?.name;
}

export interface MeetingSummary {
  date: string;
  slug: string;
  /** The first heading without its date, else the slug in words. */
  title: string;
  /** The `Summary:` text, else the first prose line; undefined when the notes have neither. */
  summary: string | undefined;
  summarySource: 'summary' | 'prose' | 'none';
}

const SUMMARY_LINE = /^(?:\*\*|__)?summary(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$/is;
const FIELD_LINE = /^(?:\*\*|__)?[A-Za-z][\w -]{0,30}(?:\*\*|__)?[ \t]*:/;

const isBlank = (code: number) => code === 0x20 || code === 0x09;
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
const isDash = (char: string | undefined) => char === '—' || char === '–' || char === ':' || char === '-';
const isDateAt = (text: string, at: number) =>
  at >= 0 && [0, 1, 2, 3, 5, 6, 8, 9].every((offset) => isDigit(text.charCodeAt(at + offset))) && text[at + 4] === '-' && text[at + 7] === '-';

/**
 * `title` without a date at its end (`Roadmap review — 2026-11-27`, `(2026-11-27)`) and the
 * dash and blank space before it. A backward scan: the pattern it replaces
 * (`/[ \t]*[—–:-]?[ \t]*\(?\d{4}-\d{2}-\d{2}\)?[ \t]*$/`) backtracked in cubic time.
 */
function withoutTrailingDate(title: string): string {
  let end = title.length;
  while (end > 0 && isBlank(title.charCodeAt(end - 1))) end--;
  if (title[end - 1] === ')') end--;
  if (!isDateAt(title, end - 10)) return title;
  end -= 10;
  if (title[end - 1] === '(') end--;
  while (end > 0 && isBlank(title.charCodeAt(end - 1))) end--;
  if (isDash(title[end - 1])) {
    end--;
    while (end > 0 && isBlank(title.charCodeAt(end - 1))) end--;
  }
  return title.slice(0, end);
}

function withoutDate(title: string): string {
  return withoutTrailingDate(title)
    .replace(/^\d{4}-\d{2}-\d{2}[ \t]*[—–:-]?[ \t]*/, '')
    .trim();
}

/**
 * The one-liner for a meeting: a `Summary:` line (with its continuation lines) when there
 * is one, else the first prose line; the title is the first heading (date removed) or the
 * slug. Every field is single-line and clamped to `maxChars`. Undefined for a file name
 * that is not a meeting note's.
 */
export function summarizeMeeting(fileName: string, text: string, maxChars = MAX_MEETING_LINE_CHARS): MeetingSummary | undefined {
  const name = parseMeetingFileName(fileName);
  if (name === undefined) return undefined;
  const lines = markdownLines(text);
  let title: string | undefined;
  let summary: string | undefined;
  let prose: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.text.trim();
    if (line.length === 0 || isRule(line)) continue;
    const heading = headingOf(line);
    if (heading !== undefined) {
      if (/^summary$/i.test(heading.text) && summary === undefined) {
        summary = paragraphAfter(lines, i + 1, '');
        if (summary.length > 0) break;
        summary = undefined;
        continue;
      }
      title ??= withoutDate(heading.text.slice(0, 400));
      continue;
    }
    const summaryMatch = SUMMARY_LINE.exec(listItemText(line) ?? line);
    if (summaryMatch) {
      summary = paragraphAfter(lines, i + 1, summaryMatch[1]!);
      if (summary.length > 0) break;
      summary = undefined;
      continue;
    }
    if (prose === undefined && listItemText(line) === undefined && !FIELD_LINE.test(line)) prose = line;
  }
  const chosen = summary ?? prose;
  const cleanTitle = toSingleLine(title ?? '', maxChars) || name.slug.replace(/-/g, ' ');
  return {
    date: name.date,
    slug: name.slug,
    title: cleanTitle,
    summary: chosen === undefined ? undefined : toSingleLine(chosen, maxChars) || undefined,
    summarySource: summary !== undefined ? 'summary' : prose !== undefined ? 'prose' : 'none',
  };
}

/** `first` plus the lines that continue its paragraph (not blank, not a heading or list item). */
function paragraphAfter(lines: Array<{ text: string }>, from: number, first: string): string {
  const parts = first.trim().length > 0 ? [first.trim()] : [];
  let skippingBlank = parts.length === 0;
  for (let i = from; i < lines.length && i < from + 20; i++) {
    const line = lines[i]!.text.trim();
    if (line.length === 0) {
      if (skippingBlank) continue;
      break;
    }
    if (headingOf(line) !== undefined || isRule(line)) break;
    const item = listItemText(line);
    if (item !== undefined) {
      // A "## Summary" section written as a list: its first item is the summary.
      if (parts.length === 0) parts.push(item.trim());
      break;
    }
    skippingBlank = false;
    parts.push(line);
  }
  return parts.join(' ');
}
