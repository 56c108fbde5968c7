import { describe, expect, it } from 'vitest';
import { MAX_RUN_EVENTS } from '../../src/io/trace/index.js';
import { buildTestApp, OTHER_TOKEN, TEST_TOKEN } from '../helpers/app.js';
import { deliveredEvent, failedEvent } from '../helpers/trace-events.js';

/**
 * Issue 27: with two tokens, B read A's run (delivered prompts included) and appended other
 * subjects' events into A's runId, all `verified: true`; A's run then vanished from
 * `GET /runs?worker=…`. Events recorded no caller identity. Callers are named now
 * (`name:token`), every event records the name, a run is its opener's, and a caller reads
 * only its own runs unless granted read-all.
 */

const ALICE = `alice:${TEST_TOKEN}`;
const BOB = `bob:${OTHER_TOKEN}`;
const OPS_TOKEN = 'ops-token-0123456789abcdef';
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const compile = (runId: string, worker = 'scribe') => ({ phase: 'start', surface: 'direct', worker, runId });

async function twoCallers(extra: Record<string, string> = {}) {
  return buildTestApp({ CONTEXT_COMPILER_TOKENS: [ALICE, BOB, ...(extra['ops'] ? [`ops:${OPS_TOKEN}`] : [])].join(','), ...extra });
}

