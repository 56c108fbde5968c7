import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { deliveredEvent } from '../helpers/trace-events.js';
import { NOW, turn } from '../helpers/security-harness.js';

interface Listing {
  path: string;
  count: number;
  sha256: string;
  names?: string[];
  changed?: boolean;
  currentCount?: number | null;
  currentSha256?: string | null;
  added?: string[];
  removed?: string[];
}

interface FreshnessEvent {
  sources: Array<{ path: string; changed?: boolean; currentSha256?: string | null }>;
  absent?: Array<{ path: string; appeared?: boolean }>;
  listings?: Listing[];
}

async function harness() {
  const brain = await copyExampleBrain();
  const { app } = await buildTestApp({ BRAIN_ROOT: brain });
  const event = async (runId: string, verify = true): Promise<FreshnessEvent> => {
    const response = await app.inject(`/runs/${runId}/trace${verify ? '?verify=sources' : ''}`);
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    return response.json().events[0] as FreshnessEvent;
  };
  const run = async (url: string, runId: string) => {
    const response = await app.inject(`${url}${url.includes('?') ? '&' : '?'}now=${NOW}&runId=${runId}`);
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
  };
  return { app, brain, event, run };
}

const appeared = (event: FreshnessEvent, path: string) => event.absent?.find((entry) => entry.path === path);
const listing = (event: FreshnessEvent, path: string) => event.listings?.find((entry) => entry.path === path);

describe('GET /runs/:runId/trace?verify=sources: source freshness sees new and removed files', () => {
  it('records the paths a compile found missing and the listings it relied on, and marks nothing without ?verify', async () => {
    const { brain, event, run } = await harness();
    await rm(join(brain, 'calendar/today.md'));
    await run('/context/venus', 'venus-1');
    const plain = await event('venus-1', false);
    expect(plain.absent).toContainEqual({ path: 'calendar/today.md' });
    expect(listing(plain, 'meetings')).toEqual({
      path: 'meetings',
      count: 3,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      names: ['2026-11-20-design-critique.md', '2026-11-24-platform-sync.md', '2026-11-27-roadmap-review.md'],
    });

    const verified = await event('venus-1');
    expect(appeared(verified, 'calendar/today.md')).toEqual({ path: 'calendar/today.md', appeared: false });
    expect(listing(verified, 'meetings')).toMatchObject({ changed: false, currentCount: 3, added: [], removed: [] });
    expect(verified.sources.every((source) => source.changed === false)).toBe(true);
  });

  it('says a calendar created after the run appeared', async () => {
    const { brain, event, run } = await harness();
    await rm(join(brain, 'calendar/today.md'));
    await run('/context/venus', 'calendar-later');
    await writeFile(join(brain, 'calendar/today.md'), '- 09:00 Standup\n');
    expect(appeared(await event('calendar-later'), 'calendar/today.md')).toEqual({ path: 'calendar/today.md', appeared: true });
  });

  it('says a missing directory appeared, once created', async () => {
    const { brain, event, run } = await harness();
    await rm(join(brain, 'meetings'), { recursive: true });
    await run('/context/venus', 'meetings-later');
    expect(appeared(await event('meetings-later'), 'meetings')).toEqual({ path: 'meetings', appeared: false });
    await mkdir(join(brain, 'meetings'));
    await writeFile(join(brain, 'meetings/2026-11-29-retro.md'), '# Retro\n\nWe agreed to ship on Friday.\n');
    expect(appeared(await event('meetings-later'), 'meetings')).toEqual({ path: 'meetings', appeared: true });
  });

  it('names a new memory file and a new meeting file as added', async () => {
    const { brain, event, run } = await harness();
    await run('/context/mars', 'mars-new');
    await run('/context/venus', 'venus-new');
    await writeFile(join(brain, 'memory/2026-12-01.md'), '# 2026-12-01\n\n- I feel rested.\n');
    await writeFile(join(brain, 'meetings/2026-11-29-retro.md'), '# Retro\n\nWe agreed to ship on Friday.\n');

    const memory = listing(await event('mars-new'), 'memory')!;
    expect(memory).toMatchObject({ count: 4, changed: true, currentCount: 5, added: ['2026-12-01.md'], removed: [] });
    expect(memory.currentSha256).not.toBe(memory.sha256);
    expect(listing(await event('venus-new'), 'meetings')).toMatchObject({ changed: true, added: ['2026-11-29-retro.md'], removed: [] });
  });

  it('names a removed file, marks its source changed, and counts a removed directory as empty', async () => {
    const { brain, event, run } = await harness();
    await run('/context/mars', 'mars-gone');
    await run('/context/venus', 'venus-gone');
    await rm(join(brain, 'memory/2026-11-30.md'));
    await rm(join(brain, 'meetings'), { recursive: true });

    const mars = await event('mars-gone');
    expect(listing(mars, 'memory')).toMatchObject({ changed: true, currentCount: 3, added: [], removed: ['2026-11-30.md'] });
    expect(mars.sources.find((source) => source.path === 'memory/2026-11-30.md')).toMatchObject({ changed: true, currentSha256: null });
    expect(listing(await event('venus-gone'), 'meetings')).toMatchObject({ changed: true, currentCount: 0, removed: expect.arrayContaining(['2026-11-27-roadmap-review.md']) });
  });

  it('records a worker memory listing on POST /compile, and a directory too big for its names by count and digest alone', async () => {
    const { app, brain, event } = await harness();
    for (let i = 0; i < 70; i++) await writeFile(join(brain, `workers/scribe/memory/note-${String(i).padStart(2, '0')}.md`), `## Note ${i}\nKeep it short.\n`);
    const response = await app.inject({ method: 'POST', url: '/compile', payload: turn({ runId: 'scribe-big' }) });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const before = listing(await event('scribe-big', false), 'workers/scribe/memory')!;
    expect(before.count).toBeGreaterThan(64);
    expect(before).not.toHaveProperty('names');

    await writeFile(join(brain, 'workers/scribe/memory/note-99.md'), '## Note 99\nNew.\n');
    const after = listing(await event('scribe-big'), 'workers/scribe/memory')!;
    expect(after).toMatchObject({ changed: true, currentCount: before.count + 1 });
    expect(after).not.toHaveProperty('added');
  });
});

