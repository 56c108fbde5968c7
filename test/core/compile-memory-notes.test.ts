import { describe, expect, it } from 'vitest';
import { parseMemoryNotes, rankMemoryNotes } from '../../src/core/index.js';
import { indexMemoryNotes } from '../../src/core/memory-notes.js';

const FILE = `# Style notes (preamble, not a note)

## Prefers British spelling
Alex writes "colour".

### Exceptions
US clients get US spelling.

## Sign-off
Work emails end with "Thanks, Alex".

## Sign-off
A second entry with the same heading.
`;

describe('memory notes', () => {
  it('splits a file into one note per "## " entry, sub-headings included, preamble excluded', () => {
    const notes = parseMemoryNotes('workers/scribe/memory/style.md', FILE);
    expect(notes.map((note) => note.source)).toEqual([
      'workers/scribe/memory/style.md#prefers-british-spelling',
      'workers/scribe/memory/style.md#sign-off',
      'workers/scribe/memory/style.md#sign-off-2',
    ]);
    expect(notes[0]!.text).toBe('## Prefers British spelling\nAlex writes "colour".\n\n### Exceptions\nUS clients get US spelling.');
    expect(parseMemoryNotes('m.md', 'no headings at all')).toEqual([]);
  });

  it('ranks by shared words with the turn, heading matches first, ties in file order', () => {
    const notes = parseMemoryNotes('m.md', FILE);
    expect(rankMemoryNotes(notes, 'How should the email sign-off look?').map((note) => note.source)).toEqual([
      'm.md#sign-off',
      'm.md#sign-off-2',
      'm.md#prefers-british-spelling',
    ]);
    expect(rankMemoryNotes(notes, 'Check the spelling for our US clients').map((note) => note.source)[0]).toBe('m.md#prefers-british-spelling');
    expect(rankMemoryNotes(notes, '')).toEqual(notes);
  });

  it('is deterministic and does not reorder its input', () => {
    const notes = parseMemoryNotes('m.md', FILE);
    const copy = [...notes];
    expect(rankMemoryNotes(notes, 'sign-off spelling')).toEqual(rankMemoryNotes(copy, 'sign-off spelling'));
    expect(notes).toEqual(copy);
  });

  it('ranks notes indexed once exactly as it ranks the plain notes, for any query', () => {
    const indexed = indexMemoryNotes('m.md', FILE);
    const plain = parseMemoryNotes('m.md', FILE);
    expect(indexed.map(({ source, heading, text }) => ({ source, heading, text }))).toEqual(plain);
    expect([...indexed[1]!.headingTerms]).toEqual(['sign']);
    for (const query of ['', 'How should the email sign-off look?', 'Check the spelling for our US clients', 'colour thanks exceptions', 'nothing shared']) {
      expect(rankMemoryNotes(indexed, query).map((note) => note.source)).toEqual(rankMemoryNotes(plain, query).map((note) => note.source));
    }
  });
});
