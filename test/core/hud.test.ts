import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildHud, countLines, hudProblems, loadedFile, missingFile, serializeSnapshot, sha256Hex, SNAPSHOT_HEADER, type Hud, type SnapshotFile } from '../../src/core/index.js';

const SHA = (text: string) => sha256Hex(text);

function loaded(path: string, text: string, options: { size?: number; truncated?: boolean; keep?: 'head' | 'tail' } = {}): SnapshotFile {
  const bytes = Buffer.byteLength(text);
  return loadedFile({ path, size: options.size ?? bytes, sha256: SHA(text), bytes, truncated: options.truncated ?? false, keep: options.keep ?? 'head', text });
}

const BLOCKS = [
  { kind: 'identity' as const, source: 'workers/scribe/identity.md', chars: 100 },
  { kind: 'runtime-policy' as const, source: 'builtin:runtime-policy', chars: 659 },
  { kind: 'memory' as const, source: 'workers/scribe/memory/style.md#sign-off', chars: 40 },
  { kind: 'memory' as const, source: 'workers/scribe/memory/style.md#dates', chars: 60 },
  { kind: 'message' as const, source: 'request:message', chars: 20 },
];

function hud(): Hud {
  return buildHud({
    loaded: [loaded('workers/scribe/memory/style.md', '## Sign-off\nThanks.\n'), loaded('workers/scribe/identity.md', 'You are Scribe.\n'), loaded('workers/scribe/policy.json', '{}')],
    missing: ['workers/scribe/connections.json', 'platform/blueprint.md'],
    blocks: BLOCKS,
    budget: { limitChars: 1000, usedChars: 900 },
  });
}

describe('HUD', () => {
  it('lists every file looked for, found or missing, sorted by path, with bytes, tokens and the blocks taken from it', () => {
    const built = hud();
    expect(built.files.map((file) => [file.path, file.exists])).toEqual([
      ['platform/blueprint.md', false],
      ['workers/scribe/connections.json', false],
      ['workers/scribe/identity.md', true],
      ['workers/scribe/memory/style.md', true],
      ['workers/scribe/policy.json', true],
    ]);
    const style = built.files[3]!;
    expect(style).toEqual({
      path: 'workers/scribe/memory/style.md',
      exists: true,
      sha256: SHA('## Sign-off\nThanks.\n'),
      size: 20,
      bytes: 20,
      tokens: 5,
      lines: null,
      blocks: ['memory'],
      chars: 100,
      share: 0.1,
    });
    expect(built.files[0]).toEqual({ ...missingFile('platform/blueprint.md'), blocks: [], chars: 0, share: 0 });
    expect(built.files[4]!.blocks).toEqual([]);
    expect(built.derived).toEqual([
      { kind: 'runtime-policy', source: 'builtin:runtime-policy', chars: 659, share: 0.659 },
      { kind: 'message', source: 'request:message', chars: 20, share: 0.02 },
    ]);
  });

  it('credits a block built from several files to each of them: a persona’s live context to SOUL.md and the daily memory files', () => {
    const built = buildHud({
      loaded: [
        loaded('SOUL.md', 'core\n'),
        loaded('memory/2026-11-30.md', 'felt calm\n'),
        loaded('memory/heartbeat-state.json', '{}'),
        loaded('topics/garden.md', 'roses\n'),
      ],
      missing: ['personas/mars.md'],
      blocks: [
        { kind: 'identity', source: 'builtin:mars/identity', chars: 300 },
        { kind: 'live-context', source: 'builtin:mars/live-context', chars: 250 },
        { kind: 'topic', source: 'topics/garden.md', chars: 50 },
      ],
      budget: { limitChars: 1000, usedChars: 700 },
    });
    const row = (path: string) => built.files.find((file) => file.path === path)!;
    expect([row('SOUL.md'), row('memory/2026-11-30.md')].map((file) => [file.blocks, file.chars, file.share])).toEqual([
      [['live-context'], 250, 0.25],
      [['live-context'], 250, 0.25],
    ]);
    // The zone's file and the topic are not live-context inputs; the topic keeps its own block.
    expect(row('memory/heartbeat-state.json').blocks).toEqual([]);
    expect(row('topics/garden.md')).toMatchObject({ blocks: ['topic'], chars: 50 });
    expect(built.shared).toEqual([{ kind: 'live-context', source: 'builtin:mars/live-context', chars: 250, share: 0.25, files: ['SOUL.md', 'memory/2026-11-30.md'] }]);
    expect(built.derived).toEqual([{ kind: 'identity', source: 'builtin:mars/identity', chars: 300, share: 0.3 }]);
    // Venus's from the tasks, calendar, inbox and newest meeting; a live context with no file read stays derived.
    const venus = buildHud({
      loaded: [loaded('tasks/open.md', '- [ ] a\n'), loaded('meetings/2026-11-29-sync.md', 'x\n'), loaded('calendar/today.md', '- 09:00 a\n')],
      missing: ['messages/inbox.md'],
      blocks: [{ kind: 'live-context', source: 'builtin:venus/live-context', chars: 80 }],
      budget: { limitChars: 1000, usedChars: 80 },
    });
    expect(venus.shared![0]!.files).toEqual(['calendar/today.md', 'meetings/2026-11-29-sync.md', 'tasks/open.md']);
    const empty = buildHud({ loaded: [], missing: ['SOUL.md'], blocks: [{ kind: 'live-context', source: 'builtin:mars/live-context', chars: 60 }], budget: { limitChars: 1000, usedChars: 60 } });
    expect([empty.shared, empty.derived.map((entry) => entry.source)]).toEqual([[], ['builtin:mars/live-context']]);
    expect(hudProblems(built)).toEqual([]);
  });

  it('gives the line range only when part of a file was read: from the start for a head, from the end for a tail', () => {
    expect(loaded('a.md', 'one\ntwo\n').lines).toBeNull();
    expect(loaded('a.md', 'one\ntwo\nthree', { truncated: true, size: 9999 }).lines).toEqual({ from: 1, to: 3 });
    expect(loaded('a.md', 'eight\nnine\n', { truncated: true, keep: 'tail', size: 9999 }).lines).toEqual({ from: -2, to: -1 });
    expect(countLines('')).toBe(0);
    expect(countLines('a')).toBe(1);
    expect(countLines('a\n\nb\n')).toBe(3);
  });

  it('serialises the snapshot canonically: a header, sorted lines in a fixed key order, a trailing newline, whatever the input order', () => {
    const files = hud().files;
    const text = serializeSnapshot(files);
    expect(text.startsWith(`${SNAPSHOT_HEADER}\n`)).toBe(true);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n')).toHaveLength(files.length + 2);
    expect(text.split('\n')[1]).toBe('{"path":"platform/blueprint.md","exists":false,"sha256":null,"size":0,"bytes":0,"tokens":0,"lines":null}');
    // Only the snapshot's own fields, whatever else a HUD row holds, in its own key order.
    const shuffled = [...files].reverse().map(({ lines, tokens, bytes, size, sha256, exists, path }) => ({ lines, tokens, bytes, size, sha256, exists, path }));
    expect(serializeSnapshot(shuffled)).toBe(text);
    expect(hud().snapshotSha256).toBe(sha256Hex(text));
    expect(serializeSnapshot([])).toBe(`${SNAPSHOT_HEADER}\n`);
  });

  it('gives the same HUD whatever order the files were read and missed in', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(['a.md', 'b/c.md', 'b.md', 'z.json', 'é.md', 'B.md'], { minLength: 1 }), fc.integer({ min: 0, max: 6 }), (paths, split) => {
        const files = paths.slice(0, split).map((path) => loaded(path, `${path}\n`));
        const missing = paths.slice(split);
        const a = buildHud({ loaded: files, missing, blocks: [], budget: { limitChars: 100, usedChars: 0 } });
        const b = buildHud({ loaded: [...files].reverse(), missing: [...missing].reverse(), blocks: [], budget: { limitChars: 100, usedChars: 0 } });
        expect(b).toEqual(a);
        expect(hudProblems(a)).toEqual([]);
      }),
    );
  });
});

