import { createHash } from 'node:crypto';
import { readdir, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir, readyStatus } from '../helpers/app.js';
import { driveCompiles, newPool, turnPayload } from '../../bench/compile-load.js';
import { faultyFs } from '../helpers/faulty-fs.js';
import { parseExposition, sampleOf, valueOf } from '../helpers/metrics.js';

const PROBLEM = /^application\/problem\+json/;
const NOW = '2026-11-30T17:20:00Z';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Text only a request carries: it must reach the trace's prompts, never its request record or the logs. */
const MESSAGE = 'Canary-message-7f3a: please tighten the sign-off of my email.';
const TASK = 'Canary-task-91bd: summarise the week.';

const turn = (overrides: Record<string, unknown> = {}) => ({
  phase: 'turn',
  surface: 'chat',
  worker: 'scribe',
  channelId: 'general',
  message: MESSAGE,
  now: NOW,
  ...overrides,
});

async function harness(env: Record<string, string> = {}, options: Parameters<typeof buildTestApp>[1] = {}) {
  const built = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain(), ...env }, options);
  const { app } = built;
  return {
    ...built,
    compile: (payload: object, headers: Record<string, string> = {}, url = '/compile') => app.inject({ method: 'POST', url, payload, headers }),
    trace: async (runId: string) => app.inject(`/runs/${runId}/trace`),
  };
}