describe('regression: ?verify=sources reads a source confined as the compile read it', () => {
  it('reports a topic file replaced by a link out of topics/ as changed (it was read back unconfined, as unchanged)', async () => {
    const { brain, event, run } = await harness();
    await mkdir(join(brain, 'topics'), { recursive: true });
    const text = '# Moving house\n\nSummary: boxes, the van on Saturday.\n';
    await writeFile(join(brain, 'topics/moving.md'), text);
    await run('/context/mars?topicId=moving', 'topic-1');
    const before = await event('topic-1');
    const topic = before.sources.find((source) => source.path === 'topics/moving.md') as { within?: string; changed?: boolean } | undefined;
    expect(topic).toMatchObject({ within: 'topics', changed: false });

    // The same bytes, but now behind a link that leaves topics/: a compile now refuses it.
    await mkdir(join(brain, 'archive'), { recursive: true });
    await writeFile(join(brain, 'archive/moving.md'), text);
    await rm(join(brain, 'topics/moving.md'));
    await symlink('../archive/moving.md', join(brain, 'topics/moving.md'));
    const after = await event('topic-1');
    expect(after.sources.find((source) => source.path === 'topics/moving.md')).toMatchObject({ changed: true, currentSha256: null });
  });
});

describe('regression: a trace line the chain marks as forged drove ?verify=sources directory listings and file reads', () => {
  /** A run of two events: one as written, one whose bytes were edited afterwards (its link no longer holds). */
  async function forged(env: Record<string, string> = {}) {
    const brain = await copyExampleBrain();
    const traceDir = join(await tempDir('cc-forged-'), 'traces');
    const { app } = await buildTestApp({ BRAIN_ROOT: brain, TRACE_DIR: traceDir, ...env });
    const listings = [{ path: 'meetings', count: 0, sha256: '0'.repeat(64) }];
    await app.traces.append(deliveredEvent('run-forged', { request: { n: 1 }, listings, absent: [{ path: 'calendar/today.md' }] }));
    await app.traces.append(deliveredEvent('run-forged', { request: { n: 2 }, listings, absent: [{ path: 'calendar/today.md' }] }));
    const [name] = (await readdir(traceDir)).filter((file) => file.endsWith('.jsonl'));
    const path = join(traceDir, name!);
    // The second event now names other paths: a directory and a file the compile never read.
    const lines = (await readFile(path, 'utf8')).split('\n');
    const at = lines.findIndex((line) => line.includes('"request":{"n":2}'));
    // Edited in place, byte count kept: only the chain can tell.
    lines[at] = lines[at]!.replace('"path":"meetings"', '"path":"channels"').replace('"path":"calendar/today.md"', '"path":"topics/launch1.md"');
    await writeFile(path, lines.join('\n'));
    const verify = vi.spyOn(app.brain, 'verify');
    const verifyListing = vi.spyOn(app.brain, 'verifyListing');
    const verifyAbsent = vi.spyOn(app.brain, 'verifyAbsent');
    const trace = (await app.inject('/runs/run-forged/trace?verify=sources')).json();
    return { trace, verify, verifyListing, verifyAbsent };
  }

  it('checks the brain only for events whose chain link holds, and says why it skipped the forged one', async () => {
    const { trace, verify, verifyListing, verifyAbsent } = await forged();
    const [intact, edited] = trace.events;
    expect(intact).toMatchObject({ chain: 'linked', listings: [{ path: 'meetings', changed: true }], absent: [{ path: 'calendar/today.md', appeared: true }] });
    expect(intact.verifySkipped).toBeUndefined();
    expect(edited.chain).toBe('broken');
    expect(edited.verifySkipped).toMatch(/chain link does not hold/);
    expect(edited.listings).toEqual([{ path: 'channels', count: 0, sha256: '0'.repeat(64) }]);
    expect(edited.sources.every((source: { changed?: boolean }) => source.changed === undefined)).toBe(true);
    expect(verifyListing.mock.calls.map(([listing]) => listing.path)).toEqual(['meetings']);
    expect(verifyAbsent.mock.calls.map(([path]) => path)).toEqual(['calendar/today.md']);
    expect(edited.absent).toEqual([{ path: 'topics/launch1.md' }]);
    expect(verify.mock.calls.map(([source]) => source.path)).toEqual(['SOUL.md']);
  });

  it('with TRACE_SIGNING_KEY, acts only on events signed with it', async () => {
    const { trace, verifyListing } = await forged({ TRACE_SIGNING_KEY: 'trace-signing-key-0123456789abcdef-0123' });
    expect(trace.events.map((event: { chain: string }) => event.chain)).toEqual(['signed', 'broken']);
    expect(trace.events[1].verifySkipped).toMatch(/not signed with TRACE_SIGNING_KEY/);
    expect(verifyListing).toHaveBeenCalledTimes(1);
  });
});
