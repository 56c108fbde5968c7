import { describe, expect, it } from 'vitest';
import { formatHud, lineRange } from '../../src/cli/format-hud.js';
import { buildHud, loadedFile, sha256Hex } from '../../src/core/index.js';

describe('formatHud', () => {
  it('prints one row per file looked for, sorted by path, then the blocks built from several files and those from no file', () => {
    const hud = buildHud({
      loaded: [
        loadedFile({ path: 'workers/courier/identity.md', size: 200, sha256: sha256Hex('i'), bytes: 200, truncated: false, keep: 'head', text: 'x'.repeat(200) }),
        loadedFile({ path: 'memory/2026-11-30.md', size: 190_212, sha256: sha256Hex('m'), bytes: 131_012, truncated: true, keep: 'tail', text: 'line\n'.repeat(1472) }),
      ],
      missing: ['workers/courier/connections.json'],
      blocks: [
        { kind: 'identity', source: 'workers/courier/identity.md', chars: 200 },
        { kind: 'live-context', source: 'builtin:mars/live-context', chars: 480 },
        { kind: 'task', source: 'request:task', chars: 15 },
      ],
      budget: { limitChars: 48_000, usedChars: 2_997 },
    });
    expect(formatHud(hud, 'HUD of worker courier')).toBe(
      [
        `HUD of worker courier — 3 files looked for, 2 found; snapshot ${hud.snapshotSha256.slice(0, 16)}`,
        'budget: 2,997 of 48,000 chars used',
        '',
        '  path                              exists   bytes               tokens  lines       blocks        share',
        '  memory/2026-11-30.md              yes      131,012 of 190,212  1,840   last 1,472  live-context  1.0%',
        '  workers/courier/connections.json  missing',
        '  workers/courier/identity.md       yes      200                 50      whole       identity      0.4%',
        '',
        'built from several files (each lists the block):',
        '  source                     block         chars  share  files',
        '  builtin:mars/live-context  live-context  480    1.0%   memory/2026-11-30.md',
        '',
        'from no file:',
        '  source        block  chars  share',
        '  request:task  task   15     0.0%',
        '',
      ].join('\n'),
    );
  });

  it('says which end a line range counts from', () => {
    expect(lineRange(null)).toBe('whole');
    expect(lineRange({ from: 1, to: 120 })).toBe('1-120');
    expect(lineRange({ from: -120, to: -1 })).toBe('last 120');
    expect(lineRange({ from: -120, to: -3 })).toBe('120-3 from the end');
  });
});
