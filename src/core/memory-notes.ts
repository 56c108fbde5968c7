/**
 * A worker's recallable notes: `workers/<worker>/memory/*.md`, one note per `## ` entry.
 * Text before a file's first `## ` heading is not a note. Ranking is deterministic:
 * notes that share more words with the turn's task or message come first, heading matches
 * counting double, and ties keep file order (files by name, entries top to bottom).
 * A file's notes and their words can be indexed once (`indexMemoryNotes`) and ranked
 * against many queries; the order is the same as ranking the plain notes.
 */

export interface MemoryNote {
  /** `workers/<worker>/memory/<file>.md#<heading-slug>`. */
  source: string;
  heading: string;
  /** The entry as written: its `## ` heading line and body. */
  text: string;
}

const STOPWORDS = new Set(
  'the and for are but not you your with this that from have has had was were will would can could should about into onto than then them they their there what when where which who whom why how all any each our out his her its one two also just more most some such only own same very too off over under again once here'.split(
    ' ',
  ),
);

function slugify(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}

/** Splits one memory file into its `## ` entries, in file order, each with a unique anchor. */
export function parseMemoryNotes(path: string, text: string): MemoryNote[] {
  const notes: MemoryNote[] = [];
  const used = new Set<string>();
  let current: { heading: string; lines: string[] } | undefined;
  const flush = () => {
    if (!current) return;
    const base = slugify(current.heading) || `note-${notes.length + 1}`;
    let anchor = base;
    for (let n = 2; used.has(anchor); n++) anchor = `${base}-${n}`;
    used.add(anchor);
    notes.push({ source: `${path}#${anchor}`, heading: current.heading, text: current.lines.join('\n').trim() });
  };
  for (const line of text.split('\n')) {
    const heading = /^## +(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      current = { heading: heading[1]!, lines: [line.trimEnd()] };
    } else if (current) {
      current.lines.push(line);
    }
  }
  flush();
  return notes;
}

/** A note with the words ranking compares it by, computed once. */
export interface IndexedMemoryNote extends MemoryNote {
  readonly headingTerms: ReadonlySet<string>;
  /** Words of the whole entry, heading line included. */
  readonly bodyTerms: ReadonlySet<string>;
}

function terms(text: string): Set<string> {
  const found = new Set<string>();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []) if (!STOPWORDS.has(word)) found.add(word);
  return found;
}

/** `parseMemoryNotes` with each note's words precomputed: same notes, same order. */
export function indexMemoryNotes(path: string, text: string): IndexedMemoryNote[] {
  return parseMemoryNotes(path, text).map((note) => ({ ...note, headingTerms: terms(note.heading), bodyTerms: terms(note.text) }));
}

function isIndexed(note: MemoryNote): note is IndexedMemoryNote {
  return (note as Partial<IndexedMemoryNote>).headingTerms !== undefined && (note as Partial<IndexedMemoryNote>).bodyTerms !== undefined;
}

/**
 * Notes ordered best first for `query`; stable, so equal scores keep their given order.
 * Indexed notes are ranked by their precomputed words, plain ones by words found now.
 */
export function rankMemoryNotes<T extends MemoryNote>(notes: readonly T[], query: string): T[] {
  const wanted = terms(query);
  if (wanted.size === 0) return [...notes];
  const scored = notes.map((note, index) => {
    const heading = isIndexed(note) ? note.headingTerms : terms(note.heading);
    const body = isIndexed(note) ? note.bodyTerms : terms(note.text);
    let score = 0;
    for (const term of wanted) score += heading.has(term) ? 2 : body.has(term) ? 1 : 0;
    return { note, index, score };
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.map((entry) => entry.note);
}
