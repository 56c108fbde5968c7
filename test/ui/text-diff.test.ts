import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffHunks, diffLines, MAX_DIFF_EDITS, MAX_DIFF_LINES, type DiffLine } from '../../ui/src/text-diff.js';

/** The two texts a diff's lines spell out: unchanged and removed lines before, unchanged and added after. */
function sides(lines: readonly DiffLine[]): [string, string] {
  const before = lines.filter((line) => line.op !== 'added').map((line) => line.text);
  const after = lines.filter((line) => line.op !== 'removed').map((line) => line.text);
  return [before.join('\n'), after.join('\n')];
}

/** Length of the longest common subsequence of two line lists (quadratic: small inputs only). */
function lcs(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (const line of a) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = line === b[j - 1] ? diagonal + 1 : Math.max(row[j]!, row[j - 1]!);
      diagonal = above;
    }
  }
  return row[b.length]!;
}

describe('diffLines', () => {
  it('shows the changed line of a block, the unchanged ones around it, and the part of the line that changed', () => {
    const diff = diffLines('Date: Monday\nTime: 17:30 (UTC)\nZone: UTC\n', 'Date: Monday\nTime: 17:31 (UTC)\nZone: UTC\n');
    expect(diff).toEqual({
      kind: 'lines',
      added: 1,
      removed: 1,
      lines: [
        { op: 'same', text: 'Date: Monday' },
        { op: 'removed', text: 'Time: 17:30 (UTC)', changed: [10, 11] },
        { op: 'added', text: 'Time: 17:31 (UTC)', changed: [10, 11] },
        { op: 'same', text: 'Zone: UTC' },
        { op: 'same', text: '' },
      ],
    });
    expect(diffLines('same', 'same')).toEqual({ kind: 'same' });
  });

  it('spells out both texts exactly, with the fewest lines added and removed (a shortest edit script)', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'c', '', 'd e'), { maxLength: 24 }).map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const diff = diffLines(before, after);
        if (before === after) return diff.kind === 'same';
        if (diff.kind !== 'lines') return false;
        const [a, b] = [before.split('\n'), after.split('\n')];
        expect(sides(diff.lines)).toEqual([before, after]);
        expect(diff.added + diff.removed).toBe(a.length + b.length - 2 * lcs(a, b));
        return true;
      }),
      { numRuns: 400 },
    );
  });

  it('says "too different to show" past its caps, instead of working on', () => {
    const many = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`).join('\n');
    expect(diffLines(many('a', MAX_DIFF_EDITS), many('b', MAX_DIFF_EDITS))).toMatchObject({ kind: 'too-different', reason: expect.stringContaining('added or removed') });
    expect(diffLines(many('a', MAX_DIFF_LINES + 1), 'x')).toMatchObject({ kind: 'too-different', reason: expect.stringContaining('lines a side') });
    // A long block with one line changed is no problem: the common head and tail are trimmed first.
    const long = many('line ', MAX_DIFF_LINES * 3);
    expect(diffLines(long, long.replace('line 17000\n', 'line 17000 changed\n'))).toMatchObject({ kind: 'lines', added: 1, removed: 1 });
  });

  it('folds long unchanged stretches, keeping two lines around each change', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const after = before.replace('l10', 'L10');
    const diff = diffLines(before, after);
    if (diff.kind !== 'lines') throw new Error(diff.kind);
    expect(diffHunks(diff.lines).map((item) => (item.op === 'skip' ? `… ${item.lines}` : `${item.op} ${item.text}`))).toEqual([
      '… 8',
      'same l8',
      'same l9',
      'removed l10',
      'added L10',
      'same l11',
      'same l12',
      '… 7',
    ]);
  });
});
