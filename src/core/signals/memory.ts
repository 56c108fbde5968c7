import { addCounts, clampRedacted, REDACTION_PLACEHOLDER, scrubPii, type RedactionCounts } from '../pii.js';
import { addDays, isCalendarDate } from '../time.js';
import { toSingleLine } from '../text.js';
import { EMOTION_LEMMAS, STOP_WORDS } from './lexicon.js';
import { headingOf, isRule, listItemText, markdownLines } from './markdown.js';

/**
 * Mars's signals from `memory/YYYY-MM-DD.md` and `SOUL.md`: which daily files to read,
 * emotionally loaded lines, the SOUL core, and recurring themes. Documented with examples
 * in docs/brain-formats.md ("Daily memory", "SOUL").
 */

export const DAILY_FILE_NAME = /^(\d{4}-\d{2}-\d{2})\.md$/;
export const EMOTION_FILES = 2;
export const THEME_FILES = 3;
export const SOUL_CORE_CHARS = 600;

export interface DailyMemory {
  /** `YYYY-MM-DD`, from the file name. */
  date: string;
  text: string;
}

export interface DailyMemoryPlan {
  /** Every file to read, newest first, each once (the union of the two uses below). */
  files: string[];
  /** The most recent `EMOTION_FILES` files, newest first. */
  emotionFiles: string[];
  /** The most recent `THEME_FILES` files, newest first. */
  themeFiles: string[];
}

/**
 * Chooses daily memory files from a `memory/` listing: valid `YYYY-MM-DD.md` names dated on
 * or before `today` (the operator's local date), newest first, duplicates dropped. The
 * emotion and theme sets overlap, so `files` lists each name once. Independent of listing order.
 */
export function planDailyMemory(
  names: readonly string[],
  today: string,
  options: { emotionFiles?: number; themeFiles?: number } = {},
): DailyMemoryPlan {
  const emotionCount = options.emotionFiles ?? EMOTION_FILES;
  const themeCount = options.themeFiles ?? THEME_FILES;
  const dated = new Set<string>();
  for (const name of names) {
    const match = DAILY_FILE_NAME.exec(name);
    if (match && isCalendarDate(match[1]!) && match[1]! <= today) dated.add(name);
  }
  const newestFirst = [...dated].sort().reverse();
  const emotionFiles = newestFirst.slice(0, emotionCount);
  const themeFiles = newestFirst.slice(0, themeCount);
  return { files: newestFirst.slice(0, Math.max(emotionCount, themeCount)), emotionFiles, themeFiles };
}

/** `2026-11-30.md` → `2026-11-30`; undefined for other names. */
export function dailyFileDate(name: string): string | undefined {
  const match = DAILY_FILE_NAME.exec(name);
  return match && isCalendarDate(match[1]!) ? match[1] : undefined;
}

/** The names for "today" and "yesterday" in the operator's zone (when a caller wants exactly those). */
export function todayAndYesterdayFiles(today: string): [string, string] {
  return [`${today}.md`, `${addDays(today, -1)}.md`];
}

const WORD = /[\p{L}][\p{L}'’]*/gu;

function wordsOf(text: string): string[] {
  const words: string[] = [];
  for (const match of text.matchAll(WORD)) {
    let word = match[0].toLowerCase().replace(/’/g, "'");
    if (word.endsWith("'s")) word = word.slice(0, -2);
    else if (word.endsWith("'")) word = word.slice(0, -1);
    words.push(word);
  }
  return words;
}

/**
 * The distinct emotion words in a line, as lemmas (`aches` and `ache` are one), matched as
 * whole words (`cache` is not `ache`, `presentation` is not `present`, `heartbeat` is not
 * `heart`). Score = how many.
 */
export function emotionWords(line: string): string[] {
  const found = new Set<string>();
  for (const word of wordsOf(line)) {
    const lemma = EMOTION_LEMMAS.get(word);
    if (lemma !== undefined) found.add(lemma);
  }
  return [...found];
}

export interface EmotionLine {
  date: string;
  text: string;
  score: number;
  words: string[];
  line: number;
}

/** Content lines of a daily file: list items and prose, without headings, rules, fences or comments. */
function contentLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  for (const { number, text: raw } of markdownLines(text)) {
    const trimmed = raw.trim();
    if (trimmed.length === 0 || isRule(trimmed) || headingOf(trimmed) !== undefined) continue;
    const item = listItemText(trimmed);
    const body = (item ?? trimmed).replace(/^\[[ xX]\][ \t]+/, '');
    if (body.length > 0) out.push({ line: number, text: body });
  }
  return out;
}