describe('HUD validator', () => {
  it('accepts a HUD as built', () => {
    expect(hudProblems(hud())).toEqual([]);
    expect(hudProblems(JSON.parse(JSON.stringify(hud())))).toEqual([]);
  });

  it('rejects a bad digest: a file digest that is not one, or a snapshot digest that is not the canonical bytes’', () => {
    const notHex = hud();
    notHex.files[2]!.sha256 = 'not-a-digest';
    expect(hudProblems(notHex).join('\n')).toContain('files[2] (workers/scribe/identity.md): bad digest');
    const edited = hud();
    edited.files[2]!.tokens = 999;
    expect(hudProblems(edited)).toEqual(['bad digest: snapshotSha256 is not the sha256 of the canonical snapshot']);
    const missingWithDigest = hud();
    missingWithDigest.files[0]!.sha256 = SHA('x');
    expect(hudProblems(missingWithDigest).join('\n')).toContain('a missing file has none');
  });

  it('rejects an inverted line range, a zero line, or a range that mixes start and end', () => {
    for (const [lines, expected] of [
      [{ from: 9, to: 3 }, 'inverted line range (9 > 3)'],
      [{ from: -1, to: -4 }, 'inverted line range (-1 > -4)'],
      [{ from: 0, to: 3 }, 'not a range of non-zero whole numbers'],
      [{ from: -3, to: 2 }, 'from the start or from the end, not both'],
      [{ from: 1.5, to: 2 }, 'not a range of non-zero whole numbers'],
    ] as const) {
      const bad = hud();
      bad.files[3]!.lines = { ...lines };
      bad.snapshotSha256 = sha256Hex(serializeSnapshot(bad.files));
      expect(hudProblems(bad).join('\n')).toContain(expected);
    }
  });

  it('rejects files out of order or repeated, bytes over the size, and anything that is not a HUD', () => {
    const unsorted = hud();
    unsorted.files.reverse();
    expect(hudProblems(unsorted).join('\n')).toContain('out of order or repeated');
    const over = hud();
    over.files[2]!.bytes = over.files[2]!.size + 1;
    expect(hudProblems(over).join('\n')).toContain('more bytes taken than the file holds');
    expect(hudProblems(null)).toEqual(['the HUD is not an object']);
    expect(hudProblems({ snapshotSha256: 'x', limitChars: 1, usedChars: 0, derived: [] })).toContain('files is not a list');
  });
});
