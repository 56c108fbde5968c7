import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ContextCompilerError, createClient } from '../../packages/client/src/index.js';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';
import { failedEvent } from '../helpers/trace-events.js';

async function listen(env: Record<string, string> = {}) {
  const harness = await buildTestApp(env);
  const address = await harness.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...harness, baseUrl: address };
}

/** A client whose connects wait as long as a loaded machine needs: no test here is about the budget. */
function client(options: Parameters<typeof createClient>[0]) {
  const instance = createClient({ timeoutMs: 60_000, ...options, realtime: { budgetMs: 60_000, ...options.realtime } });
  onTestFinished(() => instance.close());
  return instance;
}

async function rejection(promise: Promise<unknown>): Promise<ContextCompilerError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ContextCompilerError);
  return error as ContextCompilerError;
}


/** A full persona answer's instructions: its two prompts joined (the answer carries each text once). */
const joined = (answer: { systemPrompt: string; inputPrompt: string | null }) => (answer.inputPrompt === null ? answer.systemPrompt : `${answer.systemPrompt}\n\n${answer.inputPrompt}`);

describe('client against a real server', () => {
  it('calls the probes and metrics with a token', async () => {
    const { baseUrl } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const api = client({ baseUrl, token: TEST_TOKEN });
    expect(await api.health()).toEqual({ status: 'ok' });
    expect((await api.ready()).status).toBe('ready');
    expect(await api.metrics()).toContain('cc_http_requests_total');
  });

  it('turns a 401 problem into a typed error', async () => {
    const { baseUrl } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const error = await rejection(client({ baseUrl }).metrics());
    expect(error.status).toBe(401);
    expect(error.code).toBe('CC_UNAUTHORIZED');
    expect(error.problem?.requestId).toBeTruthy();
  });

  it('surfaces a 429 with its Retry-After', async () => {
    const { baseUrl } = await listen({ RATE_LIMIT_MAX: '1' });
    const api = client({ baseUrl });
    await api.metrics();
    const error = await rejection(api.metrics());
    expect(error.status).toBe(429);
    expect(error.code).toBe('CC_RATE_LIMITED');
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
  });

  it('consumes error bodies, so a one-connection pool never stalls', async () => {
    const { baseUrl } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const api = client({ baseUrl, connections: 1, timeoutMs: 2000 });
    for (let i = 0; i < 20; i++) expect((await rejection(api.metrics())).status).toBe(401);
  });
});