/**
 * The most emotionally loaded lines of the given daily files: lines with at least one
 * emotion word, ranked by distinct emotion words (more is higher), then newer file, then
 * file order; repeated lines count once. `text` is the raw line (list marker removed):
 * callers scrub, then clamp.
 * Only the first `scoreChars` of a line are scored. Deterministic.
 */
export function pickEmotionLines(files: readonly DailyMemory[], options: { max?: number; scoreChars?: number } = {}): EmotionLine[] {
  const max = options.max ?? 6;
  const scoreChars = options.scoreChars ?? 1000;
  const candidates: EmotionLine[] = [];
  const newestFirst = [...files].sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : 0));
  for (const file of newestFirst) {
    for (const { line, text } of contentLines(file.text)) {
      // Only a bounded prefix is ever shown, and scoring a 5 MB line helps no one.
      const words = emotionWords(text.slice(0, scoreChars));
      if (words.length === 0) continue;
      candidates.push({ date: file.date, text, score: words.length, words, line });
    }
  }
  // Stable sort: equal scores keep newest-file-first, then file order. A line repeated
  // (the same note copied into several days) is shown once, at its best rank.
  const seen = new Set<string>();
  const picked: EmotionLine[] = [];
  for (const candidate of candidates.sort((a, b) => b.score - a.score)) {
    const key = candidate.text.slice(0, scoreChars).trim().replace(/\s+/g, ' ').toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    picked.push(candidate);
    if (picked.length >= max) break;
  }
  return picked;
}

export interface SoulCore {
  text: string;
  /** Emails and phone numbers redacted in `text` (counts only). */
  redactions: RedactionCounts;
}

/**
 * SOUL.md's core context in at most `maxChars` (default 600): paragraphs reflowed to one line
 * each, headings as `Heading:` lines, the document title dropped, PII already scrubbed.
 * Whole paragraphs are kept while they fit; the first one that does not is cut at its last
 * sentence end that fits. Scrubbing happens before any cut, so no cut splits a number.
 */
export function soulCore(text: string, maxChars = SOUL_CORE_CHARS): SoulCore {
  const out: string[] = [];
  const redactions: RedactionCounts = { email: 0, phone: 0 };
  let used = 0;
  let pendingHeading: string | undefined;
  for (const block of soulBlocks(text)) {
    if (block.heading) {
      pendingHeading = block.text;
      continue;
    }
    const scrubbed = scrubPii(block.text);
    const lines = pendingHeading === undefined ? [scrubbed.text] : [pendingHeading, scrubbed.text];
    const separator = out.length > 0 ? 1 : 0;
    const added = lines.join('\n').length;
    if (used + separator + added <= maxChars) {
      out.push(...lines);
      addCounts(redactions, scrubbed.counts);
      used += separator + added;
      pendingHeading = undefined;
      continue;
    }
    const headingCost = pendingHeading === undefined ? 0 : pendingHeading.length + 1;
    let cut = cutAtSentence(scrubbed.text, maxChars - used - separator - headingCost);
    if (cut !== undefined && pendingHeading !== undefined) out.push(pendingHeading);
    // Nothing fits whole and there is no sentence end: the first paragraph, clamped.
    if (cut === undefined && out.length === 0) cut = clampRedacted(scrubbed.text, maxChars);
    if (cut !== undefined) {
      out.push(cut);
      addCounts(redactions, placeholdersIn(cut, scrubbed.counts));
    }
    break;
  }
  return { text: out.join('\n'), redactions };
}

/** Redactions still visible in a cut of scrubbed text, never more than the whole text had. */
export function placeholdersIn(text: string, cap: RedactionCounts): RedactionCounts {
  const count = (placeholder: string) => text.split(placeholder).length - 1;
  return {
    email: Math.min(cap.email, count(REDACTION_PLACEHOLDER.email)),
    phone: Math.min(cap.phone, count(REDACTION_PLACEHOLDER.phone)),
  };
}

