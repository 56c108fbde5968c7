import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { createCompiler } from '../../src/core/compile.js';
import { DEFAULT_POLICY } from '../../src/core/policy.js';
import { buildMarsLiveContext, finishVenusLiveContext, prepareVenusLiveContext } from '../../src/core/persona/live-context.js';
import { createBrain, type BrainSession, type ListResult, type ReadOptions, type ReadResult } from '../../src/io/brain.js';
import { compilePersona, personaOrNotFound, readPersonaSources, readTopicSources } from '../../src/sources/persona.js';
import { ProblemError } from '../../src/errors.js';
import { copyExampleBrain } from '../helpers/app.js';

// Wrapped so a test can tell a rebuilt live context from a memoised one.
vi.mock('../../src/core/persona/live-context.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/core/persona/live-context.js')>();
  return {
    ...original,
    buildMarsLiveContext: vi.fn(original.buildMarsLiveContext),
    prepareVenusLiveContext: vi.fn(original.prepareVenusLiveContext),
    finishVenusLiveContext: vi.fn(original.finishVenusLiveContext),
  };
});

const OPTIONS = { defaultTimeZone: 'UTC', policy: DEFAULT_POLICY };

/** What the app hands the sources: the cache set's areas. */
function sourceMemo() {
  const caches = createCaches();
  return { ...caches.sources, time: caches.compiler.time };
}
const silent = { warn: () => undefined };

/** A brain session that records every call made through it. */
function recording(reader: BrainSession) {
  const reads: string[] = [];
  const lists: string[] = [];
  return {
    reads,
    lists,
    reader: {
      ...reader,
      read: (path: string, options?: ReadOptions): Promise<ReadResult> => {
        reads.push(path);
        return reader.read(path, options);
      },
      list: (path: string): Promise<ListResult> => {
        lists.push(path);
        return reader.list(path);
      },
    },
  };
}

beforeEach(() => {
  vi.mocked(buildMarsLiveContext).mockClear();
  vi.mocked(prepareVenusLiveContext).mockClear();
  vi.mocked(finishVenusLiveContext).mockClear();
});