describe('runs belong to the caller that opened them', () => {
  it('records the caller’s name with each event, never its token', async () => {
    const { app } = await twoCallers();
    expect((await app.inject({ method: 'POST', url: '/compile', headers: as(TEST_TOKEN), payload: compile('run-alice') })).statusCode).toBe(200);
    const trace = await app.inject({ url: '/runs/run-alice/trace', headers: as(TEST_TOKEN) });
    expect(trace.json().events[0]).toMatchObject({ caller: 'alice', verified: true });
    expect(trace.body).not.toContain(TEST_TOKEN);
    expect((await app.inject({ url: '/runs', headers: as(TEST_TOKEN) })).json().runs[0]).toMatchObject({ runId: 'run-alice', caller: 'alice' });
  });

  it('regression: B cannot read A’s run (404, as an unknown run) nor list it, and B’s append to it is a 409 that delivers nothing', async () => {
    const { app } = await twoCallers();
    const opened = await app.inject({ method: 'POST', url: '/compile', headers: as(TEST_TOKEN), payload: compile('run-alice') });
    expect(opened.statusCode).toBe(200);

    const read = await app.inject({ url: '/runs/run-alice/trace', headers: as(OTHER_TOKEN) });
    expect(read.statusCode).toBe(404);
    expect(read.json()).toMatchObject({ code: 'CC_NOT_FOUND' });
    const unknown = await app.inject({ url: '/runs/no-such-run/trace', headers: as(OTHER_TOKEN) });
    expect(read.json().detail.replace('run-alice', 'X')).toBe(unknown.json().detail.replace('no-such-run', 'X'));
    expect((await app.inject({ url: '/runs', headers: as(OTHER_TOKEN) })).json().runs).toEqual([]);
    expect((await app.inject({ url: '/runs?worker=scribe', headers: as(OTHER_TOKEN) })).json().runs).toEqual([]);
    // The listing says whose runs it holds, so an empty one is not read as "no such run anywhere".
    expect((await app.inject({ url: '/runs?runId=run-alice', headers: as(OTHER_TOKEN) })).json()).toMatchObject({ runs: [], visibleTo: 'bob' });

    for (const request of [
      { method: 'POST' as const, url: '/compile', payload: compile('run-alice', 'courier') },
      { method: 'GET' as const, url: '/context/mars?runId=run-alice' },
      { method: 'GET' as const, url: '/context/venus?runId=run-alice&format=text' },
    ]) {
      const appended = await app.inject({ ...request, headers: as(OTHER_TOKEN) });
      expect(appended.statusCode, request.url).toBe(409);
      expect(appended.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(appended.json()).toMatchObject({ code: 'CC_RUN_OWNED', status: 409 });
      expect(appended.json().detail).toMatch(/^No prompt was delivered\. Run run-alice was opened by another caller/);
      expect(appended.headers['etag']).toBeUndefined();
      expect(appended.body).not.toContain('<<cc');
    }

    // A's run is as A left it, and still listed for A by worker.
    const mine = (await app.inject({ url: '/runs/run-alice/trace', headers: as(TEST_TOKEN) })).json();
    expect(mine.events.map((event: { caller: string; subject: { id: string } }) => [event.caller, event.subject.id])).toEqual([['alice', 'scribe']]);
    expect(mine.chain.problems).toEqual([]);
    expect((await app.inject({ url: '/runs?worker=scribe', headers: as(TEST_TOKEN) })).json().runs.map((run: { runId: string }) => run.runId)).toEqual(['run-alice']);
    // The refusals are counted, per route, under their code.
    const metrics = (await app.inject({ url: '/metrics', headers: as(TEST_TOKEN) })).body;
    for (const route of ['POST /compile', 'GET /context/mars', 'GET /context/venus']) {
      expect(metrics).toContain(`cc_compile_failures_total{route="${route}",code="CC_RUN_OWNED"} 1`);
    }
  });

  it('regression: B cannot open A’s refresh run first — `<runId>:refresh` is a 400 on every compile route, and A’s refresh then opens it', async () => {
    const { app } = await twoCallers();
    const now = '2026-11-30T17:20:00Z';
    for (const request of [
      { method: 'GET' as const, url: '/context/venus?runId=call-123:refresh', field: '/query/runId' },
      { method: 'GET' as const, url: '/context/topic/garden?runId=call-123:refresh', field: '/query/runId' },
      { method: 'POST' as const, url: '/compile', payload: compile('call-123:refresh'), field: '/body/runId' },
    ]) {
      const { field, ...inject } = request;
      const taken = await app.inject({ ...inject, headers: as(OTHER_TOKEN) });
      expect(taken.statusCode, request.url).toBe(400);
      expect(taken.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(taken.json()).toMatchObject({ code: 'CC_VALIDATION_FAILED', errors: [{ path: field }] });
      expect(taken.json().detail).toMatch(/runId: must not end in :refresh: a connect's refreshes are traced in <runId>:refresh/);
      expect(taken.headers['x-run-id']).toBeUndefined();
    }
    expect((await app.inject({ url: '/runs/call-123:refresh/trace', headers: as(OTHER_TOKEN) })).statusCode).toBe(404);

    const connected = await app.inject({ url: `/context/venus?runId=call-123&now=${now}`, headers: as(TEST_TOKEN) });
    expect(connected.statusCode).toBe(200);
    const refreshed = await app.inject({ url: `/context/venus/refresh?runId=call-123&now=2026-11-30T17:25:00Z`, headers: as(TEST_TOKEN) });
    // Nothing changed since the connect: a 304, traced in the refresh run, which is A's.
    expect(refreshed.statusCode).toBe(304);
    expect(refreshed.headers['x-run-id']).toBe('call-123:refresh');
    expect((await app.inject({ url: '/runs/call-123:refresh/trace', headers: as(TEST_TOKEN) })).json().events[0]).toMatchObject({ caller: 'alice', parentRunId: 'call-123' });
    // A run id that only contains the word, or ends in another case of it, is anybody's to open.
    for (const runId of ['call-123:refreshed', 'refresh-call', 'call:Refresh']) {
      expect((await app.inject({ url: `/context/venus?runId=${runId}`, headers: as(OTHER_TOKEN) })).statusCode, runId).toBe(200);
    }
  });

  it('lets a caller granted read-all read and list every caller’s runs; it still cannot append to them', async () => {
    const { app } = await twoCallers({ ops: '1', CONTEXT_COMPILER_READ_ALL: 'ops' });
    await app.inject({ method: 'POST', url: '/compile', headers: as(TEST_TOKEN), payload: compile('run-alice') });
    await app.inject({ method: 'POST', url: '/compile', headers: as(OTHER_TOKEN), payload: compile('run-bob') });
    const answer = (await app.inject({ url: '/runs', headers: as(OPS_TOKEN) })).json();
    expect(answer).not.toHaveProperty('visibleTo');
    const listed = answer.runs;
    expect(listed.map((run: { runId: string; caller: string }) => [run.runId, run.caller]).sort()).toEqual([
      ['run-alice', 'alice'],
      ['run-bob', 'bob'],
    ]);
    expect((await app.inject({ url: '/runs/run-alice/trace', headers: as(OPS_TOKEN) })).json().events[0].caller).toBe('alice');
    expect((await app.inject({ method: 'POST', url: '/compile', headers: as(OPS_TOKEN), payload: compile('run-alice') })).statusCode).toBe(409);
  });

  it('leaves the single-token setup unchanged: its caller reads every run, those traced before callers were named included', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    await app.traces.append(deliveredEvent('run-before-names'));
    await app.inject({ method: 'POST', url: '/compile', headers: as(TEST_TOKEN), payload: compile('run-now') });
    const runs = (await app.inject({ url: '/runs', headers: as(TEST_TOKEN) })).json().runs;
    expect(runs.map((run: { runId: string }) => run.runId).sort()).toEqual(['run-before-names', 'run-now']);
    const [event] = (await app.inject({ url: '/runs/run-now/trace', headers: as(TEST_TOKEN) })).json().events;
    expect(event.caller).toMatch(/^token-[0-9a-f]{8}$/);
    expect((await app.inject({ url: '/runs/run-before-names/trace', headers: as(TEST_TOKEN) })).statusCode).toBe(200);
  });

  it('leaves the tokenless loopback setup unchanged: no caller recorded, every run readable and appendable', async () => {
    const { app } = await buildTestApp();
    expect((await app.inject({ method: 'POST', url: '/compile', payload: compile('run-local') })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: '/compile', payload: compile('run-local') })).statusCode).toBe(200);
    const { events } = (await app.inject('/runs/run-local/trace')).json();
    expect(events).toHaveLength(2);
    expect(events[0].caller).toBeUndefined();
  });
});

