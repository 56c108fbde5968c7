import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../../src/errors.js';
import { MAX_RUN_EVENTS, TRACE_PAGE_CHARS, type TraceStore } from '../../../src/io/trace/index.js';
import { traceBackends } from '../../helpers/trace-backends.js';
import { buildHud, loadedFile, serializeSnapshot, type Hud } from '../../../src/core/index.js';
import { deliveredEvent, failedEvent, REALTIME, sha256, STABLE_SYSTEM } from '../../helpers/trace-events.js';

/**
 * One contract for every trace backend: what the service relies on of a trace
 * store, run against files and against PostgreSQL alike. Backend-specific behaviour (file
 * rotation, the in-memory index, migrations, indexes) has its own suites.
 */

const DAY = 86_400_000;

/** The HUD of a mars compile that read SOUL.md whole and the tail of a daily file, and missed its override. */
function marsHud(): Hud {
  return buildHud({
    loaded: [
      loadedFile({ path: 'SOUL.md', size: 4, sha256: sha256('soul'), bytes: 4, truncated: false, keep: 'head', text: 'soul' }),
      loadedFile({ path: 'memory/2026-11-30.md', size: 9000, sha256: sha256('tail'), bytes: 12, truncated: true, keep: 'tail', text: 'one\ntwo\nthree\n' }),
    ],
    missing: ['personas/mars.md'],
    blocks: [{ kind: 'identity', source: 'builtin:mars', chars: 48 }],
    budget: { limitChars: 48000, usedChars: 300 },
  });
}
const KEY = 'trace-signing-key-0123456789abcdef-0123';
/** Tests that write fixed `at` times read them with a clock just after. */
const MARCH = { now: () => Date.parse('2026-03-02T00:00:00.000Z') };

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const healthy = (store: TraceStore) => () =>
  store.health().then(
    () => true,
    () => false,
  );

