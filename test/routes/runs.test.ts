import { createHash } from 'node:crypto';
import { readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir, TEST_TOKEN, readyStatus } from '../helpers/app.js';
import { deliveredEvent, failedEvent } from '../helpers/trace-events.js';

const PROBLEM = /^application\/problem\+json/;
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

describe('GET /runs/:runId/trace', () => {
  it('returns every event of the run in order, with the delivered prompts rebuilt and verified', async () => {
    const { app } = await buildTestApp();
    const first = deliveredEvent('run-abc', { at: new Date(Date.now() - 2000).toISOString() });
    const second = deliveredEvent('run-abc', { status: 304, outcome: 'not-modified' });
    await app.traces.append(first);
    await app.traces.append(failedEvent('run-other'));
    await app.traces.append(second);

    const response = await app.inject('/runs/run-abc/trace');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.headers['cache-control']).toBe('no-store');
    const body = response.json();
    expect(body.runId).toBe('run-abc');
    expect(body.events.map((event: { status: number }) => event.status)).toEqual([200, 304]);
    const [event] = body.events;
    expect(event.systemPrompt).toBe(first.segments!.system.join(''));
    expect(event.inputPrompt).toBe(first.segments!.input.join(''));
    expect(event.verified).toBe(true);
    // Every recorded part survives serialization, including the compiler-owned shapes.
    expect(event).toMatchObject({
      at: first.at,
      route: first.route,
      subject: first.subject,
      surface: first.surface,
      request: first.request,
      blocks: first.blocks,
      promptSha256: first.promptSha256,
      inputSha256: first.inputSha256,
      budget: first.budget,
      cache: first.cache,
      tokens: first.tokens,
      redactions: first.redactions,
      warnings: first.warnings,
      sources: first.sources,
      timing: first.timing,
    });
    expect(event.segments.system).toHaveLength(first.segments!.system.length);
  });

  it('counts each block’s exact tokens as the cache plan does: a checkpoint’s tokens are its blocks’ and the tool definitions’ (the blocks showed an estimate beside exact checkpoints)', async () => {
    const { app } = await buildTestApp();
    for (const url of ['/context/mars?now=2026-11-30T09:00:00Z&topicId=garden', '/context/venus?now=2026-11-30T09:00:00Z']) {
      const runId = (await app.inject(url)).headers['x-run-id'] as string;
      const [event] = (await app.inject(`/runs/${runId}/trace`)).json().events as Array<{
        blocks: Array<{ kind: string; authority: string; tokens?: number; approxTokens: number }>;
        cache: { tokenizer: string; toolTokens: number; boundaries: Array<{ blockIndex: number; tokens: number }> };
      }>;
      expect(event!.cache.tokenizer).toBe('o200k_base');
      expect(event!.blocks.every((block) => Number.isInteger(block.tokens) && block.tokens! > 0), url).toBe(true);
      for (const boundary of event!.cache.boundaries) {
        const blocks = event!.blocks.slice(0, boundary.blockIndex + 1).filter((block) => block.authority === 'trusted-directive');
        expect(blocks.reduce((sum, block) => sum + block.tokens!, event!.cache.toolTokens), `${url} up to block ${boundary.blockIndex}`).toBe(boundary.tokens);
      }
    }
  });

  it('shows a failed compile with its error and no prompt', async () => {
    const { app } = await buildTestApp();
    await app.traces.append(failedEvent('run-failed'));
    const [event] = (await app.inject('/runs/run-failed/trace')).json().events;
    expect(event).toMatchObject({ outcome: 'failed', status: 422, error: { code: 'CC_BUDGET_EXCEEDED', status: 422 }, systemPrompt: null, verified: null });
  });

  it('answers 404 with a problem for an unknown run', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/runs/never-ran/trace');
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(PROBLEM);
    expect(response.json()).toMatchObject({ code: 'CC_NOT_FOUND', status: 404 });
  });

  it('rejects an unsafe run id with CC_UNSAFE_ID', async () => {
    const { app } = await buildTestApp();
    for (const runId of ['..%2F..%2Fetc', 'run%20id', 'x'.repeat(129)]) {
      const response = await app.inject(`/runs/${runId}/trace`);
      expect(response.statusCode, runId).toBe(400);
      expect(response.headers['content-type']).toMatch(PROBLEM);
      expect(response.json().code).toBe('CC_UNSAFE_ID');
      expect(response.json().errors[0].path).toBe('/params/runId');
    }
  });

  it('says which brain files changed since, with ?verify=sources', async () => {
    const brain = await copyExampleBrain();
    const outside = await tempDir('cc-outside-');
    await writeFile(join(outside, 'secret.md'), 'not brain');
    await symlink(join(outside, 'secret.md'), join(brain, 'escape.md'));
    const soul = await readFile(join(brain, 'SOUL.md'));
    const { app } = await buildTestApp({ BRAIN_ROOT: brain });
    const recorded = (path: string, sha: string) => ({ path, size: 1, mtimeMs: 1, sha256: sha });
    await app.traces.append(
      deliveredEvent('run-src', {
        sources: [
          recorded('SOUL.md', sha256(soul)),
          recorded('tasks/open.md', sha256(await readFile(join(brain, 'tasks/open.md')))),
          recorded('calendar/today.md', sha256('an older calendar')),
          recorded('../outside/secret.md', sha256('not brain')),
          recorded('escape.md', sha256('not brain')),
        ],
      }),
    );
    await rm(join(brain, 'tasks/open.md'));

    const plain = (await app.inject('/runs/run-src/trace')).json().events[0].sources[0];
    expect(plain).not.toHaveProperty('changed');

    const response = await app.inject('/runs/run-src/trace?verify=sources');
    expect(response.statusCode).toBe(200);
    const sources = response.json().events[0].sources as Array<{ path: string; changed: boolean; currentSha256: string | null }>;
    expect(sources.map(({ path, changed }) => [path, changed])).toEqual([
      ['SOUL.md', false],
      ['tasks/open.md', true],
      ['calendar/today.md', true],
      ['../outside/secret.md', true],
      ['escape.md', true],
    ]);
    expect(sources[0]!.currentSha256).toBe(sha256(soul));
    expect(sources[1]!.currentSha256).toBeNull();
    expect(sources[3]!.currentSha256).toBeNull();
    expect(sources[4]!.currentSha256).toBeNull();
  });

  it('says the chain is signed when TRACE_SIGNING_KEY is set, and reports an event edited on disk as broken', async () => {
    const { app, config } = await buildTestApp({ TRACE_SIGNING_KEY: 'trace-signing-key-0123456789abcdef-0123' });
    for (const runId of ['run-a', 'run-b', 'run-c']) await app.traces.append(deliveredEvent(runId));
    const intact = (await app.inject('/runs/run-b/trace')).json();
    expect(intact.chain).toEqual({ status: 'signed', problems: [], notes: [] });
    expect(intact.events.map((event: { verified: boolean; chain: string }) => [event.verified, event.chain])).toEqual([[true, 'signed']]);

    const [name] = (await readdir(config.traceDir)).filter((file) => file.endsWith('.jsonl'));
    const path = join(config.traceDir, name!);
    // Same length: the running writer's file stays the size it wrote, only the bytes differ.
    await writeFile(path, (await readFile(path, 'utf8')).replace(/("runId":"run-b".*?)"status":200/, '$1"status":201'));
    const response = await app.inject('/runs/run-b/trace');
    expect(response.statusCode).toBe(200);
    expect(response.json().events.map((event: { status: number; verified: boolean; chain: string }) => [event.status, event.verified, event.chain])).toEqual([[201, false, 'broken']]);
    expect(response.json().chain).toMatchObject({ status: 'broken', problems: [expect.stringContaining('was altered or forged')] });
    expect((await app.inject('/runs/run-c/trace')).json().chain.status).toBe('signed');
  });

  it('rejects an unknown verify mode', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/runs/run-1/trace?verify=everything');
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0].path).toBe('/query/verify');
  });

  it('requires a token when tokens are configured', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    await app.traces.append(deliveredEvent('run-auth'));
    expect((await app.inject('/runs/run-auth/trace')).statusCode).toBe(401);
    expect((await app.inject('/runs')).statusCode).toBe(401);
    const ok = await app.inject({ url: '/runs/run-auth/trace', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(ok.statusCode).toBe(200);
  });

  it('never logs the prompts it returns', async () => {
    const harness = await buildTestApp({ LOG_LEVEL: 'trace' });
    await harness.app.traces.append(deliveredEvent('run-log'));
    await harness.app.inject('/runs/run-log/trace');
    expect(harness.rawLogs()).not.toContain('introspective thought partner');
  });
});