describe('runs are bounded', () => {
  it(`refuses a delivery into a run that holds ${MAX_RUN_EVENTS.toLocaleString('en-US')} events with a 409 CC_RUN_FULL, before any of the prompt leaves`, async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: ALICE });
    // The run filled through the service's own store, under the documented cap.
    for (let i = 0; i < MAX_RUN_EVENTS; i += 1000) {
      await Promise.all(Array.from({ length: 1000 }, () => app.traces.append(failedEvent('run-full', { caller: 'alice' }))));
    }
    for (const request of [
      { method: 'POST' as const, url: '/compile', payload: compile('run-full') },
      { method: 'GET' as const, url: '/context/mars?runId=run-full' },
    ]) {
      const refused = await app.inject({ ...request, headers: as(TEST_TOKEN) });
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'CC_RUN_FULL', limit: MAX_RUN_EVENTS });
      expect(refused.json().detail).toContain(`holds ${MAX_RUN_EVENTS.toLocaleString('en-US')} events`);
      expect(refused.headers['x-run-id']).toBe('run-full');
      expect(refused.headers['etag']).toBeUndefined();
    }
    // Nothing was added, and a new run works at once.
    expect((await app.inject({ url: '/runs', headers: as(TEST_TOKEN) })).json().runs[0]).toMatchObject({ runId: 'run-full', events: MAX_RUN_EVENTS });
    expect((await app.inject({ method: 'POST', url: '/compile', headers: as(TEST_TOKEN), payload: compile('run-next') })).statusCode).toBe(200);
  }, 120_000);

  it('pages GET /runs/:runId/trace with limit and cursor, and refuses a cursor it did not issue', async () => {
    const { app } = await buildTestApp();
    for (let i = 0; i < 45; i++) await app.traces.append(failedEvent('run-paged', { request: { n: i } }));
    const seen: number[] = [];
    let url = '/runs/run-paged/trace';
    let pages = 0;
    for (;;) {
      const page = (await app.inject(url)).json();
      pages++;
      expect(page.events.length).toBeLessThanOrEqual(20);
      seen.push(...page.events.map((event: { request: { n: number } }) => event.request.n));
      if (page.nextCursor === null) break;
      url = `/runs/run-paged/trace?cursor=${page.nextCursor}`;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(Array.from({ length: 45 }, (_, i) => i));
    expect((await app.inject('/runs/run-paged/trace?limit=100')).json().events).toHaveLength(45);
    for (const bad of ['limit=0', 'limit=101', 'limit=ten', 'cursor=not%20a%20cursor', 'cursor=bm90LWEtY3Vyc29y']) {
      const response = await app.inject(`/runs/run-paged/trace?${bad}`);
      expect(response.statusCode, bad).toBe(400);
      expect(response.json().errors[0].path).toMatch(/^\/query\/(limit|cursor)/);
    }
  });
});
