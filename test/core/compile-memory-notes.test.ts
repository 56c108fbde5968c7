import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseMemoryNotes, rankMemoryNotes } from '../../src/core/index.js';
import { indexMemoryNotes, rankIndexedMemoryNotes } from '../../src/core/memory-notes.js';

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

  it('ranks indexed files exactly as it ranks their plain notes, for any query', () => {
    const other = '## Spelling of client names\nCheck every US client name twice.\n\n## Thanks\nSay thanks once.\n';
    const files = [indexMemoryNotes('m.md', FILE), indexMemoryNotes('n.md', other)];
    const plain = [...parseMemoryNotes('m.md', FILE), ...parseMemoryNotes('n.md', other)];
    expect(files.flatMap((file) => file.notes)).toEqual(plain);
    expect(files[0]!.words.get('sign')).toEqual([[1, 2], [2, 2]]);
    expect(files[0]!.words.get('colour')).toEqual([[0, 1]]);
    for (const query of ['', 'How should the email sign-off look?', 'Check the spelling for our US clients', 'client thanks spelling', 'colour thanks exceptions', 'nothing shared']) {
      expect(rankIndexedMemoryNotes(files, query), query).toEqual(rankMemoryNotes(plain, query));
    }
  });

  it('ranks indexed files as the plain notes for random files and queries (property)', () => {
    const word = fc.constantFrom('sign', 'off', 'email', 'client', 'Spelling', 'thanks', 'notes', 'the', 'über', 'x1', 'review');
    const line = fc.array(word, { minLength: 1, maxLength: 6 }).map((words) => words.join(' '));
    const entry = fc.tuple(line, fc.array(line, { maxLength: 3 })).map(([heading, body]) => [`## ${heading}`, ...body].join('\n'));
    const file = fc.array(entry, { maxLength: 5 }).map((entries) => entries.join('\n\n'));
    fc.assert(
      fc.property(fc.array(file, { minLength: 1, maxLength: 3 }), line, (texts, query) => {
        const files = texts.map((text, i) => indexMemoryNotes(`f${i}.md`, text));
        const plain = texts.flatMap((text, i) => parseMemoryNotes(`f${i}.md`, text));
        expect(rankIndexedMemoryNotes(files, query)).toEqual(rankMemoryNotes(plain, query));
      }),
    );
  });
});