describe('GET /runs', () => {
  async function seeded() {
    const harness = await buildTestApp();
    const base = Date.now() - 60_000;
    for (let i = 0; i < 12; i++) {
      const at = new Date(base + i * 1000).toISOString();
      if (i % 4 === 3) await harness.app.traces.append(failedEvent(`w-${i}`, { at }));
      else await harness.app.traces.append(deliveredEvent(`p-${i}`, { at, subject: { kind: 'persona', id: i % 2 === 0 ? 'mars' : 'venus' } }));
    }
    return harness.app;
  }

  it('lists run summaries newest first and pages with a cursor', async () => {
    const app = await seeded();
    const first = await app.inject('/runs?limit=5');
    expect(first.statusCode).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    const page = first.json();
    expect(page.runs.map((run: { runId: string }) => run.runId)).toEqual(['w-11', 'p-10', 'p-9', 'p-8', 'w-7']);
    expect(Object.keys(page.runs[1]).sort()).toEqual(
      ['at', 'chars', 'compiledFor', 'engine', 'events', 'outcome', 'promptSha256', 'role', 'route', 'runId', 'status', 'subject', 'surface', 'topicId', 'warnings'].sort(),
    );
    expect(page.runs[1]).toMatchObject({ subject: { kind: 'persona', id: 'mars' }, surface: 'voice', status: 200, outcome: 'delivered', events: 1 });
    expect(page.runs[1].chars).toBeGreaterThan(0);
    expect(page.runs[1].promptSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(page.runs[1]).not.toHaveProperty('systemPrompt');

    const seen = [...page.runs];
    let cursor = page.nextCursor;
    while (cursor) {
      const next = (await app.inject(`/runs?limit=5&cursor=${cursor}`)).json();
      seen.push(...next.runs);
      cursor = next.nextCursor;
    }
    expect(seen.map((run) => run.runId)).toHaveLength(12);
    expect(new Set(seen.map((run) => run.runId)).size).toBe(12);
  });

  it('filters by persona, worker and status', async () => {
    const app = await seeded();
    const ids = async (query: string) => (await app.inject(`/runs?${query}`)).json().runs.map((run: { runId: string }) => run.runId);
    expect(await ids('persona=mars')).toEqual(['p-10', 'p-8', 'p-6', 'p-4', 'p-2', 'p-0']);
    expect(await ids('persona=venus&status=200')).toEqual(['p-9', 'p-5', 'p-1']);
    expect(await ids('worker=scribe')).toEqual(['w-11', 'w-7', 'w-3']);
    expect(await ids('status=422')).toEqual(['w-11', 'w-7', 'w-3']);
    expect(await ids('outcome=failed')).toEqual(['w-11', 'w-7', 'w-3']);
    expect(await ids('status=503')).toEqual([]);
  });

  it('finds the run of a request from its log line (x-request-id), a traceparent, or the minute it ran, and lists what it was compiled for', async () => {
    const brainRoot = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const mars = await app.inject({ url: '/context/mars?topicId=garden&now=2026-11-30T09:00:00Z&engine=gpt-realtime', headers: { 'x-request-id': 'voice-call-9', traceparent } });
    expect(mars.statusCode).toBe(200);
    const worker = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'queued-task', worker: 'courier', task: 'Send the digest', now: '2026-11-30T17:30:00Z' } });
    expect(worker.statusCode).toBe(200);
    // The request id the log line and the x-request-id header name finds the run; so does the trace.
    const byRequest = (await app.inject('/runs?requestId=voice-call-9')).json();
    expect(byRequest).toMatchObject({ partial: false, nextCursor: null });
    expect(byRequest.runs).toEqual([
      expect.objectContaining({
        runId: mars.headers['x-run-id'],
        compiledFor: '2026-11-30T09:00:00Z',
        topicId: 'garden',
        engine: 'gpt-realtime',
        role: null,
        requestId: 'voice-call-9',
        traceparent,
        warnings: mars.json().warnings.length,
      }),
    ]);
    expect((await app.inject('/runs?traceparent=4bf92f3577b34da6a3ce929d0e0e4736')).json().runs.map((run: { runId: string }) => run.runId)).toEqual([mars.headers['x-run-id']]);
    expect((await app.inject(`/runs?runId=${worker.headers['x-run-id']}`)).json().runs).toEqual([
      expect.objectContaining({ compiledFor: '2026-11-30T17:30:00Z', role: worker.json().receipts.role.id, topicId: null }),
    ]);
    // A time range of the traced time: both ran in this one.
    const from = new Date(Date.now() - 60_000).toISOString();
    expect((await app.inject(`/runs?from=${from}`)).json().runs).toHaveLength(2);
    expect((await app.inject(`/runs?to=${from}`)).json().runs).toEqual([]);
    for (const bad of ['traceparent=00-xyz', 'from=yesterday', 'requestId=has%20space']) {
      const response = await app.inject(`/runs?${bad}`);
      expect(response.statusCode, bad).toBe(400);
      expect(response.headers['content-type']).toMatch(PROBLEM);
    }
  });

  it('answers an empty list before anything was traced', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/runs');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ runs: [], nextCursor: null, partial: false });
  });

  it('rejects bad query values with a 400 problem naming the field', async () => {
    const { app } = await buildTestApp();
    const cases: Array<[string, string, string]> = [
      ['limit=101', '/query/limit', 'CC_VALIDATION_FAILED'],
      ['limit=0', '/query/limit', 'CC_VALIDATION_FAILED'],
      ['limit=ten', '/query/limit', 'CC_VALIDATION_FAILED'],
      ['status=42', '/query/status', 'CC_VALIDATION_FAILED'],
      ['persona=Mars', '/query/persona', 'CC_UNSAFE_ID'],
      ['worker=a/b', '/query/worker', 'CC_UNSAFE_ID'],
      ['cursor=%25%25', '/query/cursor', 'CC_VALIDATION_FAILED'],
      ['cursor=bm90LWEtY3Vyc29y', '/query/cursor', 'CC_VALIDATION_FAILED'],
    ];
    for (const [query, path, code] of cases) {
      const response = await app.inject(`/runs?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.headers['content-type']).toMatch(PROBLEM);
      expect(response.json().code, query).toBe(code);
      expect(response.json().errors[0].path, query).toBe(path);
    }
  });
});

describe('trace store wiring', () => {
  it('observes append latency in the trace write histogram', async () => {
    const { app } = await buildTestApp();
    await app.traces.append(deliveredEvent('run-metric'));
    const metrics = (await app.inject('/metrics')).body;
    expect(metrics).toMatch(/cc_trace_write_duration_seconds_count\{result="ok"\} 1/);
  });

  it('turns /readyz 503 while the trace directory is gone, and ready again once it is back', async () => {
    const dir = join(await tempDir('cc-ready-'), 'traces');
    const { app } = await buildTestApp({ TRACE_DIR: dir });
    await app.traces.append(deliveredEvent('run-ready'));
    expect((await app.inject('/readyz')).statusCode).toBe(200);

    await rename(dir, `${dir}.moved`);
    await writeFile(dir, 'not a directory');
    const down = await app.inject('/readyz');
    expect(down.statusCode).toBe(503);
    expect(down.headers['content-type']).toMatch(PROBLEM);
    expect(down.json().detail).toMatch(/traces: .*TRACE_DIR/);
    expect(down.json().checks).toContainEqual(expect.objectContaining({ name: 'traces', ok: false }));
    await expect(app.traces.append(deliveredEvent('run-down'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', statusCode: 503 });

    await rm(dir);
    await rename(`${dir}.moved`, dir);
    expect(await readyStatus(app)).toBe(200);
    await app.traces.append(deliveredEvent('run-back'));
    expect((await app.inject('/runs/run-back/trace')).statusCode).toBe(200);
  });
});

describe('GET /runs stops working once nobody waits for it (issue 36)', () => {
  /** Replaces the store's listing with one that waits until its signal aborts: when it started, and why it stopped. */
  function waitingListing(app: Awaited<ReturnType<typeof buildTestApp>>['app']): { started: Promise<void>; aborted: Promise<unknown> } {
    let started!: () => void;
    let aborted!: (reason: unknown) => void;
    const result = { started: new Promise<void>((resolve) => (started = resolve)), aborted: new Promise((resolve) => (aborted = resolve)) };
    app.traces.listRuns = (query = {}) =>
      new Promise((_, reject) => {
        started();
        query.signal!.addEventListener('abort', () => {
          aborted(query.signal!.reason);
          reject(query.signal!.reason);
        });
      });
    return result;
  }

  it('answers 503 once REQUEST_TIMEOUT passed, saying so', async () => {
    const { app } = await buildTestApp({ REQUEST_TIMEOUT: '1s', HEADERS_TIMEOUT: '1s' });
    const { aborted } = waitingListing(app);
    const response = await app.inject('/runs?requestId=req-1');
    expect(await aborted).toBeInstanceOf(Error);
    expect(response.statusCode).toBe(503);
    expect(response.headers['content-type']).toMatch(PROBLEM);
    expect(response.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    expect(response.json().detail).toContain('REQUEST_TIMEOUT (1000 ms)');
  });

  it('stops the listing when the client closes its connection', async () => {
    const { app } = await buildTestApp();
    const { started, aborted } = waitingListing(app);
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(address);
    const { connect } = await import('node:net');
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /runs?requestId=req-1 HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await started;
    socket.destroy();
    expect(String(await aborted)).toContain('the client closed the connection');
  });
});
