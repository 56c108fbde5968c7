/**
 * `realtimeSession()` never loses a call (issue 22): within its budget it is the
 * service's session, and when the service is down, hung, failing, answering junk or refusing,
 * it is the persona's static session — told through `onFallback` and `warnings`, never by a
 * throw unless the caller asks for `fallback: false`. Real listening servers on port 0.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ContextCompilerError, createClient, type FallbackEvent } from '../../packages/client/src/index.js';
import { isRealtimeSession } from '../../packages/client/src/realtime.js';
import { RealtimeSessionSchema } from '../../schemas/compiled.js';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';
import { downService } from '../helpers/ports.js';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A plain HTTP server on port 0 that answers with `handler`; every socket is destroyed after the test. */
async function fakeService(handler: Handler): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(handler);
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A budget no answer of a healthy service on a loaded machine comes near: where a test is not about the budget, behaviour decides it. */
const GENEROUS = { budgetMs: 60_000 };

async function service(env: Record<string, string> = {}): Promise<string> {
  const { app } = await buildTestApp(env);
  return app.listen({ port: 0, host: '127.0.0.1' });
}

function client(options: Parameters<typeof createClient>[0]) {
  const instance = createClient(options);
  onTestFinished(() => instance.close());
  return instance;
}

/** A client whose fallbacks are collected. */
function watched(baseUrl: string, options: Omit<Parameters<typeof createClient>[0], 'baseUrl'> = {}) {
  const fallbacks: FallbackEvent[] = [];
  const api = client({ ...options, baseUrl, realtime: { ...options.realtime, onFallback: (event) => fallbacks.push(event) } });
  return { api, fallbacks };
}

const problem = (status: number, code: string, extra: Record<string, unknown> = {}): Handler => (_request, response) => {
  response.writeHead(status, { 'content-type': 'application/problem+json', ...(status === 503 ? { 'retry-after': '1' } : {}) });
  response.end(JSON.stringify({ type: 'about:blank', title: 'x', status, detail: `${code} detail`, code, ...extra }));
};

/** The session is sendable: exactly what the service's schema describes, nothing more. */
function expectSendable(session: unknown): void {
  expect(RealtimeSessionSchema.strict().parse(session)).toEqual(session);
  expect(Object.keys(session as object)).toEqual(['type', 'instructions', 'audio', 'tools']);
}

describe('realtimeSession() with the service healthy', () => {
  it('returns the service\'s session, its run and its warnings, and tells no one of a fallback', async () => {
    const { api, fallbacks } = watched(await service(), { timeoutMs: GENEROUS.budgetMs, realtime: GENEROUS });
    const result = await api.realtimeSession('venus', { topicId: 'no-such-topic', now: '2026-11-30T17:05:00Z' }, { requestId: 'call-1' });
    expect(result).toMatchObject({ persona: 'venus', source: 'service', fallback: null, runId: expect.any(String) });
    expect(result.warnings).toEqual(['topic-missing: topics/no-such-topic.md does not exist; compiled without a topic']);
    expectSendable(result.session);
    expect(result.session.instructions).toMatch(/^[\x00-\x7f]*$/);
    expect(fallbacks).toEqual([]);
    expect((await api.trace(result.runId!)).events[0]!.requestId).toBe('call-1');
  });
});

describe('a connect asks for the lean answer', () => {
  it('realtimeSession() and geminiSetup() send view=session once each (not the full answer), and a hud is not sent', async () => {
    const { app } = await buildTestApp();
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    // What reached the service: the path and query of each request, through a proxy in front of it.
    const asked: string[] = [];
    const proxy = await fakeService((request, response) => {
      asked.push(request.url!);
      void fetch(`${baseUrl}${request.url!}`, { headers: { 'x-request-id': 'proxied' } }).then(async (answer) => {
        response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
      });
    });
    const { api, fallbacks } = watched(proxy, { timeoutMs: GENEROUS.budgetMs, realtime: GENEROUS });
    const session = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z', ...({ hud: true } as object) });
    const setup = await api.geminiSetup('venus', { now: '2026-11-30T17:05:00Z' });
    expect([session.source, setup.source, fallbacks]).toEqual(['service', 'service', []]);
    expectSendable(session.session);
    expect(asked.map((url) => new URL(url, 'http://x').searchParams.get('view'))).toEqual(['session', 'session']);
    expect(asked.some((url) => new URL(url, 'http://x').searchParams.has('hud'))).toBe(false);
    expect(new URL(asked[1]!, 'http://x').searchParams.get('provider')).toBe('gemini');
    // The service traced each connect as the lean view.
    for (const runId of [session.runId!, setup.runId!]) expect((await app.inject(`/runs/${runId}/trace`)).json().events[0].request.view).toBe('session');
  });
});