for (const backend of traceBackends()) {
  const title = backend.skipped ? `trace store contract: ${backend.name} (SKIPPED: ${backend.skipped})` : `trace store contract: ${backend.name}`;

  describe.skipIf(backend.skipped !== null)(title, () => {
    describe('append and read back', () => {
      it('reads an empty store before anything was written: no runs, no run', async () => {
        const store = (await backend.storage()).open();
        expect(await store.listRuns()).toEqual({ runs: [], nextCursor: null, partial: false });
        expect(await store.readRun('run-1')).toBeNull();
      });

      it('writes the later events of a shared result from what the writer kept of it, reading back the same, and keeps nothing on the result', async () => {
        const reused = (store: TraceStore) => {
          const stats = store.stats() as unknown as Record<string, number>;
          return stats['blobsReused'] ?? stats['recordsReused']!;
        };
        // The result as delivery hands it over: frozen, so a store that kept anything on it would throw.
        const result = Object.freeze({});
        const event = deliveredEvent('shared-0', { hud: marsHud() });
        const spliced = (await backend.storage()).open();
        const plain = (await backend.storage()).open();
        for (let i = 0; i < 4; i++) {
          await spliced.append({ ...event, runId: `shared-${i}` }, { result });
          await plain.append({ ...event, runId: `shared-${i}` });
        }
        // From the third event on, the result's references are spliced in, not looked up again.
        expect(reused(spliced)).toBeLessThan(reused(plain));
        for (let i = 0; i < 4; i++) {
          const [fast, afresh] = await Promise.all([spliced.readRun(`shared-${i}`), plain.readRun(`shared-${i}`)]);
          expect(fast!.events[0]!.verified).toBe(true);
          const { systemPrompt, inputPrompt, blocks, cache, hud } = afresh!.events[0]!;
          expect(fast!.events[0]).toMatchObject({ systemPrompt, inputPrompt, blocks, cache, hud });
        }
        expect(Object.keys(result)).toEqual([]);
      });

      it('rebuilds the exact delivered prompts and checks them against the recorded digests', async () => {
        const store = (await backend.storage()).open();
        const event = deliveredEvent('run-1');
        await store.append(event);
        const run = await store.readRun('run-1');
        expect(run?.events).toHaveLength(1);
        const read = run!.events[0]!;
        expect(read.systemPrompt).toBe(event.segments!.system.join(''));
        expect(read.inputPrompt).toBe(event.segments!.input.join(''));
        expect(read.verified).toBe(true);
        expect(read.chars).toBe(read.systemPrompt!.length + read.inputPrompt!.length);
        expect(read).toMatchObject({ runId: 'run-1', route: '/context/mars', status: 200, outcome: 'delivered', blocks: event.blocks, sources: event.sources, cache: event.cache, budget: event.budget });
        const pieces = read.segments!.system.map((segment) => read.systemPrompt!.slice(segment.offset, segment.offset + segment.chars));
        expect(pieces).toEqual(event.segments!.system);
        expect(read.segments!.system.map((segment) => segment.sha256)).toEqual(event.segments!.system.map(sha256));
        expect(run!.chain).toEqual({ status: 'linked', problems: [], notes: [] });
      });

      it('keeps text byte for byte, whatever characters it holds (NUL and a lone surrogate included)', async () => {
        const store = (await backend.storage()).open();
        const volatile = 'line\nwith "quotes", \\ backslashes, \u2028 separators, emoji 🪐, \u0000 and a lone \ud800 surrogate\n';
        await store.append(deliveredEvent('run-odd', { volatile, input: [] }));
        const [read] = (await store.readRun('run-odd'))!.events;
        expect(read!.systemPrompt).toBe([...STABLE_SYSTEM, volatile].join(''));
        expect(read!.inputPrompt).toBeNull();
        expect(read!.verified).toBe(true);
      });

      it('returns a run’s events in order, and null for an unknown or unsafe run id', async () => {
        const store = (await backend.storage()).open(MARCH);
        await store.append(deliveredEvent('run-2', { at: '2026-03-01T10:00:00.000Z', status: 200 }));
        await store.append(deliveredEvent('other', { at: '2026-03-01T10:00:01.000Z' }));
        await store.append(deliveredEvent('run-2', { at: '2026-03-01T10:00:02.000Z', status: 304, outcome: 'not-modified' }));
        const events = (await store.readRun('run-2'))?.events;
        expect(events!.map((event) => [event.at, event.status])).toEqual([
          ['2026-03-01T10:00:00.000Z', 200],
          ['2026-03-01T10:00:02.000Z', 304],
        ]);
        expect(await store.readRun('never-ran')).toBeNull();
        expect(await store.readRun('../../etc/passwd')).toBeNull();
      });

      it('traces a failed compile with its error and no prompt', async () => {
        const store = (await backend.storage()).open();
        await store.append(failedEvent('run-failed'));
        const [read] = (await store.readRun('run-failed'))!.events;
        expect(read).toMatchObject({ outcome: 'failed', status: 422, error: { code: 'CC_BUDGET_EXCEEDED' }, chars: 0 });
        expect(read!.systemPrompt).toBeNull();
        expect(read!.verified).toBeNull();
      });

      it('records the request id and the caller’s traceparent, so the caller’s trace and the run can be joined', async () => {
        const store = (await backend.storage()).open();
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        await store.append(deliveredEvent('run-joined', { requestId: 'voice-call-42', traceparent }));
        await store.append(failedEvent('run-joined'));
        const [delivered, failed] = (await store.readRun('run-joined'))!.events;
        expect(delivered).toMatchObject({ requestId: 'voice-call-42', traceparent, verified: true });
        expect(failed).not.toHaveProperty('requestId');
        expect(failed).not.toHaveProperty('traceparent');
      });

      it('records a source’s confinement, absent paths and listings as given', async () => {
        const store = (await backend.storage()).open();
        const sources = [{ path: 'topics/moving.md', size: 40, mtimeMs: 1, sha256: sha256('topic'), truncated: false, maxBytes: 65536, keep: 'tail' as const, within: 'topics' }];
        const absent = [{ path: 'calendar/today.md' }];
        const listings = [{ path: 'meetings', count: 2, sha256: sha256('a\nb\n'), names: ['a', 'b'] }];
        await store.append(deliveredEvent('run-relied', { sources, absent, listings }));
        expect((await store.readRun('run-relied'))!.events[0]).toMatchObject({ sources, absent, listings });
      });

      it('reports verified: false when the recorded digest does not match the delivered text', async () => {
        const store = (await backend.storage()).open();
        await store.append(deliveredEvent('run-wrong', { promptSha256: sha256('something else') }));
        const [read] = (await store.readRun('run-wrong'))!.events;
        expect(read!.verified).toBe(false);
        expect(read!.systemPrompt).toContain('You are mars');
      });

      it('rejects a malformed event instead of storing it', async () => {
        const store = (await backend.storage()).open();
        await expect(store.append({ ...deliveredEvent('x'), runId: '../x' })).rejects.toMatchObject({ code: 'CC_INTERNAL' });
        await expect(store.append({ ...deliveredEvent('x'), at: 'yesterday' })).rejects.toMatchObject({ code: 'CC_INTERNAL' });
        expect(store.stats().appends).toBe(0);
      });

      it('flushes pending appends on close, and rejects appends after it', async () => {
        const storage = await backend.storage();
        const store = storage.open();
        const pending = Array.from({ length: 50 }, (_, i) => store.append(deliveredEvent(`run-${i}`)));
        await store.close();
        await Promise.all(pending);
        await expect(store.append(deliveredEvent('late'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
        expect((await storage.open().readRun('run-49'))!.events[0]!.verified).toBe(true);
      });
    });

    describe('storage', () => {
      it('stores each distinct prompt text, block summary, source record and cache plan once, however many events repeat them', async () => {
        const storage = await backend.storage();
        const store = storage.open();
        // New objects with equal values each time, as a compiler hands them over.
        const events = Array.from({ length: 20 }, (_, i) => deliveredEvent(`run-${i}`));
        for (const event of events) await store.append(structuredClone(event));
        const stored = await storage.dump();
        expect(stored.split('You are mars, an introspective thought partner.').length - 1).toBe(1);
        expect(stored.split(`"sha256":"${events[0]!.blocks![0]!.sha256}"`).length - 1).toBe(1);
        expect(stored.split('"routeKey":"rk-1"').length - 1).toBe(1);
        expect(stored.split('"path":"SOUL.md"').length - 1).toBe(1);
        for (const event of [events[0]!, events[19]!]) {
          expect((await store.readRun(event.runId))!.events[0]).toMatchObject({ blocks: event.blocks, sources: event.sources, cache: event.cache });
        }
      });

      it('stores a persona’s tool definitions once, and gives back the voice, the names and the definitions with their digest', async () => {
        const storage = await backend.storage();
        const store = storage.open();
        // The same tools object on every call, as a persona hands it out; and once a copy with equal values.
        for (let i = 0; i < 20; i++) await store.append(deliveredEvent(`run-${i}`, { realtime: REALTIME }));
        await store.append(deliveredEvent('run-copy', { realtime: structuredClone(REALTIME) }));
        await store.append(deliveredEvent('run-plain'));
        const stored = await storage.dump();
        expect(stored.split('Read an article the operator shares by link.').length - 1).toBe(1);
        const expected = {
          voice: 'ash',
          toolNames: ['search', 'read_article'],
          toolsSha256: sha256(JSON.stringify(REALTIME.tools)),
          tools: REALTIME.tools,
        };
        for (const runId of ['run-0', 'run-19', 'run-copy']) expect((await store.readRun(runId))!.events[0]!.realtime).toEqual(expected);
        expect((await store.readRun('run-plain'))!.events[0]!.realtime).toBeUndefined();
      });

      it('never stores block content beside the prompt texts', async () => {
        const storage = await backend.storage();
        const store = storage.open();
        const event = deliveredEvent('run-blocks');
        await store.append({ ...event, blocks: event.blocks!.map((block) => ({ ...block, content: 'SECRET BLOCK TEXT' })) });
        expect(await storage.dump()).not.toContain('SECRET BLOCK TEXT');
        expect((await store.readRun('run-blocks'))!.events[0]!.blocks).toEqual(event.blocks);
      });

      it('keeps records apart that differ in one field only', async () => {
        const store = (await backend.storage()).open();
        const event = deliveredEvent('run-a');
        const [first] = event.blocks!;
        const twin = { ...first!, source: 'personas/mars.md' };
        const sources = [
          event.sources![0]!,
          { ...event.sources![0]!, mtimeMs: 2 },
          { ...event.sources![0]!, truncated: true, maxBytes: 5, keep: 'tail' as const },
          { ...event.sources![0]!, within: 'topics' },
        ];
        await store.append({ ...event, blocks: [first!, twin, { ...first! }], sources });
        await store.append({ ...deliveredEvent('run-b'), blocks: [twin, first!], sources: [...sources].reverse() });
        const [a] = (await store.readRun('run-a'))!.events;
        const [b] = (await store.readRun('run-b'))!.events;
        expect(a!.blocks).toEqual([first, twin, first]);
        expect(a!.sources).toEqual(sources);
        expect(b!.blocks).toEqual([twin, first]);
        expect(b!.sources).toEqual([...sources].reverse());
      });

      it('shares commits between concurrent appends (group commit)', async () => {
        const store = (await backend.storage()).open();
        await store.health();
        const before = store.stats().commits;
        const clients = 32;
        const rounds = 20;
        await Promise.all(
          Array.from({ length: clients }, async (_, client) => {
            for (let round = 0; round < rounds; round++) await store.append(deliveredEvent(`run-${client}-${round}`));
          }),
        );
        const stats = store.stats();
        expect(stats.appends).toBe(clients * rounds);
        expect(stats.commits - before).toBeLessThan(stats.appends / 8);
        expect(stats.largestBatch).toBeGreaterThan(1);
        expect((await store.listRuns({ limit: 100 })).runs).toHaveLength(100);
        expect((await store.readRun('run-31-19'))!.events[0]!.verified).toBe(true);
      });
    });

    describe('failure and recovery', () => {
      it('rejects with CC_TRACE_UNAVAILABLE while writes fail, fails fast, says why, and recovers by itself', async () => {
        const storage = await backend.storage();
        const store = storage.open({ retryIntervalMs: 50 });
        await store.append(deliveredEvent('before'));

        await storage.fail();
        const error = await store.append(deliveredEvent('lost')).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ProblemError);
        expect(error).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', statusCode: 503 });
        await expect(store.health()).rejects.toThrow(backend.name === 'files' ? /TRACE_DIR.*disk full/ : /trace database is unavailable \(TRACE_DATABASE_URL\)/);
        expect(store.stats().state).toBe('failed');
        const failures = store.stats().rejected;
        await expect(store.append(deliveredEvent('fast'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
        expect(store.stats().rejected).toBe(failures + 1);

        await storage.repair();
        await waitFor(healthy(store), 'the store to recover');
        await store.append(deliveredEvent('after'));
        expect((await store.readRun('before'))!.events[0]!.verified).toBe(true);
        expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
        expect(await store.readRun('lost')).toBeNull();
        expect(await store.readRun('fast')).toBeNull();
        const restarted = storage.open();
        expect((await restarted.readRun('after'))!.chain).toEqual({ status: 'linked', problems: [], notes: [] });
      });

      it('makes the first health check fail with the reason when nothing can be written, until a write works', async () => {
        const storage = await backend.storage();
        await storage.fail();
        const store = storage.open({ retryIntervalMs: 50 });
        await expect(store.health()).rejects.toThrow(backend.name === 'files' ? 'trace directory is not writable (TRACE_DIR): disk full (ENOSPC)' : /trace database is unavailable \(TRACE_DATABASE_URL\): read-only/);
        expect(store.stats().state).toBe('failed');
        await expect(store.append(deliveredEvent('lost'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', statusCode: 503 });
        await storage.repair();
        await waitFor(healthy(store), 'the store to recover');
        await store.append(deliveredEvent('after'));
        expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
      });
    });

    describe('listRuns', () => {
      async function seeded(): Promise<TraceStore> {
        const store = (await backend.storage()).open(MARCH);
        const base = Date.parse('2026-03-01T12:00:00.000Z');
        for (let i = 0; i < 25; i++) {
          const at = new Date(base + i * 1000).toISOString();
          if (i % 5 === 4) await store.append(failedEvent(`w-${i}`, { at }));
          else await store.append(deliveredEvent(`p-${i}`, { at, subject: { kind: 'persona', id: i % 2 === 0 ? 'mars' : 'venus' } }));
        }
        return store;
      }

      it('lists runs newest first and pages through all of them exactly once', async () => {
        const store = await seeded();
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.listRuns({ limit: 7, ...(cursor ? { cursor } : {}) });
          seen.push(...page.runs.map((run) => run.runId));
          cursor = page.nextCursor ?? undefined;
          pages++;
        } while (cursor);
        expect(pages).toBe(4);
        expect(seen).toHaveLength(25);
        expect(new Set(seen).size).toBe(25);
        expect(seen[0]).toBe('w-24');
        expect(seen[24]).toBe('p-0');
        const first = (await store.listRuns({ limit: 1 })).runs[0]!;
        expect(first).toEqual({
          runId: 'w-24',
          at: '2026-03-01T12:00:24.000Z',
          route: '/compile',
          subject: { kind: 'worker', id: 'scribe' },
          status: 422,
          outcome: 'failed',
          chars: 0,
          promptSha256: null,
          events: 1,
          compiledFor: null,
          topicId: null,
          role: null,
          engine: null,
          warnings: 0,
        });
        const persona = (await store.listRuns({ limit: 1, persona: 'mars' })).runs[0]!;
        expect(persona).toMatchObject({ runId: 'p-22', surface: 'voice', chars: expect.any(Number), promptSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      });

      it('orders runs of the same instant by run id, and pages through them', async () => {
        const store = (await backend.storage()).open(MARCH);
        const at = '2026-03-01T12:00:00.000Z';
        const ids = ['b', 'a', 'C', 'c', 'a-1', 'Z9'];
        for (const runId of ids) await store.append(deliveredEvent(runId, { at }));
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listRuns({ limit: 2, ...(cursor ? { cursor } : {}) });
          seen.push(...page.runs.map((run) => run.runId));
          cursor = page.nextCursor ?? undefined;
        } while (cursor);
        expect(seen).toEqual([...ids].sort().reverse());
      });

      it('filters by persona, worker, status and outcome, on each run’s latest event', async () => {
        const store = await seeded();
        const ids = async (query: Parameters<TraceStore['listRuns']>[0]) => (await store.listRuns({ limit: 100, ...query })).runs.map((run) => run.runId);
        expect(await ids({ persona: 'mars' })).toEqual(['p-22', 'p-20', 'p-18', 'p-16', 'p-12', 'p-10', 'p-8', 'p-6', 'p-2', 'p-0']);
        expect(await ids({ worker: 'scribe' })).toEqual(['w-24', 'w-19', 'w-14', 'w-9', 'w-4']);
        expect(await ids({ status: 422 })).toEqual(await ids({ outcome: 'failed' }));
        expect(await ids({ persona: 'venus', status: 200 })).toHaveLength(10);
        expect(await ids({ worker: 'mars' })).toEqual([]);
        // p-0 delivered again, not modified: it now lists by its latest event.
        await store.append(deliveredEvent('p-0', { at: '2026-03-01T12:01:00.000Z', status: 304, outcome: 'not-modified' }));
        expect((await ids({ status: 304 }))).toEqual(['p-0']);
        expect(await ids({ persona: 'mars', status: 200 })).not.toContain('p-0');
      });

      it('describes a run by its latest event and counts its events', async () => {
        const store = (await backend.storage()).open(MARCH);
        await store.append(deliveredEvent('r', { at: '2026-03-01T12:00:05.000Z', status: 304, outcome: 'not-modified' }));
        await store.append(deliveredEvent('r', { at: '2026-03-01T12:00:00.000Z', status: 200 }));
        const [run] = (await store.listRuns()).runs;
        expect(run).toMatchObject({ runId: 'r', at: '2026-03-01T12:00:05.000Z', status: 304, events: 2 });
      });

      it('lists the minute compiled for, topic, role, engine, warnings and correlation ids of each run’s latest event', async () => {
        const store = (await backend.storage()).open(MARCH);
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        await store.append(
          deliveredEvent('voice', {
            at: '2026-03-01T12:00:00.000Z',
            requestId: 'req-voice',
            traceparent,
            request: { persona: 'mars', topicId: 'garden', nowUsed: '2026-03-01T09:00:00.000Z', engine: 'gpt-realtime' },
            warnings: ['topic-missing: topics/garden.md', 'memory/: no daily memory files'],
          }),
        );
        const receipts = { role: { id: 'reviewer', selectedBy: 'default' as const, source: 'workers/courier/roles/reviewer.md', sha256: sha256('role') }, blueprint: { revision: 'none', source: null, sha256: null }, experiences: [], preferences: {} };
        await store.append(deliveredEvent('task', { at: '2026-03-01T12:00:01.000Z', route: 'POST /compile', subject: { kind: 'worker', id: 'courier' }, request: { worker: 'courier', role: null, engine: null, nowUsed: '2026-03-01T17:30:00.000Z' }, receipts }));
        const runs = (await store.listRuns()).runs;
        expect(runs.map(({ runId, compiledFor, topicId, role, engine, warnings, requestId, traceparent: tp }) => ({ runId, compiledFor, topicId, role, engine, warnings, requestId, traceparent: tp }))).toEqual([
          { runId: 'task', compiledFor: '2026-03-01T17:30:00.000Z', topicId: null, role: 'reviewer', engine: null, warnings: 0, requestId: undefined, traceparent: undefined },
          { runId: 'voice', compiledFor: '2026-03-01T09:00:00.000Z', topicId: 'garden', role: null, engine: 'gpt-realtime', warnings: 2, requestId: 'req-voice', traceparent },
        ]);
      });

      it('finds a run by its id, by a request id or a trace id of any of its events, and by the time of its latest event', async () => {
        const store = await seeded();
        const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
        // p-2 answered twice: its first request (and trace) find it, though its latest event is another request.
        await store.append(deliveredEvent('p-2', { at: '2026-03-01T12:00:30.000Z', requestId: 'req-first', traceparent: `00-${traceId}-00f067aa0ba902b7-01` }));
        await store.append(deliveredEvent('p-2', { at: '2026-03-01T12:00:31.000Z', requestId: 'req-second', status: 304, outcome: 'not-modified' }));
        const ids = async (query: Parameters<TraceStore['listRuns']>[0]) => (await store.listRuns({ limit: 100, ...query })).runs.map((run) => run.runId);
        expect(await ids({ runId: 'p-6' })).toEqual(['p-6']);
        expect(await ids({ runId: 'nobody' })).toEqual([]);
        expect(await ids({ requestId: 'req-first' })).toEqual(['p-2']);
        expect(await ids({ traceparent: traceId })).toEqual(['p-2']);
        expect(await ids({ traceparent: `00-${traceId}-1111111111111111-00` })).toEqual(['p-2']);
        expect(await ids({ requestId: 'req-first', persona: 'venus' })).toEqual([]);
        expect(await ids({ requestId: 'req-first', status: 304 })).toEqual(['p-2']);
        const [found] = (await store.listRuns({ requestId: 'req-first' })).runs;
        expect(found).toMatchObject({ runId: 'p-2', requestId: 'req-second', status: 304, events: 3 });
        // `from` inclusive, `to` exclusive, on the latest event's time.
        expect(await ids({ from: '2026-03-01T12:00:20.000Z', to: '2026-03-01T12:00:23.000Z' })).toEqual(['p-22', 'p-21', 'p-20']);
        expect(await ids({ from: '2026-03-01T12:00:24.000Z', worker: 'scribe' })).toEqual(['w-24']);
        expect(await ids({ to: '2026-03-01T12:00:02.000Z' })).toEqual(['p-1', 'p-0']);
        await expect(store.listRuns({ from: 'yesterday' })).rejects.toMatchObject({ code: 'CC_VALIDATION_FAILED', statusCode: 400 });
        await expect(store.listRuns({ traceparent: 'not-a-trace' })).rejects.toMatchObject({ code: 'CC_VALIDATION_FAILED', statusCode: 400 });
      });

      it('rejects a cursor it did not issue', async () => {
        const store = (await backend.storage()).open();
        await expect(store.listRuns({ cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({ code: 'CC_VALIDATION_FAILED', statusCode: 400 });
      });
    });

    describe('runs are bounded and belong to their caller (issue 27)', () => {
      /** Every event of a run, page by page, as `visibleTo` may see it. */
      async function allPages(store: TraceStore, runId: string, query: { limit?: number; visibleTo?: string | null } = {}) {
        const pages: NonNullable<Awaited<ReturnType<TraceStore['readRun']>>>[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.readRun(runId, { ...query, ...(cursor === undefined ? {} : { cursor }) });
          if (!page) break;
          pages.push(page);
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        return pages;
      }

      it('records the caller’s name with each event, covered by the chain', async () => {
        const storage = await backend.storage();
        const store = storage.open();
        await store.append(deliveredEvent('run-named', { caller: 'voice-server' }));
        const run = await store.readRun('run-named');
        expect(run!.events[0]).toMatchObject({ caller: 'voice-server', verified: true });
        expect((await store.listRuns()).runs[0]).toMatchObject({ runId: 'run-named', caller: 'voice-server' });
        await storage.alterEvent('run-named', '"caller":"voice-server"', '"caller":"chat-host-00"');
        const edited = await store.readRun('run-named');
        expect(edited!.events[0]!.verified).toBe(false);
        expect(edited!.chain.status).toBe('broken');
      });

      it('refuses another caller’s append with CC_RUN_OWNED and writes nothing of it; the opener goes on', async () => {
        const store = (await backend.storage()).open();
        await store.append(deliveredEvent('run-a', { caller: 'alice' }));
        const refused = store.append(deliveredEvent('run-a', { caller: 'bob', request: { marker: 'bob-was-here' } }));
        await expect(refused).rejects.toMatchObject({ code: 'CC_RUN_OWNED', statusCode: 409 });
        await store.append(deliveredEvent('run-a', { caller: 'alice' }));
        const run = await store.readRun('run-a');
        expect(run!.events.map((event) => event.caller)).toEqual(['alice', 'alice']);
        expect(run!.chain.problems).toEqual([]);
        expect(store.stats()).toMatchObject({ refused: 1, state: 'ok' });
        // A refusal is the append's own: the store stays healthy.
        await store.health();
      });

      it('lets anyone continue a run whose first event names no caller, and never checks a run the service just made up', async () => {
        const store = (await backend.storage()).open();
        await store.append(deliveredEvent('run-legacy'));
        await store.append(deliveredEvent('run-legacy', { caller: 'alice' }));
        await store.append(deliveredEvent('run-legacy', { caller: 'bob' }));
        expect((await store.readRun('run-legacy'))!.events.map((event) => event.caller ?? null)).toEqual([null, 'alice', 'bob']);
        await store.append(deliveredEvent('5b1f6a7e-0000-4000-8000-000000000001', { caller: 'alice' }), { newRun: true });
        expect((await store.readRun('5b1f6a7e-0000-4000-8000-000000000001'))!.events).toHaveLength(1);
      });

      it(`refuses the append past ${MAX_RUN_EVENTS.toLocaleString('en-US')} events with CC_RUN_FULL, exactly, however many arrive at once`, async () => {
        const store = (await backend.storage()).open({ maxBatchEvents: 2048 });
        const appends = Array.from({ length: MAX_RUN_EVENTS + 5 }, () => store.append(failedEvent('run-full', { caller: 'alice' })));
        const settled = await Promise.allSettled(appends);
        const refused = settled.filter((outcome) => outcome.status === 'rejected');
        expect(settled.length - refused.length).toBe(MAX_RUN_EVENTS);
        expect(refused).toHaveLength(5);
        for (const outcome of refused) expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'CC_RUN_FULL', statusCode: 409 });
        await expect(store.append(failedEvent('run-full', { caller: 'alice' }))).rejects.toMatchObject({ code: 'CC_RUN_FULL' });
        expect((await store.listRuns()).runs[0]).toMatchObject({ runId: 'run-full', events: MAX_RUN_EVENTS });
        // Other runs are untouched by one that is full.
        await store.append(failedEvent('run-next', { caller: 'alice' }));
        expect(store.stats()).toMatchObject({ refused: 6, state: 'ok' });
      });

      it('pages through a run in order, each event once, and refuses a cursor it did not issue', async () => {
        const store = (await backend.storage()).open({ maxBatchEvents: 64 });
        const base = Date.now() - 60_000;
        // Some events share an instant: the order within one is the order they were written.
        for (let i = 0; i < 250; i++) await store.append(failedEvent('run-paged', { at: new Date(base + Math.floor(i / 3)).toISOString(), request: { n: i } }));
        const pages = await allPages(store, 'run-paged', { limit: 100 });
        expect(pages.map((page) => page.events.length)).toEqual([100, 100, 50]);
        expect(pages.flatMap((page) => page.events.map((event) => event.request['n']))).toEqual(Array.from({ length: 250 }, (_, i) => i));
        expect(pages.map((page) => page.nextCursor === null)).toEqual([false, false, true]);
        expect(pages.every((page) => page.chain.problems.length === 0)).toBe(true);
        expect((await store.readRun('run-paged'))!.events).toHaveLength(100);
        await expect(store.readRun('run-paged', { cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({ code: 'CC_VALIDATION_FAILED', statusCode: 400 });
      });

      it('says nothing about signing on a page with no events: linked without a key, signed only with one', async () => {
        for (const signingKey of [null, KEY]) {
          const storage = await backend.storage();
          let clock = Date.parse('2026-03-01T12:00:00.000Z');
          const store = storage.open({ now: () => clock, signingKey });
          for (let i = 0; i < 2; i++) await store.append(failedEvent('run-emptied', { at: new Date(clock - 1000 + i).toISOString() }));
          const first = await store.readRun('run-emptied', { limit: 1 });
          expect(first!.nextCursor).not.toBeNull();
          // The rest expires before the next page is asked for: an empty last page.
          clock += 8 * DAY;
          const empty = await store.readRun('run-emptied', { limit: 1, cursor: first!.nextCursor! });
          expect(empty).toMatchObject({ events: [], nextCursor: null, chain: { status: signingKey === null ? 'linked' : 'signed', problems: [] } });
        }
      });

      it(`ends a page once its events delivered ${TRACE_PAGE_CHARS.toLocaleString('en-US')} characters, and always holds one`, async () => {
        const store = (await backend.storage()).open();
        const big = 'x'.repeat(Math.ceil(TRACE_PAGE_CHARS * 0.4));
        for (let i = 0; i < 4; i++) await store.append(deliveredEvent('run-big', { volatile: `${big}${i}\n` }));
        await store.append(deliveredEvent('run-huge', { volatile: `${big}${big}${big}\n` }));
        const pages = await allPages(store, 'run-big', { limit: 100 });
        expect(pages.map((page) => page.events.length)).toEqual([2, 2]);
        expect(pages.every((page) => page.events.every((event) => event.verified === true))).toBe(true);
        expect((await store.readRun('run-huge'))!.events).toHaveLength(1);
      });

      it('shows a caller only its own events and runs; another caller’s run reads as unknown', async () => {
        const store = (await backend.storage()).open(MARCH);
        const at = (s: number) => new Date(Date.parse('2026-03-01T12:00:00.000Z') + s * 1000).toISOString();
        await store.append(deliveredEvent('run-alice', { caller: 'alice', at: at(1) }));
        await store.append(deliveredEvent('run-alice', { caller: 'alice', at: at(2) }));
        await store.append(deliveredEvent('run-bob', { caller: 'bob', at: at(3) }));
        await store.append(deliveredEvent('run-nobody', { at: at(4) }));
        expect(await store.readRun('run-alice', { visibleTo: 'bob' })).toBeNull();
        expect(await store.readRun('run-nobody', { visibleTo: 'bob' })).toBeNull();
        expect((await store.readRun('run-alice', { visibleTo: 'alice' }))!.events).toHaveLength(2);
        expect((await store.readRun('run-alice', { visibleTo: null }))!.events).toHaveLength(2);
        const listed = async (visibleTo: string | null) => (await store.listRuns({ visibleTo })).runs.map((run) => [run.runId, run.events]);
        expect(await listed('alice')).toEqual([['run-alice', 2]]);
        expect(await listed('bob')).toEqual([['run-bob', 1]]);
        expect(await listed('carol')).toEqual([]);
        expect(await listed(null)).toEqual([['run-nobody', 1], ['run-bob', 1], ['run-alice', 2]]);
        // A run holding both callers' events (opened before callers were named) shows each only its own.
        await store.append(deliveredEvent('run-nobody', { caller: 'alice', at: at(5) }));
        await store.append(deliveredEvent('run-nobody', { caller: 'bob', at: at(6) }));
        expect((await store.readRun('run-nobody', { visibleTo: 'alice' }))!.events.map((event) => event.caller)).toEqual(['alice']);
        expect((await store.readRun('run-nobody', { visibleTo: 'bob' }))!.events.map((event) => event.caller)).toEqual(['bob']);
      });
    });

    describe('retention', () => {
      it('hides expired events at once and removes them on a sweep, keeping newer ones', async () => {
        const storage = await backend.storage();
        let clock = Date.parse('2026-01-01T00:00:00.000Z');
        const store = storage.open({ now: () => clock });
        await store.append(deliveredEvent('old', { at: new Date(clock).toISOString() }));
        await store.append(deliveredEvent('both', { at: new Date(clock).toISOString() }));
        clock += 8 * DAY;
        await store.append(deliveredEvent('new', { at: new Date(clock).toISOString() }));
        await store.append(deliveredEvent('both', { at: new Date(clock).toISOString(), status: 304, outcome: 'not-modified' }));

        expect(await store.readRun('old')).toBeNull();
        expect((await store.readRun('both'))!.events.map((event) => event.status)).toEqual([304]);
        expect((await store.listRuns()).runs.map((run) => [run.runId, run.events])).toEqual([
          ['new', 1],
          ['both', 1],
        ].sort((a, b) => (a[0]! < b[0]! ? 1 : -1)));
        expect((await store.sweep()).deleted).toBeGreaterThan(0);
        expect(await storage.dump()).not.toContain('"runId":"old"');
        const run = await store.readRun('new');
        expect(run!.events[0]!.verified).toBe(true);
        // A sweep of what expired is not tampering.
        expect(run!.chain.problems).toEqual([]);
        expect((await storage.open({ now: () => clock }).readRun('both'))!.chain.problems).toEqual([]);

        // An idle service removes its own latest events too, once they expire, and keeps working.
        clock += 8 * DAY;
        expect((await store.sweep()).deleted).toBeGreaterThan(0);
        expect((await store.listRuns()).runs).toEqual([]);
        await store.append(deliveredEvent('later', { at: new Date(clock).toISOString() }));
        expect((await store.readRun('later'))!.events[0]!.verified).toBe(true);
        expect((await store.readRun('later'))!.chain.problems).toEqual([]);
      });
    });

    describe('several writers on one store (replicas, restarts)', () => {
      it('reads each other’s runs, including events added later, and a restart continues', async () => {
        const storage = await backend.storage();
        const a = storage.open({ writerId: 'replica-a-1-aaaa' });
        const b = storage.open({ writerId: 'replica-b-1-bbbb' });
        await Promise.all([
          ...Array.from({ length: 20 }, (_, i) => a.append(deliveredEvent(`a-${i}`))),
          ...Array.from({ length: 20 }, (_, i) => b.append(deliveredEvent(`b-${i}`))),
        ]);
        expect((await a.readRun('b-7'))!.events[0]!.verified).toBe(true);
        expect((await b.readRun('a-7'))!.events[0]!.verified).toBe(true);
        await b.append(deliveredEvent('a-7', { status: 304, outcome: 'not-modified' }));
        expect((await a.readRun('a-7'))!.events.map((event) => event.status)).toEqual([200, 304]);
        expect((await a.listRuns({ limit: 100 })).runs).toHaveLength(40);
        await a.close();
        const restarted = storage.open();
        await restarted.append(deliveredEvent('after-restart'));
        for (const runId of ['a-0', 'b-19', 'after-restart']) {
          const run = await restarted.readRun(runId);
          expect(run!.events.every((event) => event.verified === true), runId).toBe(true);
          expect(run!.chain, runId).toEqual({ status: 'linked', problems: [], notes: [] });
        }
      });
    });

    describe('verification', () => {
      async function written(signingKey: string | null = null) {
        const storage = await backend.storage();
        const store = storage.open({ signingKey });
        for (const runId of ['run-a', 'run-b', 'run-c']) await store.append(deliveredEvent(runId));
        await store.close();
        return storage;
      }

      it('is linked without a key and signed with one; a reader without the key cannot vouch for signed runs', async () => {
        const unsigned = await written();
        expect((await unsigned.open().readRun('run-b'))!.chain.status).toBe('linked');
        const signed = await written(KEY);
        const withKey = await signed.open({ signingKey: KEY }).readRun('run-b');
        expect(withKey!.events.map((event) => [event.verified, event.chain])).toEqual([[true, 'signed']]);
        expect(withKey!.chain).toEqual({ status: 'signed', problems: [], notes: [] });
        const withoutKey = await signed.open().readRun('run-b');
        expect(withoutKey!.events.map((event) => event.chain)).toEqual(['unverifiable']);
        expect(withoutKey!.chain.notes.join('\n')).toMatch(/signed with key [0-9a-f]{16}, and no TRACE_SIGNING_KEY is configured here/);
        const otherKey = await signed.open({ signingKey: `${KEY}-other` }).readRun('run-b');
        expect(otherKey!.events.map((event) => [event.verified, event.chain])).toEqual([[false, 'unverifiable']]);
      });

      it('reports a stored prompt text altered: verified false, the prompts withheld', async () => {
        const storage = await written();
        await storage.alterRecords('You are mars', 'You are MARS');
        const [read] = (await storage.open().readRun('run-b'))!.events;
        expect(read!.verified).toBe(false);
        expect(read!.systemPrompt).toBeNull();
      });

      it('leaves out a block summary whose record was altered, and still verifies the prompts', async () => {
        const storage = await written();
        await storage.alterRecords('"source":"builtin:mars"', '"source":"builtin:MARS"');
        const [read] = (await storage.open().readRun('run-b'))!.events;
        expect(read!.blocks).toBeUndefined();
        expect(read!.sources).toEqual(deliveredEvent('x').sources);
        expect(read!.verified).toBe(true);
      });

      it('gives back the voice and tool names but no definitions when the tools’ record was altered', async () => {
        const storage = await backend.storage();
        await storage.open().append(deliveredEvent('run-tools', { realtime: REALTIME }));
        await storage.alterRecords('Read an article', 'READ AN ARTICLE');
        const [read] = (await storage.open().readRun('run-tools'))!.events;
        expect(read!.realtime).toEqual({ voice: 'ash', toolNames: ['search', 'read_article'], toolsSha256: sha256(JSON.stringify(REALTIME.tools)), tools: null });
        expect(read!.verified).toBe(true);
      });

      it('reports an event edited in place as altered, with or without a key', async () => {
        for (const key of [null, KEY]) {
          const storage = await written(key);
          await storage.alterEvent('run-b', '"status":200', '"status":201');
          const run = await storage.open({ signingKey: key }).readRun('run-b');
          expect(run!.events.map((event) => [event.status, event.verified, event.chain]), String(key)).toEqual([[201, false, 'broken']]);
          expect(run!.chain.status).toBe('broken');
          expect(run!.chain.problems.join('\n')).toMatch(/the event at .* was altered or forged: its link does not hold/);
        }
      });

      it('reports an event removed from the middle of a writer’s chain on the run after it', async () => {
        const storage = await written(KEY);
        await storage.removeEvent('run-b');
        const reader = storage.open({ signingKey: KEY });
        expect(await reader.readRun('run-b')).toBeNull();
        const after = await reader.readRun('run-c');
        expect(after!.chain.status).toBe('broken');
        expect(after!.chain.problems.join('\n')).toMatch(/removed/);
        expect((await reader.readRun('run-a'))!.events.map((event) => event.verified)).toEqual([true]);
      });

      it('reads back a recorded HUD as it was written, checked', async () => {
        const store = (await backend.storage()).open();
        const hud = marsHud();
        await store.append(deliveredEvent('hud-ok', { hud }));
        const [read] = (await store.readRun('hud-ok'))!.events;
        expect(read!.hud).toEqual(hud);
        expect(read!.hud!.files.map((file) => [file.path, file.exists, file.lines])).toEqual([
          ['SOUL.md', true, null],
          ['memory/2026-11-30.md', true, { from: -3, to: -1 }],
          ['personas/mars.md', false, null],
        ]);
        expect(read!.hudRejected).toBeUndefined();
        expect(read!.verified).toBe(true);
      });

      it('rejects a malformed HUD snapshot when the trace is read back: an inverted line range, a bad digest', async () => {
        const store = (await backend.storage()).open();
        // Written by a faulty or forged writer: the store records what it is given.
        const inverted = marsHud();
        inverted.files[1]!.lines = { from: -1, to: -3 };
        inverted.snapshotSha256 = sha256(serializeSnapshot(inverted.files));
        const stale = marsHud();
        stale.files[1]!.tokens += 1;
        const notADigest = marsHud();
        notADigest.files[0]!.sha256 = 'soul';
        await store.append(deliveredEvent('hud-inverted', { hud: inverted }));
        await store.append(deliveredEvent('hud-stale', { hud: stale }));
        await store.append(deliveredEvent('hud-digest', { hud: notADigest }));
        const expectations: Array<[string, string]> = [
          ['hud-inverted', 'files[1] (memory/2026-11-30.md): inverted line range (-1 > -3)'],
          ['hud-stale', 'bad digest: snapshotSha256 is not the sha256 of the canonical snapshot'],
          ['hud-digest', 'files[0] (SOUL.md): bad digest (a file read has a 64-hex sha256)'],
        ];
        for (const [runId, problem] of expectations) {
          const [read] = (await store.readRun(runId))!.events;
          expect(read!.hud, runId).toBeUndefined();
          expect(read!.hudRejected, runId).toContain(problem);
          // The prompts still match their digests; the event as a whole is not vouched for.
          expect(read!.systemPrompt, runId).toContain('You are mars');
          expect(read!.verified, runId).toBe(false);
        }
      });

      it('never serves an event cut short (a write torn by a crash, a careless edit) as verified, and reads every other run', async () => {
        const storage = await written();
        await storage.cutEvent('run-c');
        const reader = storage.open();
        const cut = await reader.readRun('run-c');
        expect(cut === null || cut.events.every((event) => event.verified !== true)).toBe(true);
        for (const runId of ['run-a', 'run-b']) {
          const run = await reader.readRun(runId);
          expect(run!.events.map((event) => event.verified), runId).toEqual([true]);
          expect(run!.events[0]!.systemPrompt, runId).toContain('You are mars');
        }
        const store = storage.open();
        await store.append(deliveredEvent('after-cut'));
        expect((await store.readRun('after-cut'))!.events[0]!.verified).toBe(true);
      });
    });
  });
}
