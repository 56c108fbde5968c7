import { closeSync, openSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { buildTestApp } from '../../helpers/app.js';

/**
 * Issue 36: 150,000 files in meetings/ were listed in full on every venus compile (1.7–3.9 s
 * each, /healthz stalled, a second request shed) and never cached: the listing weighed more
 * than the whole listings area. A directory past BRAIN_LISTING_MAX_ENTRIES is read in part,
 * the newest names kept, with a warning; the part is cached while the directory is unchanged.
 * Here 15,000 files against a limit of 100: the same 150 times over the limit as 150,000
 * against the default 10,000, for a tenth of the files to make (150,000 cost about 7 s of CPU).
 */
const FILES = 15_000;
const NOW = '2026-11-30T17:20:00Z';
let brainRoot: string;

beforeAll(async () => {
  brainRoot = await mkdtemp(join(tmpdir(), 'cc-big-listing-'));
  await cp(EXAMPLE_BRAIN, brainRoot, { recursive: true });
  // Old meetings, one a name, created once for the file (the suite's TMPDIR is a tmpfs).
  for (let i = 0; i < FILES; i++) closeSync(openSync(join(brainRoot, 'meetings', `2019-01-01-old-${String(i).padStart(6, '0')}.md`), 'w'));
}, 120_000);

afterAll(() => rm(brainRoot, { recursive: true, force: true }));

describe('a brain directory of 15,000 files, 150 times its listing limit', () => {
  it('is listed in part, newest names first, with a warning, and the part is cached: a second compile lists nothing', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot, BRAIN_LISTING_MAX_ENTRIES: '100' });
    const listings = () => app.caches.stats().find((area) => area.area === 'brain.listings')!;
    const compile = () => app.inject({ url: `/context/venus?now=${NOW}` });

    // /healthz answers while the first compile streams the directory.
    const first = compile();
    const health = await app.inject({ url: '/healthz' });
    expect(health.statusCode).toBe(200);
    const answer = await first;
    expect(answer.statusCode).toBe(200);
    const body = answer.json() as { liveContext: string; warnings: string[] };
    // The example brain's newest meeting is still found among the newest names.
    expect(body.liveContext).toContain('Roadmap review');
    expect(body.warnings).toContain('meetings has more than 100 entries (BRAIN_LISTING_MAX_ENTRIES); only the last 100 by name (the newest, for dated names) were listed');

    const before = listings();
    expect(before.entries).toBeGreaterThanOrEqual(1);
    const again = await compile();
    expect(again.statusCode).toBe(200);
    expect(again.json().warnings).toEqual(body.warnings);
    const after = listings();
    // Served from the cache: a hit, and no new miss (a miss is a listing read afresh).
    expect(after.misses).toBe(before.misses);
    expect(after.hits).toBeGreaterThan(before.hits);
  }, 120_000);
});