describe('realtimeSession() when the service cannot answer: the static session, told, never thrown', () => {
  const cases: Array<[string, () => Promise<string>, string, string]> = [
    ['down', downService, 'network', 'CC_CLIENT_NETWORK'],
    ['answering 503', () => fakeService(problem(503, 'CC_TRACE_UNAVAILABLE')), 'server-error', 'CC_TRACE_UNAVAILABLE'],
    ['answering 500 without a problem', () => fakeService((_request, response) => response.writeHead(500).end('oops')), 'server-error', 'HTTP_500'],
    ['answering HTML with 200', () => fakeService((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>')), 'invalid-answer', 'CC_CLIENT_BAD_RESPONSE'],
    ['answering JSON without a session', () => fakeService((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"runId":"r"}')), 'invalid-answer', 'CC_CLIENT_BAD_RESPONSE'],
    ['answering 401', () => fakeService(problem(401, 'CC_UNAUTHORIZED')), 'refused', 'CC_UNAUTHORIZED'],
    ['answering 429', () => fakeService(problem(429, 'CC_RATE_LIMITED')), 'refused', 'CC_RATE_LIMITED'],
  ];

  it.each(cases)('%s: a static session, onFallback told once, a warning saying why', async (_label, start, reason, code) => {
    const { api, fallbacks } = watched(await start());
    const result = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z', timezone: 'Europe/London' });
    expect(result).toMatchObject({ persona: 'mars', source: 'static', fallback: reason, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expectSendable(result.session);
    expect(result.session.audio.output.voice).toBe('ash');
    expect(result.session.instructions).toMatch(/^<<cc identity \| trusted-directive \| builtin:mars\/identity>>\nYou are Mars/);
    expect(result.session.instructions.endsWith('Current date and time: Monday 30 November 2026, 17:05 (Europe/London, UTC+00:00)')).toBe(true);
    expect(result.warnings).toEqual([expect.stringMatching(new RegExp(`^static-session: ${reason} \\(${code}: .*\\); mars connected on its static session, without live context$`))]);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatchObject({ persona: 'mars', servedAs: 'mars', source: 'static', reason, error: expect.any(ContextCompilerError) });
    expect(fallbacks[0]!.error.code).toBe(code);
  });

  it('hung (accepting connections, never answering): the static session once the budget is spent', async () => {
    const hung = await fakeService(() => undefined);
    const { api, fallbacks } = watched(hung, { realtime: { budgetMs: 300 } });
    const result = await api.realtimeSession('venus');
    expect(result).toMatchObject({ source: 'static', fallback: 'timeout', persona: 'venus' });
    expect(result.warnings[0]).toContain('CC_CLIENT_TIMEOUT: no answer within 300 ms');
    expectSendable(result.session);
    expect(fallbacks.map((event) => event.reason)).toEqual(['timeout']);
    // The per-call budget overrides the client's.
    const quick = await api.realtimeSession('venus', {}, { budgetMs: 50 });
    expect(quick.warnings[0]).toContain('no answer within 50 ms');
  });

  it('a closed client still connects the call, on the static session', async () => {
    const api = createClient({ baseUrl: await service() });
    await api.close();
    const result = await api.realtimeSession('mars');
    expect(result).toMatchObject({ source: 'static', fallback: 'network' });
  });

  it('without a timezone the clock line is in fallbackTimezone (default UTC); without now, at the minute of the call', async () => {
    const down = await downService();
    const utc = await client({ baseUrl: down }).realtimeSession('venus');
    expect(utc.session.instructions).toMatch(/\nCurrent date and time: \w+ \d{1,2} \w+ \d{4}, \d{2}:\d{2} \(UTC, UTC\+00:00\)$/);
    const minute = (date: Date) => `${String(date.getUTCHours()).padStart(2, '0')}:${String(date.getUTCMinutes()).padStart(2, '0')}`;
    const around = [minute(new Date(Date.now() - 60_000)), minute(new Date())];
    expect(around.some((time) => utc.session.instructions.includes(`, ${time} (UTC`))).toBe(true);
    const kolkata = await client({ baseUrl: down, realtime: { fallbackTimezone: 'Asia/Kolkata' } }).realtimeSession('venus', { now: '2026-11-30T17:05:00Z' });
    expect(kolkata.session.instructions.endsWith('Monday 30 November 2026, 22:35 (Asia/Kolkata, UTC+05:30)')).toBe(true);
    // A query zone the service would refuse is not used for the clock.
    const bad = await client({ baseUrl: down }).realtimeSession('venus', { now: '2026-11-30T17:05:00Z', timezone: 'Mars/Olympus' });
    expect(bad.session.instructions.endsWith('17:05 (UTC, UTC+00:00)')).toBe(true);
  });

  it('hands out a fresh session each time: a caller that changes one changes no later one', async () => {
    const api = client({ baseUrl: await downService() });
    const first = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z' });
    first.session.tools[0]!.name = 'changed';
    (first.session.tools[0]!.parameters as { type: string }).type = 'changed';
    const second = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z' });
    expect(second.session.tools[0]).toMatchObject({ name: 'search', parameters: { type: 'object' } });
  });

  it('an onFallback that throws or rejects never reaches the call', async () => {
    const down = await downService();
    const throwing = client({ baseUrl: down, realtime: { onFallback: () => { throw new Error('logger down'); } } });
    const result = await throwing.realtimeSession('mars');
    expect(result.source).toBe('static');
    expect(result.warnings.at(-1)).toBe('onFallback threw; ignored');
    const rejecting = client({ baseUrl: down, realtime: { onFallback: async () => Promise.reject(new Error('metrics down')) } });
    expect((await rejecting.realtimeSession('mars')).source).toBe('static');
  });
});

describe('realtimeSession() for a persona the service does not know', () => {
  it('connects as defaultPersona (venus) from the service, with a warning and onFallback, for an unknown slug and a non-slug alike', async () => {
    const { api, fallbacks } = watched(await service(), { timeoutMs: GENEROUS.budgetMs, realtime: GENEROUS });
    for (const persona of ['jupiter', 'Mars', '../SOUL']) {
      const result = await api.realtimeSession(persona);
      expect(result, persona).toMatchObject({ persona: 'venus', source: 'service', fallback: 'unknown-persona', runId: expect.any(String) });
      expect(result.warnings).toContain(`unknown-persona: the service has no persona "${persona}"; connected as venus`);
      expect(result.session.instructions).toContain('You are Venus');
    }
    expect(fallbacks.map(({ persona, servedAs, source, reason }) => [persona, servedAs, source, reason])).toEqual([
      ['jupiter', 'venus', 'service', 'unknown-persona'],
      ['Mars', 'venus', 'service', 'unknown-persona'],
      ['../SOUL', 'venus', 'service', 'unknown-persona'],
    ]);
    // The default persona is the caller's to choose.
    const asMars = await api.realtimeSession('jupiter', {}, { defaultPersona: 'mars' });
    expect(asMars).toMatchObject({ persona: 'mars', source: 'service', fallback: 'unknown-persona' });
  });

  it('falls back to the default persona\'s static session when that fails too, or when the service is down', async () => {
    const notFound = await fakeService(problem(404, 'CC_NOT_FOUND', { personas: ['mars', 'venus'] }));
    const { api, fallbacks } = watched(notFound);
    const result = await api.realtimeSession('jupiter');
    expect(result).toMatchObject({ persona: 'venus', source: 'static', fallback: 'unknown-persona' });
    expect(fallbacks).toMatchObject([{ persona: 'jupiter', servedAs: 'venus', source: 'static', reason: 'unknown-persona' }]);
    const down = await client({ baseUrl: await downService() }).realtimeSession('jupiter');
    expect(down).toMatchObject({ persona: 'venus', source: 'static', fallback: 'network' });
    expect(down.warnings[0]).toBe('unknown-persona: the client has no static session for "jupiter"; connected as venus');
  });

  it('a 404 that is not the service\'s (a proxy\'s page) is a refusal, not an unknown persona', async () => {
    const proxy = await fakeService((_request, response) => response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'));
    const result = await client({ baseUrl: proxy }).realtimeSession('mars');
    expect(result).toMatchObject({ persona: 'mars', source: 'static', fallback: 'refused' });
  });
});

describe('realtimeSession() with fallback: false, and the other calls', () => {
  it('throws the typed error context() would, within the budget', async () => {
    const { api, fallbacks } = watched(await downService());
    const down = await api.realtimeSession('mars', {}, { fallback: false }).catch((error: unknown) => error);
    expect(down).toBeInstanceOf(ContextCompilerError);
    expect((down as ContextCompilerError).code).toBe('CC_CLIENT_NETWORK');
    const strict = client({ baseUrl: await service(), timeoutMs: GENEROUS.budgetMs, realtime: { ...GENEROUS, fallback: false } });
    const unknown = await strict.realtimeSession('jupiter').catch((error: unknown) => error);
    expect(unknown).toMatchObject({ status: 404, code: 'CC_NOT_FOUND' });
    const hung = client({ baseUrl: await fakeService(() => undefined), realtime: { fallback: false, budgetMs: 100 } });
    expect(await hung.realtimeSession('mars').catch((error: unknown) => error)).toMatchObject({ code: 'CC_CLIENT_TIMEOUT', detail: 'no answer within 100 ms' });
    expect(fallbacks).toEqual([]);
  });

  it('context() and compile() keep throwing typed errors', async () => {
    const api = client({ baseUrl: await downService() });
    expect(await api.context('mars').catch((error: unknown) => error)).toMatchObject({ code: 'CC_CLIENT_NETWORK' });
    const request = { phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hello' } as const;
    expect(await api.compile(request).catch((error: unknown) => error)).toBeInstanceOf(ContextCompilerError);
    const refusing = client({ baseUrl: await service({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN }) });
    expect(await refusing.context('mars').catch((error: unknown) => error)).toMatchObject({ status: 401, code: 'CC_UNAUTHORIZED' });
  });

  it('refuses bad realtime options at createClient and per call (a programming error, not a fallback)', () => {
    const baseUrl = 'http://127.0.0.1:9';
    expect(() => createClient({ baseUrl, realtime: { budgetMs: 0 } })).toThrow(TypeError);
    expect(() => createClient({ baseUrl, realtime: { budgetMs: Number.NaN } })).toThrow(TypeError);
    expect(() => createClient({ baseUrl, realtime: { defaultPersona: 'jupiter' as 'venus' } })).toThrow(/defaultPersona must be one of mars, venus/);
    expect(() => createClient({ baseUrl, realtime: { fallbackTimezone: 'Mars/Olympus' } })).toThrow(TypeError);
    const api = client({ baseUrl });
    expect(() => api.realtimeSession('mars', {}, { budgetMs: -1 })).toThrow(TypeError);
  });
});

describe('the client\'s session check', () => {
  it('accepts exactly what RealtimeSessionSchema accepts, on served sessions and their mutations', async () => {
    const api = client({ baseUrl: await service() });
    const { session } = await api.context('mars');
    const mutations: Array<(value: any) => void> = [
      () => undefined,
      (value) => (value.extra = 1),
      (value) => (value.type = 'session'),
      (value) => delete value.instructions,
      (value) => (value.instructions = 1),
      (value) => (value.audio.output.voice = null),
      (value) => (value.audio.output.speed = 1),
      (value) => (value.audio.input = {}),
      (value) => (value.tools = {}),
      (value) => (value.tools[0].type = 'mcp'),
      (value) => (value.tools[0].name = 'has space'),
      (value) => (value.tools[0].extra = true),
      (value) => (value.tools[0].parameters = []),
      (value) => delete value.tools[0].description,
      (value) => (value.tools = []),
      (value) => (value.model = 'gpt-realtime-2'),
    ];
    fc.assert(
      fc.property(fc.subarray(mutations), (chosen) => {
        const value = structuredClone(session);
        for (const mutate of chosen) {
          try {
            mutate(value);
          } catch {
            // A mutation that no longer applies (the tools are gone): the value stays as it is.
          }
        }
        expect(isRealtimeSession(value)).toBe(RealtimeSessionSchema.safeParse(value).success);
      }),
    );
    for (const value of [null, [], 'realtime', 1]) expect(isRealtimeSession(value)).toBe(false);
  });
});