function soulBlocks(text: string): Array<{ heading: boolean; text: string }> {
  const blocks: Array<{ heading: boolean; text: string }> = [];
  let paragraph: string[] = [];
  let seenContent = false;
  const flush = () => {
    if (paragraph.length > 0) blocks.push({ heading: false, text: toSingleLine(paragraph.join(' '), 8192) });
    paragraph = [];
  };
  for (const { text: raw } of markdownLines(text)) {
    const line = raw.trim();
    if (line.length === 0 || isRule(line)) {
      flush();
      continue;
    }
    const heading = headingOf(line);
    if (heading !== undefined) {
      flush();
      // The document's own title ("# Soul") says nothing the block label does not.
      if (!(heading.level === 1 && !seenContent)) blocks.push({ heading: true, text: `${toSingleLine(heading.text, 120)}:` });
      continue;
    }
    seenContent = true;
    const item = listItemText(line);
    if (item !== undefined) {
      flush();
      paragraph = [`- ${item}`];
      flush();
      continue;
    }
    paragraph.push(line);
  }
  flush();
  return blocks;
}

/** The longest prefix of `text` ending at a sentence end (`.`, `!`, `?`) within `room`; undefined if none. */
function cutAtSentence(text: string, room: number): string | undefined {
  if (room <= 0) return undefined;
  const window = text.slice(0, room);
  let end = -1;
  for (const match of window.matchAll(/[.!?]["')\]]?(?=\s|$)/g)) end = match.index + match[0].length;
  return end > 0 ? window.slice(0, end) : undefined;
}

const PLACEHOLDER = /\[(?:email|phone)\]/g;

/** Drops URL-, path- and address-like tokens (anything holding `/`, `\\` or `@`): never themes. */
function withoutAddresses(text: string): string {
  return text
    .split(/\s+/)
    .map((token) => (/[/\\@]|^www\./i.test(token) ? '.' : token))
    .join(' ');
}
const FRAGMENT_BREAK = /[.,;:!?()[\]{}"“”—–|/\\]+/;

/**
 * Recurring themes across daily files: content words and two-word phrases that appear in
 * at least `minFiles` (default 2) of the files. Stop-words, numbers, URLs and PII never
 * become themes. Ordered by how many files share the theme, phrases before single words,
 * total count, then alphabetically; a word already inside a chosen phrase with the same
 * reach is left out. Deterministic and independent of file order.
 */
export function recurringThemes(files: readonly DailyMemory[], options: { max?: number; minFiles?: number } = {}): string[] {
  const max = options.max ?? 8;
  const minFiles = options.minFiles ?? 2;
  const stats = new Map<string, { files: Set<string>; count: number }>();
  const note = (term: string, date: string) => {
    const entry = stats.get(term) ?? { files: new Set<string>(), count: 0 };
    entry.files.add(date);
    entry.count++;
    stats.set(term, entry);
  };
  for (const file of files) {
    for (const { text } of contentLines(file.text)) {
      const clean = withoutAddresses(scrubPii(text.slice(0, 2000)).text.replace(PLACEHOLDER, ' . '));
      for (const fragment of clean.split(FRAGMENT_BREAK)) {
        let previous: string | undefined;
        for (const word of wordsOf(fragment)) {
          if (word.length < 3 || STOP_WORDS.has(word)) {
            previous = undefined;
            continue;
          }
          note(word, file.date);
          if (previous !== undefined) note(`${previous} ${word}`, file.date);
          previous = word;
        }
      }
    }
  }
  const ranked = [...stats.entries()]
    .filter(([, entry]) => entry.files.size >= minFiles)
    .map(([term, entry]) => ({ term, reach: entry.files.size, count: entry.count, phrase: term.includes(' ') }))
    .sort(
      (a, b) =>
        b.reach - a.reach ||
        Number(b.phrase) - Number(a.phrase) ||
        b.count - a.count ||
        (a.term < b.term ? -1 : a.term > b.term ? 1 : 0),
    );
  const chosen: Array<{ term: string; reach: number }> = [];
  for (const candidate of ranked) {
    if (chosen.length >= max) break;
    const covered = !candidate.phrase && chosen.some((theme) => theme.reach >= candidate.reach && theme.term.split(' ').includes(candidate.term));
    if (!covered) chosen.push(candidate);
  }
  return chosen.map((theme) => theme.term);
}
