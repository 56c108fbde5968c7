/**
 * The client checks what it is given (issue 32): a 5 MB body passed as a live session, its
 * 5,242,759-char instructions went on to the realtime API with a runId taken from the body,
 * and a fast 100–400 MB body was buffered to about 40 MB before the budget cut it. Now every
 * answer body is capped (`maxBodyBytes`, default 1 MiB: the client stops reading past it),
 * a session must be exactly the provider's shape with instructions neither empty nor over
 * `promptLimitChars`, and the run must be the one asked for; any breach is an
 * `invalid-answer` fallback, never a pass-through. Real listening servers on port 0; budgets
 * generous wherever a test is not about time, so behaviour, not speed, decides.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient, DEFAULT_MAX_BODY_BYTES, type ClientOptions, type FallbackEvent } from '../../packages/client/src/index.js';
import { buildTestApp } from '../helpers/app.js';

const GENEROUS = 60_000;
const NOW = '2026-12-02T17:00:00Z';
type Handler = (request: IncomingMessage, response: ServerResponse) => void;

async function fakeService(handler: Handler): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createServer(handler);
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function watched(baseUrl: string, options: Omit<ClientOptions, 'baseUrl'> = {}) {
  const fallbacks: FallbackEvent[] = [];
  const api = createClient({ timeoutMs: GENEROUS, ...options, baseUrl, realtime: { budgetMs: GENEROUS, ...options.realtime, onFallback: (event) => fallbacks.push(event) } });
  onTestFinished(() => api.close());
  return { api, fallbacks };
}

/** A real persona answer of the example brain, as JSON. */
async function realAnswer(persona: string, query = ''): Promise<Record<string, any>> {
  const { app } = await buildTestApp();
  return (await app.inject({ url: `/context/${persona}?now=${NOW}${query}` })).json();
}

/** Answers `body` with the run the request asked for (or the body's own), as the service would. */
const answering = (body: Record<string, unknown>): Handler => (request, response) => {
  const asked = new URL(request.url!, 'http://x').searchParams.get('runId');
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...body, ...(asked === null ? {} : { runId: asked }) }));
};

/** A 5 MB answer: a real one whose instructions were made 5 MB long. */
async function hugeAnswer() {
  const body = await realAnswer('mars');
  const instructions = body['session'].instructions + 'x'.repeat(5 * 1024 * 1024);
  return JSON.stringify({ ...body, instructions, session: { ...body['session'], instructions } });
}