describe('client route methods', () => {
  const now = '2026-11-30T17:30:00Z';

  it('realtimeSession returns exactly the answer\'s session, and a bad topicId still connects', async () => {
    const { baseUrl } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const api = client({ baseUrl, token: TEST_TOKEN });
    const result = await api.realtimeSession('mars', { topicId: 'real-estate', topicName: 'Flat hunt', timezone: 'Europe/London' });
    expect(result).toMatchObject({ persona: 'mars', source: 'service', fallback: null, warnings: [], runId: expect.any(String) });
    const { session } = result;
    expect(Object.keys(session)).toEqual(['type', 'instructions', 'audio', 'tools']);
    expect(session).toMatchObject({ type: 'realtime', audio: { output: { voice: 'ash' } } });
    expect(session.instructions).toContain('(Europe/London, UTC');
    expect(session.instructions).toContain('Topic name given by the caller: Flat hunt');
    expect(session.tools.map((tool) => tool.name)).toEqual(['search', 'query', 'get_page', 'read_article']);
    for (const tool of session.tools) expect(tool.type).toBe('function');
    // The typed context() without ifNoneMatch is the answer itself, no "not modified" to rule out.
    const answer = await api.context('mars', { topicId: 'real-estate', topicName: 'Flat hunt', timezone: 'Europe/London' });
    // (Two calls may straddle a minute, so the clock line may differ: compare the rest.)
    expect(answer.session!.instructions).toBe(joined(answer));
    expect({ ...answer.session!, instructions: '' }).toEqual({ ...session, instructions: '' });
    const unsafe = await api.realtimeSession('venus', { topicId: '../SOUL', now: '2026-11-30T17:05:00Z' });
    expect(unsafe.session!.instructions).toContain('You are Venus');
    expect(unsafe).toMatchObject({ source: 'service', fallback: null, warnings: [expect.stringMatching(/^topic-unsafe: /)] });
  });

  it('covers every route: personas, context with ETag, topic, compile, trace and runs', async () => {
    const { baseUrl } = await listen({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const api = client({ baseUrl, token: TEST_TOKEN });

    expect((await api.personas()).personas.map((persona) => persona.key)).toEqual(['mars', 'venus']);

    // The common calls answer with the compile itself: nothing to narrow.
    const mars = await api.context('mars', { now, topicId: 'real-estate', runId: 'client-run' });
    expect(mars.persona).toBe('mars');
    expect(mars.session!.instructions).toBe(joined(mars));
    expect(mars.etag).toMatch(/^"/);
    const again = await api.contextIfChanged('mars', mars.etag, { now, topicId: 'real-estate', runId: 'client-run' });
    expect(again).toEqual({ notModified: true, etag: mars.etag, runId: 'client-run' });
    const changed = await api.contextIfChanged('mars', '"stale"', { now, topicId: 'real-estate', runId: 'client-run-2' });
    if ('notModified' in changed) throw new Error('expected a fresh compile for a stale ETag');
    expect(joined(changed)).toBe(joined(mars));

    expect(await api.contextText('venus', { now })).toContain('<<cc identity');
    const topic = await api.topic('real-estate');
    expect(topic.topic).toMatchObject({ topicId: 'real-estate', found: true });
    expect(await api.topicIfChanged('real-estate', topic.etag)).toMatchObject({ notModified: true });

    const request = { phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hello', now } as const;
    const compiled = await api.compile(request);
    expect(compiled.worker).toBe('scribe');
    expect(await api.compileIfChanged({ ...request, runId: 'client-turn' }, compiled.etag)).toEqual({ notModified: true, etag: compiled.etag, runId: 'client-turn' });

    const trace = await api.trace('client-run', { verifySources: true });
    expect(trace.events.map((event) => event.outcome)).toEqual(['delivered', 'not-modified']);
    expect(trace.events[0]!.systemPrompt).toBe(mars.systemPrompt);
    const runs = await api.runs({ limit: 10 });
    expect(runs.runs.map((run) => run.runId)).toContain(compiled.runId);
    expect((await api.runs({ worker: 'scribe', status: 304 })).runs.map((run) => run.runId)).toEqual(['client-turn']);
  });

  it('reads a long run a page at a time: trace() one page, tracePages() every page in turn', async () => {
    const { app, baseUrl } = await listen();
    for (let i = 0; i < 45; i++) await app.traces.append(failedEvent('client-long', { request: { n: i } }));
    const api = client({ baseUrl });
    const first = await api.trace('client-long', { limit: 30 });
    expect(first.events).toHaveLength(30);
    expect((await api.trace('client-long', { cursor: first.nextCursor! })).events).toHaveLength(15);
    const sizes: number[] = [];
    const seen: unknown[] = [];
    for await (const page of api.tracePages('client-long')) {
      sizes.push(page.events.length);
      seen.push(...page.events.map((event) => event.request['n']));
    }
    expect(sizes).toEqual([20, 20, 5]);
    expect(seen).toEqual(Array.from({ length: 45 }, (_, i) => i));
  });

  it('passes engine and hud to the persona route: a route key for that engine, and the HUD', async () => {
    const { baseUrl } = await listen();
    const api = client({ baseUrl });
    const plain = await api.context('mars', { now: '2026-11-30T17:20:00Z' });
    const realtime = await api.context('mars', { now: '2026-11-30T17:20:00Z', engine: 'gpt-realtime', hud: true });
    expect(realtime.cache.engine).toBe('gpt-realtime');
    expect(realtime.cache.routeKey).not.toBe(plain.cache.routeKey);
    expect(joined(realtime)).toBe(joined(plain));
    expect(plain.hud).toBeUndefined();
    expect(realtime.hud?.files.map((file) => file.path)).toContain('SOUL.md');
  });

  it('sends a call\'s requestId and traceparent, which the run\'s trace event records', async () => {
    const { baseUrl } = await listen();
    const api = client({ baseUrl });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const mars = await api.context('mars', { now }, { requestId: 'call-17', traceparent });
    const { session } = await api.realtimeSession('venus', { now }, { requestId: 'call-18' });
    const compiled = await api.compile({ phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hello', now }, { requestId: 'turn-9', traceparent });
    const again = await api.compileIfChanged({ phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hello', now, runId: 'client-304' }, compiled.etag, {
      requestId: 'turn-10',
    });
    expect(again).toMatchObject({ notModified: true });
    const recorded = async (runId: string) => {
      const [event] = (await api.trace(runId)).events;
      return { requestId: event!.requestId, traceparent: event!.traceparent };
    };
    expect(await recorded(mars.runId)).toEqual({ requestId: 'call-17', traceparent });
    expect(await recorded(compiled.runId)).toEqual({ requestId: 'turn-9', traceparent });
    expect(await recorded('client-304')).toEqual({ requestId: 'turn-10', traceparent: undefined });
    const venus = (await api.runs({ persona: 'venus' })).runs[0]!;
    expect(await recorded(venus.runId)).toEqual({ requestId: 'call-18', traceparent: undefined });
    expect(session.instructions).toContain('You are Venus');
  });

  it('compile takes { hud: true }, and realtimeSession the whole context() query (now, sanitize, engine)', async () => {
    const { baseUrl } = await listen();
    const api = client({ baseUrl });
    const request = { phase: 'start', surface: 'queued-task', worker: 'courier', task: 'Send the weekly digest', now } as const;
    const plain = await api.compile(request);
    const withHud = await api.compile(request, { hud: true });
    expect(plain.hud).toBeUndefined();
    expect(withHud.hud?.files.map((file) => file.path)).toContain('workers/courier/identity.md');
    expect(withHud.instructions).toBe(plain.instructions);

    const query = { now: '2026-11-30T09:05:00Z', timezone: 'Europe/London', sanitize: 'ascii', engine: 'gpt-realtime' } as const;
    const { session } = await api.realtimeSession('venus', query);
    const answer = await api.context('venus', query);
    expect(session).toEqual(answer.session);
    // Pinned to the request's now, not the time of the call, and ASCII only.
    expect(session.instructions).toContain('09:05');
    expect(session.instructions).toMatch(/^[\x00-\x7f]*$/);
  });

  it('turns an unknown persona and a bad topic id into typed errors', async () => {
    const { baseUrl } = await listen();
    const api = client({ baseUrl });
    expect((await rejection(api.context('jupiter'))).status).toBe(404);
    const unsafe = await rejection(api.topic('../x'));
    expect(unsafe.status).toBe(400);
  });
});

describe('client failures without an answer', () => {
  it('times out against a server that never answers', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const silent: Server = createServer(() => {
      /* never answers */
    });
    silent.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const { port } = silent.address() as AddressInfo;
    const error = await rejection(client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300 }).health());
    expect(error.code).toBe('CC_CLIENT_TIMEOUT');
    expect(error.status).toBe(0);
    // The call's own timeout gave up on it, not a default one.
    expect(error.detail).toBe('no answer within 300 ms');
  });

  it('reports a refused connection as a network error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const error = await rejection(client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 1000 }).health());
    expect(error.code).toBe('CC_CLIENT_NETWORK');
  });
});