describe('every delivery is traced before it is sent', () => {
  it('records a 200 with the exact delivered prompts, verified, and the brain files read', async () => {
    const { compile, trace } = await harness();
    const response = await compile(turn({ runId: 'run-ok', timezone: 'Europe/London', preferences: { tone: 'direct' } }));
    expect(response.statusCode).toBe(200);
    const body = response.json();

    const traced = await trace('run-ok');
    expect(traced.statusCode).toBe(200);
    const events = traced.json().events;
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event.systemPrompt).toBe(body.systemPrompt);
    expect(event.inputPrompt).toBe(body.inputPrompt);
    expect(event.verified).toBe(true);
    expect(event).toMatchObject({
      runId: 'run-ok',
      route: 'POST /compile',
      subject: { kind: 'worker', id: 'scribe' },
      surface: 'chat',
      status: 200,
      outcome: 'delivered',
      promptSha256: body.promptSha256,
      inputSha256: body.inputSha256,
      blocks: body.blocks,
      budget: body.budget,
      cache: body.cache,
      tokens: body.tokens,
      redactions: body.redactions,
      warnings: body.warnings,
    });
    expect(event.segments.system).toHaveLength(body.blocks.filter((block: { authority: string }) => block.authority === 'trusted-directive').length);
    expect(event.segments.system.length + event.segments.input.length).toBe(body.blocks.length);
    expect(event.sources.map((source: { path: string }) => source.path)).toEqual(body.sources.map((source: { path: string }) => source.path));
    expect(event.sources.find((source: { path: string }) => source.path === 'workers/scribe/identity.md')).toMatchObject({
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      size: expect.any(Number),
      mtimeMs: expect.any(Number),
    });
    expect(event.request).toMatchObject({
      worker: 'scribe',
      channelId: 'general',
      phase: 'turn',
      timezone: 'Europe/London',
      now: NOW,
      preferences: { tone: 'direct' },
      message: true,
      format: 'json',
      conditional: false,
    });
    expect(JSON.stringify(event.request)).not.toContain('Canary');
    expect(Object.keys(event.timing).sort()).toEqual(['compileMs', 'readMs', 'untilTraceMs']);
    expect(Date.parse(event.at)).toBeGreaterThan(Date.now() - 60_000);
    expect(response.headers['server-timing']).toMatch(/^read;dur=[\d.]+, compile;dur=[\d.]+, trace;dur=[\d.]+$/);
  });

  it('records the text format like the JSON one: same prompts, format text', async () => {
    const { compile, trace } = await harness();
    const text = await compile(turn({ runId: 'run-text' }), {}, '/compile?format=text');
    expect(text.statusCode).toBe(200);
    const [event] = (await trace('run-text')).json().events;
    expect(`${event.systemPrompt}\n\n${event.inputPrompt}`).toBe(text.body);
    expect(event).toMatchObject({ verified: true, request: { format: 'text' } });
  });

  it('records a compile that failed with its error and no prompt, and returns its run id', async () => {
    const { app, compile, trace } = await harness();
    const missing = await compile(turn({ worker: 'ghost' }));
    expect(missing.statusCode).toBe(404);
    const missingRun = missing.headers['x-run-id'] as string;
    expect(missingRun).toMatch(/^[0-9a-f-]{36}$/);
    const [notFound] = (await trace(missingRun)).json().events;
    expect(notFound).toMatchObject({
      outcome: 'failed',
      status: 404,
      subject: { kind: 'worker', id: 'ghost' },
      error: { code: 'CC_NOT_FOUND', status: 404, detail: missing.json().detail },
      systemPrompt: null,
      inputPrompt: null,
      verified: null,
    });
    expect(notFound).not.toHaveProperty('segments');

    const over = await compile({ phase: 'start', surface: 'queued-task', worker: 'scribe', task: `${TASK} ${'x'.repeat(9000)}`, now: NOW, runId: 'run-422' });
    expect(over.statusCode).toBe(422);
    expect(over.headers['content-type']).toMatch(PROBLEM);
    expect(over.headers['x-run-id']).toBe('run-422');
    expect(over.headers['etag']).toBeUndefined();
    const [budget] = (await trace('run-422')).json().events;
    expect(budget).toMatchObject({ outcome: 'failed', status: 422, error: { code: 'CC_BUDGET_EXCEEDED', status: 422 }, request: { task: true } });
    // The brain files read before the failure are still listed.
    expect(budget.sources.map((source: { path: string }) => source.path)).toContain('workers/scribe/identity.md');
    expect(JSON.stringify(budget)).not.toContain('Canary');
    expect(await valueOf(app.metrics.compileFailures, { route: 'POST /compile', code: 'CC_BUDGET_EXCEEDED' })).toBe(1);
    expect(await valueOf(app.metrics.compileFailures, { route: 'POST /compile', code: 'CC_NOT_FOUND' })).toBe(1);
  });

  it('records a 304 as not-modified, with the prompts the caller already holds', async () => {
    const { compile, trace } = await harness();
    const first = await compile(turn({ runId: 'run-etag' }));
    const again = await compile(turn({ runId: 'run-304' }), { 'if-none-match': first.headers['etag'] as string });
    expect(again.statusCode).toBe(304);
    expect(again.headers['x-run-id']).toBe('run-304');
    const [event] = (await trace('run-304')).json().events;
    expect(event).toMatchObject({
      status: 304,
      outcome: 'not-modified',
      verified: true,
      promptSha256: first.json().promptSha256,
      systemPrompt: first.json().systemPrompt,
      request: { conditional: true },
    });
  });

  it('groups the events of a caller-supplied run id in the order they happened', async () => {
    const { compile, trace } = await harness();
    const runId = 'call-2026_11:30-a';
    const start = await compile({ phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', now: NOW, runId });
    const first = await compile(turn({ runId }));
    const repeat = await compile(turn({ runId }), { 'if-none-match': first.headers['etag'] as string });
    const failed = await compile(turn({ runId, message: 'x'.repeat(30_000) }));
    const other = await compile(turn({ runId: 'someone-else' }));
    expect([start, first, repeat, failed, other].map((response) => response.statusCode)).toEqual([200, 200, 304, 422, 200]);

    const events = (await trace(runId)).json().events as Array<{ status: number; outcome: string; request: { phase: string }; promptSha256?: string }>;
    expect(events.map((event) => [event.status, event.outcome, event.request.phase])).toEqual([
      [200, 'delivered', 'start'],
      [200, 'delivered', 'turn'],
      [304, 'not-modified', 'turn'],
      [422, 'failed', 'turn'],
    ]);
    expect(events[0]!.promptSha256).toBe(start.json().promptSha256);
    expect(events[1]!.promptSha256).toBe(first.json().promptSha256);
  });

  it('never logs prompts, brain text, or task and message text', async () => {
    const { compile, rawLogs } = await harness({ LOG_LEVEL: 'trace' });
    const ok = (await compile(turn())).json();
    await compile(turn(), { 'if-none-match': `"${'0'.repeat(40)}"` });
    await compile({ phase: 'start', surface: 'queued-task', worker: 'scribe', task: `${TASK} ${'x'.repeat(9000)}`, now: NOW });
    await compile(turn({ worker: 'ghost' }));
    const logs = rawLogs();
    expect(logs).toContain('"runId"');
    for (const secret of ['Canary', 'You are Scribe', ok.systemPrompt.slice(0, 200), ok.inputPrompt.slice(0, 200)]) {
      expect(logs).not.toContain(secret);
    }
  });
});

describe('when the trace store cannot make an event durable', () => {
  it('answers 503 with no prompt, turns /readyz 503, and recovers by itself when the directory is back', async () => {
    const dir = join(await tempDir('cc-trace-down-'), 'traces');
    const { app, compile, trace, rawLogs } = await harness({ TRACE_DIR: dir });
    const ok = await compile(turn({ runId: 'before' }));
    expect(ok.statusCode).toBe(200);
    const { systemPrompt, inputPrompt, promptSha256 } = ok.json();

    // A regular file where the directory was: root cannot write through it either.
    await rename(dir, `${dir}.moved`);
    await writeFile(dir, 'not a directory');

    for (const runId of ['down-1', 'down-2']) {
      const down = await compile(turn({ runId }));
      expect(down.statusCode, runId).toBe(503);
      expect(down.headers['content-type']).toMatch(PROBLEM);
      expect(down.headers['x-run-id']).toBe(runId);
      expect(down.headers['retry-after']).toBe('1');
      expect(down.headers['etag']).toBeUndefined();
      expect(down.headers['server-timing']).toBeUndefined();
      expect(down.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', status: 503, detail: expect.stringMatching(/^No prompt was delivered\. .*TRACE_DIR/) });
      const everything = `${JSON.stringify(down.headers)}\n${down.body}`;
      for (const leak of ['You are Scribe', 'Canary', systemPrompt.slice(0, 120), inputPrompt.slice(0, 120), promptSha256, 'systemPrompt']) {
        expect(everything).not.toContain(leak);
      }
    }
    const text = await compile(turn(), {}, '/compile?format=text');
    expect(text.statusCode).toBe(503);
    expect(text.body).not.toContain('You are Scribe');

    // A failed compile that cannot be traced is a 503 too, and says both.
    const ghost = await compile(turn({ worker: 'ghost' }));
    expect(ghost.statusCode).toBe(503);
    expect(ghost.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', detail: expect.stringMatching(/^The compile failed \(CC_NOT_FOUND, 404\) and was not traced\./) });
    expect(ghost.json()).not.toHaveProperty('hint');

    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toContainEqual(expect.objectContaining({ name: 'traces', ok: false }));
    expect(await valueOf(app.metrics.compileFailures, { route: 'POST /compile', code: 'CC_TRACE_UNAVAILABLE' })).toBe(4);
    expect(await valueOf(app.metrics.compileFailures, { route: 'POST /compile', code: 'CC_NOT_FOUND' })).toBe(0);
    // The store's failure and its refused events, as an operator's dashboard sees them.
    const scraped = parseExposition((await app.inject('/metrics')).body);
    expect(sampleOf(scraped, 'cc_trace_failures_total', { backend: 'files' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(scraped, 'cc_trace_appends_total', { backend: 'files', result: 'rejected' })).toBe(4);
    expect(sampleOf(scraped, 'cc_trace_appends_total', { backend: 'files', result: 'durable' })).toBe(1);

    await rm(dir);
    await rename(`${dir}.moved`, dir);
    expect(await readyStatus(app)).toBe(200);
    const back = await compile(turn({ runId: 'after' }));
    expect(back.statusCode).toBe(200);
    expect((await trace('after')).json().events[0]).toMatchObject({ verified: true, promptSha256: back.json().promptSha256 });
    expect((await trace('before')).json().events[0].verified).toBe(true);
    expect(rawLogs()).not.toContain('You are Scribe');
  });
});

describe('a trace file truncated under the running service (logrotate copytruncate)', () => {
  it('keeps every later run readable and verified, also after a restart, and /readyz says what happened', async () => {
    const dir = join(await tempDir('cc-trace-cut-'), 'traces');
    const { app, compile, trace, rawLogs } = await harness({ TRACE_DIR: dir });
    for (let i = 0; i < 5; i++) expect((await compile(turn({ runId: `before-${i}` }))).statusCode).toBe(200);
    const [first] = (await readdir(dir)).filter((name) => name.endsWith('.jsonl'));
    await truncate(join(dir, first!), 0);

    const delivered = new Map<string, string>();
    for (let i = 0; i < 10; i++) {
      const answer = await compile(turn({ runId: `after-${i}` }));
      expect(answer.statusCode).toBe(200);
      delivered.set(`after-${i}`, answer.json().promptSha256);
    }
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks).toContainEqual({ name: 'traces', ok: true, note: expect.stringMatching(/^the current trace file was truncated under the writer/) });
    expect(rawLogs().split('trace file changed under the writer; continuing in a new file')).toHaveLength(2);
    const readAll = async (read: (runId: string) => Promise<{ statusCode: number; json(): { events: Array<{ verified: boolean; promptSha256: string }>; chain: { status: string; problems: string[] } } }>) => {
      for (const [runId, promptSha256] of delivered) {
        const response = await read(runId);
        expect(response.statusCode, runId).toBe(200);
        expect(response.json().events.map((event) => [event.verified, event.promptSha256]), runId).toEqual([[true, promptSha256]]);
        expect(response.json().chain).toMatchObject({ status: 'linked', problems: [] });
      }
    };
    await readAll(trace);
    await app.close();

    const { app: restarted } = await harness({ TRACE_DIR: dir });
    await readAll((runId) => restarted.inject(`/runs/${runId}/trace`));
  });
});

describe('a full trace volume at start', () => {
  it('makes /readyz 503 from the first probe, compiles 503, until a write works', async () => {
    const { fs, state } = faultyFs();
    state.failWith = 'ENOSPC';
    const { app, compile } = await harness({}, { traceFs: fs });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'CC_NOT_READY', detail: expect.stringContaining('traces: trace directory is not writable (TRACE_DIR): disk full (ENOSPC)') });
    expect((await compile(turn())).statusCode).toBe(503);
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    state.failWith = null;
    expect(await readyStatus(app)).toBe(200);
    expect((await compile(turn())).statusCode).toBe(200);
  });
});

describe('group commit over HTTP', () => {
  it('shares fsyncs between 32 concurrent clients: far fewer than one per request', async () => {
    const { app } = await harness({ RATE_LIMIT_MAX: '100000' });
    const origin = await app.listen({ port: 0, host: '127.0.0.1' });
    const pool = newPool(origin, 32);
    try {
      // Warm up: the first file is created (header and directory fsyncs) outside the measured burst.
      const warm = driveCompiles(pool, { concurrency: 32, total: 64, payload: (i) => turnPayload(`warm-${i}`) });
      await warm.done;
      const before = app.traces.stats();
      const load = driveCompiles(pool, { concurrency: 32, total: 640, payload: (i) => turnPayload(`burst-${i}`) });
      await load.done;
      const after = app.traces.stats();
      expect(load.outcomes.filter((outcome) => outcome.status === 200)).toHaveLength(640);
      const appends = after.appends - before.appends;
      const fsyncs = after.commits - before.commits;
      expect(appends).toBe(640);
      expect(fsyncs).toBeGreaterThan(0);
      expect(fsyncs).toBeLessThan(appends / 4);
      const metrics = await app.inject({ url: '/metrics' });
      expect(metrics.body).toContain(`cc_trace_commits_total ${after.commits}\n`);
      const [sample] = (await app.inject('/runs/burst-639/trace')).json().events;
      expect(sample.verified).toBe(true);
      expect(sha256(sample.systemPrompt)).toBe(load.outcomes.find((outcome) => outcome.runId === 'burst-639')!.promptSha256);
    } finally {
      await pool.close();
    }
  });
});
