import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { frontMatterRevision, parseBlueprint } from '../../src/core/governance.js';
import { noteHeading, parseMemoryNotes } from '../../src/core/memory-notes.js';
import { dropTrailingFragment, groupThousands } from '../../src/core/persona/live-context.js';
import { headingOf } from '../../src/core/signals/markdown.js';
import { summarizeMeeting } from '../../src/core/signals/meetings.js';
import { toSingleLine, trimLineEnds } from '../../src/core/text.js';

/**
 * Issue 27: the patterns that backtracked on brain text are now scans, and each scan returns
 * exactly what its pattern did. The old patterns are run here only on strings short enough
 * for them (at most a dozen units), against the scans, on every mix of the characters that
 * matter to them.
 */
const OLD = {
  trailingFragment: (text: string) => text.replace(/(?:\s*\S*[\d@]\S*)+$/u, ''),
  noteHeading: (line: string) => /^## +(.*?)\s*#*\s*$/.exec(line)?.[1],
  revision: (text: string) => /^revision:[ \t]*(.*?)[ \t]*$/m.exec(text)?.[1]?.replace(/^(["'])(.*)\1$/, '$2'),
  lineEnds: (text: string) => text.replace(/[ \t]+$/gm, ''),
  meetingTitle: (title: string) =>
    title.replace(/[ \t]*[—–:-]?[ \t]*\(?\d{4}-\d{2}-\d{2}\)?[ \t]*$/, '').replace(/^\d{4}-\d{2}-\d{2}[ \t]*[—–:-]?[ \t]*/, '').trim(),
  thousands: (count: number) => String(count).replace(/\B(?=(\d{3})+$)/g, ','),
};

const from = (pieces: string[], maxLength = 12) => fc.array(fc.constantFrom(...pieces), { maxLength }).map((parts) => parts.join(''));
const RUNS = { numRuns: 5000 };

describe('linear scans that replaced backtracking patterns (issue 27)', () => {
  it('dropTrailingFragment drops what the exponential trailing-fragment pattern dropped', () => {
    fc.assert(fc.property(from(['a', '1', '@', ' ', '\t', '\u00a0', '\u2028', '\ufeff', '\u3000', '9x', '\ud83d\ude00', '…']), (text) => dropTrailingFragment(text) === OLD.trailingFragment(text)), RUNS);
    expect(dropTrailingFragment(`x ${'1'.repeat(20)} a`)).toBe(`x ${'1'.repeat(20)} a`);
    expect(dropTrailingFragment('call me at 415 555')).toBe('call me at');
    expect(dropTrailingFragment(`x ${'1'.repeat(200_000)}`)).toBe('x');
  });

  it('noteHeading reads what the note-heading pattern captured, and a 60,000-space heading at once', () => {
    fc.assert(fc.property(from(['#', ' ', '\t', 'a', '\r', '\u2028', '\u00a0', 'b', '##']).map((rest) => `##${rest}`), (line) => noteHeading(line) === OLD.noteHeading(line)), RUNS);
    expect(noteHeading(`## a${' '.repeat(60_000)}b`)).toBe(`a${' '.repeat(60_000)}b`);
    expect(parseMemoryNotes('workers/w/memory/a.md', `## a${' '.repeat(60_000)}b\nbody\n`).map((note) => note.source)).toEqual(['workers/w/memory/a.md#a-b']);
  });

  it('frontMatterRevision reads what the revision-line pattern and the quote strip did', () => {
    fc.assert(fc.property(from(['revision:', ' ', '\t', 'a', '\r', '\u2028', '\n', '"', "'", 'x: y']), (text) => frontMatterRevision(text) === OLD.revision(text)), RUNS);
    const blueprint = parseBlueprint(`---\nrevision: a${' '.repeat(150_000)}b\n---\nbody`, 'f'.repeat(64));
    expect(blueprint).toMatchObject({ revision: `sha256:${'f'.repeat(16)}`, revisionFrom: 'sha256', body: 'body' });
    expect(parseBlueprint("---\nrevision: '2026.11'\n---\nbody", 'f'.repeat(64)).revision).toBe('2026.11');
  });

  it("trimLineEnds trims what `/[ \\t]+$/gm` trimmed from a persona override's lines", () => {
    fc.assert(fc.property(from(['a', ' ', '\t', '\n', 'b ']), (text) => trimLineEnds(text) === OLD.lineEnds(text)), RUNS);
  });

  it("a meeting title loses the trailing date the cubic date pattern removed", () => {
    const title = (heading: string) => summarizeMeeting('2026-01-01-x.md', `# ${heading}\n`)!.title;
    const pieces = ['2026-11-27', '1', '-', '—', '–', ':', ' ', '\t', '(', ')', 'a', '202', '6-1', '1-27'];
    fc.assert(
      fc.property(from(pieces, 8).map((rest) => `x${rest}`), (heading) => title(heading) === (toSingleLine(OLD.meetingTitle(headingOf(`# ${heading}`)!.text), 240) || 'x')),
      RUNS,
    );
  });

  it('groupThousands groups as the lookahead pattern did', () => {
    fc.assert(fc.property(fc.nat(), (count) => groupThousands(count) === OLD.thousands(count)), RUNS);
  });
});