describe('the byte cap on an answer body', () => {
  it('regression: a 5 MB body in one burst is an invalid answer, never passed on', async () => {
    const huge = await hugeAnswer();
    const { api, fallbacks } = watched(await fakeService((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(huge)));
    const result = await api.realtimeSession('mars', { now: NOW, runId: 'call-1' });
    expect(result).toMatchObject({ source: 'static', fallback: 'invalid-answer', runId: 'call-1' });
    expect(result.session.instructions.length).toBeLessThan(20_000);
    expect(result.warnings[0]).toMatch(/^static-session: invalid-answer \(CC_CLIENT_BAD_RESPONSE: the answer body is over 1048576 bytes; the client stopped reading it\)/);
    expect(fallbacks).toMatchObject([{ reason: 'invalid-answer', source: 'static' }]);
    await expect(api.context('mars')).rejects.toMatchObject({ code: 'CC_CLIENT_BAD_RESPONSE' });
  });

  it('regression: the client stops reading a long body at the cap — the server cannot push 64 MB into it', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let accepted = 0;
    let finished = false;
    const baseUrl = await fakeService((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"runId":"r","session":{"type":"realtime","instructions":"');
      // Written as fast as the client takes it (each write waits for the last to drain), no faster.
      const drip = () => {
        while (accepted < total && !response.destroyed) {
          accepted += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', drip);
        }
        if (!response.destroyed) {
          finished = true;
          response.end('"}}');
        }
      };
      response.on('close', () => response.off('drain', drip));
      drip();
    });
    const { api } = watched(baseUrl);
    const result = await api.realtimeSession('venus', { now: NOW });
    expect(result).toMatchObject({ source: 'static', fallback: 'invalid-answer' });
    expect(result.warnings[0]).toContain('over 1048576 bytes');
    // The socket's buffers take a few MB; the client took no more than its cap of the rest.
    expect(finished).toBe(false);
    expect(accepted).toBeLessThan(16 * 1024 * 1024);
  });

  it('is the client\'s to set (maxBodyBytes), for every call', async () => {
    const body = await realAnswer('venus');
    const size = Buffer.byteLength(JSON.stringify(body));
    expect(size).toBeLessThan(DEFAULT_MAX_BODY_BYTES);
    const baseUrl = await fakeService(answering(body));
    expect(await watched(baseUrl).api.realtimeSession('venus', { now: NOW })).toMatchObject({ source: 'service' });
    const { api } = watched(baseUrl, { maxBodyBytes: 4096 });
    expect(await api.realtimeSession('venus', { now: NOW })).toMatchObject({ source: 'static', fallback: 'invalid-answer' });
    await expect(api.context('venus')).rejects.toMatchObject({ code: 'CC_CLIENT_BAD_RESPONSE', detail: 'the answer body is over 4096 bytes; the client stopped reading it' });
    expect(() => createClient({ baseUrl, maxBodyBytes: 0 })).toThrow(TypeError);
  });
});

describe('the shape of a session, its instructions and its run', () => {
  it('regression: a 200 whose session is not the provider\'s shape, or whose instructions are empty or too long, is an invalid answer', async () => {
    const body = await realAnswer('mars');
    const session = body['session'];
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a session of another type', { ...body, session: { ...session, type: 'conversation' } }, 'the answer holds no valid realtime session'],
      ['tools that are not an array', { ...body, session: { ...session, tools: {} } }, 'the answer holds no valid realtime session'],
      ['no session at all', { ...body, session: undefined }, 'the answer holds no valid realtime session'],
      ['a session with a member more', { ...body, session: { ...session, model: 'gpt-realtime' } }, 'the answer holds no valid realtime session'],
      ['empty instructions', { ...body, session: { ...session, instructions: '' } }, 'the realtime session has no instructions'],
      ['instructions over the prompt budget', { ...body, session: { ...session, instructions: 'x'.repeat(64_001) } }, 'the realtime session has 64001 chars of instructions, over 64000'],
      ['a body that is an array', [body] as unknown as Record<string, unknown>, 'the answer is not a JSON object'],
    ];
    for (const [label, answer, detail] of cases) {
      const { api, fallbacks } = watched(await fakeService((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))));
      const result = await api.realtimeSession('mars', { now: NOW });
      expect(result, label).toMatchObject({ source: 'static', fallback: 'invalid-answer' });
      expect(result.warnings[0], label).toBe(`static-session: invalid-answer (CC_CLIENT_BAD_RESPONSE: ${detail}); mars connected on its static session, without live context`);
      expect(fallbacks, label).toHaveLength(1);
    }
    // The prompt budget is the client's to set.
    const { api } = watched(await fakeService(answering(body)), { realtime: { promptLimitChars: 1000 } });
    expect(await api.realtimeSession('mars', { now: NOW })).toMatchObject({ fallback: 'invalid-answer' });
    expect(() => createClient({ baseUrl: 'http://127.0.0.1:9', realtime: { promptLimitChars: 0 } })).toThrow(TypeError);
  });

  it('a Gemini setup is held to its own shape', async () => {
    const body = await realAnswer('venus', '&provider=gemini');
    const { setup } = body;
    for (const answer of [{ ...body, setup: { ...setup, tools: {} } }, { ...body, setup: { ...setup, systemInstruction: { parts: [{ text: '' }] } } }]) {
      const { api } = watched(await fakeService(answering(answer)));
      expect(await api.geminiSetup('venus', { now: NOW })).toMatchObject({ source: 'static', fallback: 'invalid-answer' });
    }
    const { api } = watched(await fakeService(answering(body)));
    expect(await api.geminiSetup('venus', { now: NOW })).toMatchObject({ source: 'service' });
  });

  it('regression: the run must be the one asked for, when one was asked', async () => {
    const body = await realAnswer('venus');
    const other = watched(await fakeService((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...body, runId: 'someone-else' }))));
    const result = await other.api.realtimeSession('venus', { now: NOW, runId: 'call-7' });
    // The call keeps the run it asked for: its first refresh after recovery opens it.
    expect(result).toMatchObject({ source: 'static', fallback: 'invalid-answer', runId: 'call-7' });
    expect(result.warnings[0]).toContain('the answer is run "someone-else", not the run asked for');
    // Without a run asked, the client asks with one it made for the call, so another run is never taken;
    // nor is a run id that is not an id.
    const unasked = await other.api.realtimeSession('venus', { now: NOW });
    expect(unasked).toMatchObject({ source: 'static', fallback: 'invalid-answer', runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(unasked.warnings[0]).toContain('the answer is run "someone-else", not the run asked for');
    const unsafe = watched(await fakeService((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...body, runId: '../../etc' }))));
    expect(await unsafe.api.realtimeSession('venus', { now: NOW })).toMatchObject({ source: 'static', fallback: 'invalid-answer' });
    // The asked run, answered: the service's session.
    const same = watched(await fakeService(answering(body)));
    expect(await same.api.realtimeSession('venus', { now: NOW, runId: 'call-8' })).toMatchObject({ source: 'service', runId: 'call-8' });
  });
});
