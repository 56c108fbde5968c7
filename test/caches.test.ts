import { describe, expect, it } from 'vitest';
import { CACHE_AREAS, createCacheArea, createCaches } from '../src/caches.js';
import { NO_COMPILER_MEMO } from '../src/core/compile/memo.js';
import { area, joinAreas, noMemos, type Area, type Areas, type AreaValue } from '../src/core/area.js';
import { NO_SOURCE_MEMO } from '../src/sources/memo.js';
import { buildTestApp } from './helpers/app.js';

const NOW = '2026-11-30T17:05:00Z';

/** Every area the tables declare. */
const DECLARED: Array<Area<never, AreaValue>> = Object.values(CACHE_AREAS).flatMap((table: Areas) => Object.values(table));

/** The areas' names: the `area` label of the `cc_cache_*` metrics operators chart, so a rename is a change they see. */
const AREA_NAMES = [
  'brain.files', 'brain.listings', 'brain.missing',
  'compiler.blocks', 'compiler.inputParts', 'compiler.prefixes', 'compiler.routeKeys', 'compiler.stableParts', 'compiler.tokens', 'compiler.toolTokens',
  'compiler.time.clocks', 'compiler.time.formatters', 'compiler.time.hours', 'compiler.time.minutes', 'compiler.time.zones',
  'sources.blueprints', 'sources.connections', 'sources.connects', 'sources.dailyPlans', 'sources.heartbeats', 'sources.liveContexts', 'sources.memoryNotes',
  'sources.newestMeetings', 'sources.personaDays', 'sources.personaMinutes', 'sources.personas', 'sources.policies', 'sources.policyKeys', 'sources.settingsFiles',
  'sources.toolsFiles', 'sources.topics', 'sources.venusDays', 'sources.workerFiles',
  'trace.blocks', 'trace.chains', 'trace.evictedLines', 'trace.evictedRuns', 'trace.objects', 'trace.sources', 'trace.stored', 'trace.texts',
];

describe('the cache set', () => {
  it('bounds each area by bytes: the least recently used entries make room, and an entry heavier than its area is not kept', () => {
    const area = createCacheArea<string, { n: number }>('test', 1000);
    for (let i = 0; i < 50; i++) area.set(`k${i}`, { n: i }, 100);
    expect(area.stats()).toMatchObject({ entries: 10, bytes: 1000, maxBytes: 1000 });
    expect(area.get('k0')).toBeUndefined();
    expect(area.get('k49')).toEqual({ n: 49 });
    area.set('huge', { n: -1 }, 5000);
    expect(area.get('huge')).toBeUndefined();
    expect(area.stats().bytes).toBeLessThanOrEqual(1000);
  });

  it('shares one bound among its areas', () => {
    const caches = createCaches({ maxBytes: 1_000_000 });
    const total = caches.stats().reduce((sum, area) => sum + area.maxBytes, 0);
    expect(total).toBeLessThanOrEqual(1_000_000);
    expect(DECLARED.reduce((sum, each) => sum + each.share, 0)).toBeLessThanOrEqual(1);
  });

  it('makes each declared area once, with its entry’s name and share', () => {
    const stats = createCaches({ maxBytes: 1_000_000 }).stats();
    expect(stats.map((each) => each.area).sort()).toEqual([...AREA_NAMES].sort());
    expect(DECLARED.map((each) => each.name).sort()).toEqual([...AREA_NAMES].sort());
    for (const each of DECLARED) expect(stats.find((made) => made.area === each.name)?.maxBytes, each.name).toBe(Math.floor(1_000_000 * each.share));
  });

  it('joins users’ tables each slot once: a slot two tables declare does not compile, and throws', () => {
    const first = { shared: area<string, string>('test.first', 0) };
    const second = { shared: area<string, number>('test.second', 0) };
    // @ts-expect-error the slot `shared` is declared by both tables
    expect(() => joinAreas(first, second)).toThrow("cache area slot 'shared' is declared twice: by test.first and by test.second");
    const joined = joinAreas(first, { other: area<string, number>('test.other', 0) });
    expect(Object.keys(joined)).toEqual(['shared', 'other']);
    expect(joined.shared).toBe(first.shared);
    expect(Object.isFrozen(joined)).toBe(true);
  });

  it('hands the compiler and the sources one set of the clock’s areas', () => {
    const caches = createCaches();
    expect(caches.compiler.time).toBe(caches.sources.time);
    expect(caches.stats().filter((each) => each.area === 'compiler.time.minutes')).toHaveLength(1);
    expect(createCaches({ freezeShared: true }).sources.freezeShared).toBe(true);
    expect(caches.sources.freezeShared).toBe(false);
  });

  it('without a cache set, every slot of a table remembers nothing', () => {
    const none = noMemos(CACHE_AREAS.sources);
    expect(Object.keys(none).sort()).toEqual(Object.keys(CACHE_AREAS.sources).sort());
    expect(Object.isFrozen(none)).toBe(true);
    expect(none.personaMinutes.set('mars', { minutes: [] }, 300)).toEqual({ minutes: [] });
    expect(none.personaMinutes.get('mars')).toBeUndefined();
    for (const memo of [NO_SOURCE_MEMO, NO_COMPILER_MEMO]) expect(Object.isFrozen(memo) && Object.isFrozen(memo.time)).toBe(true);
    expect(Object.keys(NO_SOURCE_MEMO).sort()).toEqual([...Object.keys(CACHE_AREAS.sources), 'time'].sort());
  });

  it('is created by buildApp, holds what the routes remember, and can be cleared without changing an answer', async () => {
    const { app } = await buildTestApp();
    const get = (url: string) => app.inject(url);
    const before = await get(`/context/venus?now=${NOW}&topicId=garden&format=text`);
    const json = await get(`/context/venus?now=${NOW}&topicId=garden&runId=cached-run`);
    // Reading a run back checks the chain of its file, which the files store keeps too.
    expect((await get('/runs/cached-run/trace')).statusCode).toBe(200);
    await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'turn', surface: 'chat', worker: 'scribe', channelId: 'general', message: 'hi', now: NOW } });
    const held = Object.fromEntries(app.caches.stats().map((area) => [area.area, area.entries]));
    // The trace store's memos are areas of the set too: its stats are the true total.
    for (const area of ['brain.files', 'brain.listings', 'compiler.blocks', 'compiler.prefixes', 'compiler.stableParts', 'compiler.time.minutes', 'sources.personas', 'sources.liveContexts', 'sources.personaMinutes', 'sources.policies', 'trace.texts', 'trace.blocks', 'trace.sources', 'trace.objects', 'trace.chains']) {
      expect(held[area], area).toBeGreaterThan(0);
    }
    app.caches.clear();
    expect(app.caches.stats().every((area) => area.entries === 0 && area.bytes === 0)).toBe(true);
    const after = await get(`/context/venus?now=${NOW}&topicId=garden&format=text`);
    expect(after.body).toBe(before.body);
    expect(after.headers['etag']).toBe(before.headers['etag']);
    const again = await get(`/context/venus?now=${NOW}&topicId=garden`);
    expect(again.json().systemPrompt).toBe(json.json().systemPrompt);
    expect(again.json().liveContext).toBe(json.json().liveContext);
  });

  it('belongs to its app: a second app starts with an empty set', async () => {
    const first = await buildTestApp();
    await first.app.inject(`/context/mars?now=${NOW}`);
    const second = await buildTestApp();
    expect(second.app.caches).not.toBe(first.app.caches);
    expect(second.app.caches.stats().every((area) => area.entries === 0)).toBe(true);
  });
});
