/**
 * A worker's recallable notes: `workers/<worker>/memory/*.md`, one note per `## ` entry.
 * Text before a file's first `## ` heading is not a note. Ranking is deterministic:
 * notes that share more words with the turn's task or message come first, heading matches
 * counting double, and ties keep file order (files by name, entries top to bottom).
 * A file's notes and their words can be indexed once (`indexMemoryNotes`) and ranked
 * against many queries (`rankIndexedMemoryNotes`), in the same order as the plain notes.
 */

import { isRegexSpace } from './text.js';

export interface MemoryNote {
  /** `workers/<worker>/memory/<file>.md#<heading-slug>`. */
  source: string;
  heading: string;
  /** The entry as written: its `## ` heading line and body. */
  text: string;
}

const STOPWORDS: ReadonlySet<string> = new Set(
  'the and for are but not you your with this that from have has had was were will would can could should about into onto than then them they their there what when where which who whom why how all any each our out his her its one two also just more most some such only own same very too off over under again once here'.split(
    ' ',
  ),
);

/** `text` without the dashes at its ends. */
function trimDashes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 0x2d) start++;
  while (end > start && text.charCodeAt(end - 1) === 0x2d) end--;
  return text.slice(start, end);
}

function slugify(heading: string): string {
  return trimDashes(trimDashes(heading.toLowerCase().replace(/[^a-z0-9]+/g, '-')).slice(0, 64));
}

const isLineTerminator = (code: number) => code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;

/**
 * The text of a `## ` heading line, without its closing `#`s and the blank space around them;
 * undefined for any other line. What `/^## +(.*?)\s*#*\s*$/` captured, in one scan each
 * way (that pattern backtracked polynomially on a long run of spaces: issue 27).
 */
export function noteHeading(line: string): string | undefined {
  if (!line.startsWith('## ')) return undefined;
  let start = 3;
  while (line.charCodeAt(start) === 0x20) start++;
  let end = line.length;
  while (end > start && isRegexSpace(line.charCodeAt(end - 1))) end--;
  const hashes = end;
  while (end > start && line.charCodeAt(end - 1) === 0x23) end--;
  if (end < hashes) while (end > start && isRegexSpace(line.charCodeAt(end - 1))) end--;
  for (let at = start; at < end; at++) if (isLineTerminator(line.charCodeAt(at))) return undefined;
  return line.slice(start, end);
}

/** A file's notes: the newest `maxNotes` of them (the last), and how many it holds in all. */
export interface ParsedMemoryNotes {
  notes: MemoryNote[];
  total: number;
}

/**
 * Splits one memory file into its `## ` entries, in file order, each with a unique anchor; at
 * most `maxNotes`, the newest (last) kept, so what is parsed stays bounded whatever the file
 * holds. Anchors are numbered over the whole file, so a note keeps its anchor when older ones
 * are left out. Linear in the text.
 */
export function parseMemoryNotesBounded(path: string, text: string, maxNotes = Infinity): ParsedMemoryNotes {
  const lines = text.split('\n');
  let total = 0;
  for (const line of lines) if (line.startsWith('## ') && noteHeading(line) !== undefined) total++;
  const firstKept = Math.max(0, total - maxNotes);
  const notes: MemoryNote[] = [];
  const used = new Set<string>();
  // Per base slug, the suffix to try next: every smaller one is taken, so each is tried once.
  const nextSuffix = new Map<string, number>();
  let seen = 0;
  let current: { heading: string; anchor: string; lines: string[] } | undefined;
  const flush = () => {
    if (current) notes.push({ source: `${path}#${current.anchor}`, heading: current.heading, text: current.lines.join('\n').trim() });
  };
  for (const line of lines) {
    const heading = line.startsWith('## ') ? noteHeading(line) : undefined;
    if (heading !== undefined) {
      flush();
      seen++;
      const base = slugify(heading) || `note-${seen}`;
      let anchor = base;
      if (used.has(anchor)) {
        let n = nextSuffix.get(base) ?? 2;
        while (used.has(`${base}-${n}`)) n++;
        nextSuffix.set(base, n + 1);
        anchor = `${base}-${n}`;
      }
      used.add(anchor);
      current = seen > firstKept ? { heading, anchor, lines: [line.trimEnd()] } : undefined;
    } else if (current) {
      current.lines.push(line);
    }
  }
  flush();
  return { notes, total };
}

/** Splits one memory file into its `## ` entries, in file order, each with a unique anchor. */
export function parseMemoryNotes(path: string, text: string): MemoryNote[] {
  return parseMemoryNotesBounded(path, text).notes;
}

function terms(text: string): Set<string> {
  const found = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []) if (!STOPWORDS.has(word)) found.add(word);
  return found;
}

/** Notes ordered best first for `query`; stable, so equal scores keep their given order. */
export function rankMemoryNotes(notes: readonly MemoryNote[], query: string): MemoryNote[] {
  const wanted = terms(query);
  if (wanted.size === 0) return [...notes];
  const scored = notes.map((note, index) => {
    const heading = terms(note.heading);
    const body = terms(note.text);
    let score = 0;
    for (const term of wanted) score += heading.has(term) ? 2 : body.has(term) ? 1 : 0;
    return { note, index, score };
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.map((entry) => entry.note);
}

/** One memory file's notes, and for each word the notes it scores in: 2 where it is in the heading, else 1. */
export interface MemoryNoteIndex {
  readonly notes: readonly MemoryNote[];
  readonly words: ReadonlyMap<string, ReadonlyArray<readonly [note: number, weight: number]>>;
  /** Notes in the file, indexed or not (see `maxNotes`). */
  readonly total: number;
}

/** `parseMemoryNotesBounded` plus the words ranking compares, worked out once per file. */
export function indexMemoryNotes(path: string, text: string, maxNotes = Infinity): MemoryNoteIndex {
  const { notes, total } = parseMemoryNotesBounded(path, text, maxNotes);
  const words = new Map<string, Array<readonly [number, number]>>();
  notes.forEach((note, index) => {
    const heading = terms(note.heading);
    for (const word of new Set([...heading, ...terms(note.text)])) {
      const postings = words.get(word);
      const posting = [index, heading.has(word) ? 2 : 1] as const;
      if (postings) postings.push(posting);
      else words.set(word, [posting]);
    }
  });
  return { notes, words, total };
}

/**
 * The notes of several indexed files (in file order) ranked for `query`: the same order
 * as `rankMemoryNotes` over all their notes, at the cost of one lookup per query word and file.
 */
export function rankIndexedMemoryNotes(files: readonly MemoryNoteIndex[], query: string): MemoryNote[] {
  const all = files.flatMap((file) => file.notes);
  const wanted = terms(query);
  if (wanted.size === 0) return all;
  const scores = new Array<number>(all.length).fill(0);
  let offset = 0;
  for (const file of files) {
    for (const word of wanted) {
      const postings = file.words.get(word);
      if (postings) for (const [note, weight] of postings) scores[offset + note]! += weight;
    }
    offset += file.notes.length;
  }
  const order = all.map((_, index) => index);
  order.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return order.map((index) => all[index]!);
}