describe('readPersonaSources', () => {
  it('reads each file at most once, lists only memory/ or meetings/, and never touches people/ or companies/', async () => {
    const brain = createBrain(await copyExampleBrain(), silent);
    const mars = recording(brain.session());
    await readPersonaSources(mars.reader, { persona: 'mars', now: new Date('2026-11-30T17:05:00Z'), topicId: 'garden' }, OPTIONS);
    expect([...mars.reads].sort()).toEqual(
      [
        'memory/heartbeat-state.json',
        'personas/mars.md',
        'personas/tools.json',
        'personas/settings.json',
        'topics/garden.md',
        'SOUL.md',
        'memory/2026-11-30.md',
        'memory/2026-11-29.md',
        'memory/2026-11-28.md',
      ].sort(),
    );
    expect(mars.lists).toEqual(['memory']);

    const venus = recording(brain.session());
    await readPersonaSources(venus.reader, { persona: 'venus', now: new Date('2026-11-30T17:05:00Z'), timezone: 'Europe/London' }, OPTIONS);
    // With the zone given, heartbeat-state is not read at all.
    expect([...venus.reads].sort()).toEqual(
      ['personas/venus.md', 'personas/tools.json', 'personas/settings.json', 'tasks/open.md', 'calendar/today.md', 'messages/inbox.md', 'meetings/2026-11-27-roadmap-review.md'].sort(),
    );
    expect(venus.lists).toEqual(['meetings']);

    // An unusable topic id reads nothing under topics/ (nor anywhere else it could point).
    for (const topicId of ['../SOUL', 'Garden', '', ['garden', 'real-estate']]) {
      const unsafe = recording(brain.session());
      const sources = await readPersonaSources(unsafe.reader, { persona: 'venus', now: new Date('2026-11-30T17:05:00Z'), timezone: 'UTC', topicId }, OPTIONS);
      expect(unsafe.reads.filter((path) => !venus.reads.includes(path)), JSON.stringify(topicId)).toEqual([]);
      expect(sources.topic).toBeNull();
      expect(sources.warnings.filter((warning) => warning.startsWith('topic-unsafe: topicId '))).toHaveLength(1);
    }
    for (const path of [...mars.reads, ...mars.lists, ...venus.reads, ...venus.lists]) expect(path).not.toMatch(/^(people|companies)(\/|$)/);
  });

  it('re-stats on a repeat call but does not rebuild the live context until a file or the date changes', async () => {
    const root = await copyExampleBrain();
    const brain = createBrain(root, silent);
    const memo = sourceMemo();
    const mars = (now: string) => readPersonaSources(brain.session(), { persona: 'mars', now: new Date(now) }, OPTIONS, memo);
    const venus = (now: string) => readPersonaSources(brain.session(), { persona: 'venus', now: new Date(now) }, OPTIONS, memo);

    const first = await mars('2027-03-15T17:05:00Z');
    expect(buildMarsLiveContext).toHaveBeenCalledTimes(1);
    const again = await mars('2027-03-15T17:06:00Z');
    expect(buildMarsLiveContext).toHaveBeenCalledTimes(1);
    expect(again.input.liveContext).toEqual(first.input.liveContext);
    // The rendered persona sections are shared objects, not rebuilt.
    expect(again.input.persona).toBe(first.input.persona);

    await writeFile(join(root, 'SOUL.md'), '# Soul\n\nI like quiet mornings.\n');
    const edited = await mars('2027-03-15T17:07:00Z');
    expect(buildMarsLiveContext).toHaveBeenCalledTimes(2);
    expect(edited.input.liveContext!.text).toContain('I like quiet mornings.');
    await mars('2027-03-16T17:07:00Z');
    expect(buildMarsLiveContext).toHaveBeenCalledTimes(3);

    // Venus parses its files once per version and day; only which events are over depends on the
    // minute, so a new minute finishes the text again only when an event has ended since.
    const at = await venus('2027-03-15T16:05:00Z');
    await venus('2027-03-15T16:05:30Z');
    expect(prepareVenusLiveContext).toHaveBeenCalledTimes(1);
    expect(finishVenusLiveContext).toHaveBeenCalledTimes(1);
    const later = await venus('2027-03-15T16:41:00Z');
    expect(later.input.liveContext!.text).toBe(at.input.liveContext!.text);
    expect(finishVenusLiveContext).toHaveBeenCalledTimes(1);
    // 18:30 Pottery class is the last event: from 18:31 on it is over.
    await venus('2027-03-15T18:31:00Z');
    expect(finishVenusLiveContext).toHaveBeenCalledTimes(2);
    expect(prepareVenusLiveContext).toHaveBeenCalledTimes(1);
    await writeFile(join(root, 'tasks/open.md'), '- [ ] P0 **Call the plumber**\n');
    const tasksEdited = await venus('2027-03-15T18:32:00Z');
    expect(prepareVenusLiveContext).toHaveBeenCalledTimes(2);
    expect(tasksEdited.input.liveContext!.text).toContain('Call the plumber');
  });

  it('applies sanitize=ascii to every block text before the compile, so the digests describe ASCII', async () => {
    const root = await copyExampleBrain();
    await writeFile(join(root, 'personas/venus.md'), 'Brisk — “always”.');
    const brain = createBrain(root, silent);
    const sources = await readPersonaSources(brain.session(), { persona: 'venus', now: new Date('2026-11-30T17:05:00Z'), sanitize: 'ascii' }, OPTIONS);
    for (const source of [sources.input.identity, sources.input.persona, sources.input.tools, sources.input.hardRules, sources.input.liveContext]) {
      expect(source!.text).not.toMatch(/[^\x00-\x7f]/);
    }
    expect(sources.input.persona!.text).toBe('Brisk -- "always".');
    const { compiled, extra } = compilePersona(sources);
    expect(compiled.instructions).not.toMatch(/[^\x00-\x7f]/);
    expect(extra['liveContext']).toContain('1:1 with Jordan -- call [phone]');
    expect(compiled.redactions.phone).toBe(1);
  });

  it('shares one result within a minute, frozen under test (createCaches({ freezeShared: true })): changing it throws instead of serving changed bytes', async () => {
    const brain = createBrain(await copyExampleBrain(), silent);
    const caches = createCaches({ freezeShared: true });
    const memo = { ...caches.sources, time: caches.compiler.time };
    const compiler = createCompiler({ memo: caches.compiler });
    const request = { persona: 'mars' as const, now: new Date('2026-11-30T17:05:00Z') };
    const first = compilePersona(await readPersonaSources(brain.session(), request, OPTIONS, memo), compiler, memo);
    const second = compilePersona(await readPersonaSources(brain.session(), request, OPTIONS, memo), compiler, memo);
    expect(second).toBe(first);
    expect(() => {
      (first.compiled as { systemPrompt: string }).systemPrompt = 'changed';
    }).toThrow(TypeError);
    expect(() => first.compiled.blocks.push(first.compiled.blocks[0]!)).toThrow(TypeError);
    expect(() => {
      (first.compiled.blocks[0] as { content: string }).content = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      (first.extra['session'] as { instructions: string }).instructions = 'changed';
    }).toThrow(TypeError);
    // A plain frozen value marked shared: it holds nothing of its consumers, which key what they keep by it.
    expect(first.shared).toBe(true);
    expect(Object.keys(first).sort()).toEqual(['compiled', 'extra', 'realtime', 'shared']);

    // The service's own cache set (no freezeShared) does not pay for the walk.
    const open = createCaches();
    const openMemo = { ...open.sources, time: open.compiler.time };
    const unfrozen = compilePersona(await readPersonaSources(brain.session(), request, OPTIONS, openMemo), createCompiler({ memo: open.compiler }), openMemo);
    expect(Object.isFrozen(unfrozen.compiled)).toBe(false);
    expect(unfrozen.compiled.systemPrompt).toBe(first.compiled.systemPrompt);
  });

  it('throws a 404 problem listing the personas for an unknown one, and fails open on a bad zone (a bad instant is the schema\'s, test/routes/context.test.ts)', async () => {
    const brain = createBrain(await copyExampleBrain(), silent);
    expect(() => personaOrNotFound('jupiter')).toThrow(ProblemError);
    await expect(readPersonaSources(brain.session(), { persona: 'jupiter', now: new Date('2026-11-30T17:05:00Z') }, OPTIONS)).rejects.toMatchObject({
      code: 'CC_NOT_FOUND',
      extensions: { personas: ['mars', 'venus'] },
    });
    // An unusable zone fails open: the operator's zone (here the default) and a warning naming it.
    const sources = await readPersonaSources(brain.session(), { persona: 'mars', now: new Date('2026-11-30T17:05:00Z'), timezone: 'Nowhere/City' }, { ...OPTIONS, defaultTimeZone: 'Asia/Tokyo' });
    expect(sources.warnings).toContain('timezone-invalid: timezone "Nowhere/City" is not an IANA time zone; compiled in America/Los_Angeles (memory/heartbeat-state.json)');
    expect(sources.timeZone).toMatchObject({ timeZone: 'America/Los_Angeles', source: 'heartbeat' });
  });
});

describe('readTopicSources', () => {
  it('reads only the topic file and is a 404 problem when it is missing', async () => {
    const brain = createBrain(await copyExampleBrain(), silent);
    const found = recording(brain.session());
    const sources = await readTopicSources(found.reader, { topicId: 'garden' }, OPTIONS);
    expect(found.reads).toEqual(['topics/garden.md']);
    expect(found.lists).toEqual([]);
    expect(sources.topic).toMatchObject({ topicId: 'garden', found: true });
    await expect(readTopicSources(brain.session(), { topicId: 'nope' }, OPTIONS)).rejects.toMatchObject({ code: 'CC_NOT_FOUND', statusCode: 404 });
  });
});
