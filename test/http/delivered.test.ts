import { describe, expect, it } from 'vitest';
import { buildHud, missingFile, type SnapshotFile } from '../../src/core/hud.js';
import { createDeliveredResults } from '../../src/http/delivered.js';

const file = (path: string, size: number): SnapshotFile => ({ path, exists: true, sha256: 'a'.repeat(64), size, bytes: size, tokens: Math.ceil(size / 4), lines: null });

describe('createDeliveredResults().hud', () => {
  const loaded = Object.freeze([file('SOUL.md', 400), file('memory/2026-11-30.md', 120)]);
  const missing = Object.freeze(['memory/2026-11-29.md']);
  const budget = { limitChars: 48_000, usedChars: 900 };
  const blocksAt = (clock: string) => [
    { kind: 'identity' as const, source: 'builtin:mars/identity', chars: 300 },
    { kind: 'clock' as const, source: 'builtin:clock', chars: clock.length },
    { kind: 'live-context' as const, source: 'builtin:mars/live-context', chars: 520 },
  ];

  it('hands a new result built from the same reads (a new minute) the HUD built for the one before: the same object, equal to a HUD built afresh', () => {
    const delivered = createDeliveredResults();
    const first = delivered.hud({ loaded, missing, blocks: blocksAt('Monday, 17:05'), budget }, undefined);
    const basis = { loaded, missing, blocks: blocksAt('Monday, 17:06'), budget };
    const next = delivered.hud(basis, { etags: {}, answers: {}, answered: {} });
    expect(next).toBe(first);
    expect(next.hud).toEqual(buildHud(basis));
  });

  it('builds the HUD afresh when what it shows differs (a block of another size, another budget, other misses), and keeps that one for the reads', () => {
    const delivered = createDeliveredResults();
    const first = delivered.hud({ loaded, missing, blocks: blocksAt('Monday, 17:05'), budget }, undefined);
    for (const basis of [
      { loaded, missing, blocks: blocksAt('Monday, 17:05 (a longer line)'), budget },
      { loaded, missing, blocks: blocksAt('Monday, 17:05'), budget: { ...budget, usedChars: 901 } },
      { loaded, missing: [...missing, 'tasks/open.md'], blocks: blocksAt('Monday, 17:05'), budget },
    ]) {
      const built = delivered.hud(basis, undefined);
      expect(built).not.toBe(first);
      expect(built.hud).toEqual(buildHud(basis));
      expect(built.hud).not.toEqual(first.hud);
    }
    // Reads of the same files in another list (another session's) are checked item by item, not taken on trust.
    const other = [file('SOUL.md', 400), missingFile('memory/2026-11-30.md')];
    const basis = { loaded: other, missing, blocks: blocksAt('Monday, 17:05'), budget };
    expect(delivered.hud(basis, undefined).hud).toEqual(buildHud(basis));
  });

  it('takes a result’s own HUD first, while it holds', () => {
    const delivered = createDeliveredResults();
    const basis = { loaded, missing, blocks: blocksAt('Monday, 17:05'), budget };
    const own = { ...basis, hud: buildHud(basis) };
    expect(delivered.hud(basis, { etags: {}, answers: {}, answered: {}, hud: { built: own, etags: {} } })).toBe(own);
  });
});
