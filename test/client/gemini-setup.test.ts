/**
 * `geminiSetup()` is `realtimeSession()`'s twin for Gemini Live (issue 24): the same budget,
 * fallbacks, `onFallback`, warnings and `defaultPersona`, through the same `connectSession`,
 * with a setup in the shape `GeminiSetupSchema` describes. Real listening servers on port 0.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ContextCompilerError, createClient, type FallbackEvent } from '../../packages/client/src/index.js';
import { isGeminiSetup } from '../../packages/client/src/realtime.js';
import { GeminiSetupSchema } from '../../schemas/gemini.js';
import { buildTestApp } from '../helpers/app.js';
import { downService } from '../helpers/ports.js';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

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

async function service(): Promise<string> {
  const { app } = await buildTestApp();
  return app.listen({ port: 0, host: '127.0.0.1' });
}

function watched(baseUrl: string, realtime: { budgetMs?: number } = {}) {
  const fallbacks: FallbackEvent[] = [];
  const api = createClient({ baseUrl, timeoutMs: 60_000, realtime: { ...realtime, onFallback: (event) => fallbacks.push(event) } });
  onTestFinished(() => api.close());
  return { api, fallbacks };
}

const json = (status: number, body: unknown): Handler => (_request, response) => {
  response.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json' });
  response.end(JSON.stringify(body));
};

/** Sendable: exactly what the service's schema describes, nothing more. */
function expectSendable(setup: unknown): void {
  expect(GeminiSetupSchema.parse(setup)).toEqual(setup);
  expect(Object.keys(setup as object)).toEqual(['generationConfig', 'systemInstruction', 'tools']);
}

describe('geminiSetup() with the service healthy', () => {
  it("returns the service's setup for provider=gemini, its run and warnings, and tells no one", async () => {
    const { api, fallbacks } = watched(await service(), { budgetMs: 60_000 });
    const result = await api.geminiSetup('mars', { topicId: 'no-such-topic', now: '2026-11-30T17:05:00Z', model: 'gemini-3.1-flash-live-preview' });
    expect(result).toMatchObject({ persona: 'mars', source: 'service', fallback: null, runId: expect.any(String) });
    expect(result).not.toHaveProperty('session');
    expectSendable(result.setup);
    expect(result.setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).toBe('Orus');
    expect(result.warnings).toEqual(['topic-missing: topics/no-such-topic.md does not exist; compiled without a topic']);
    expect(fallbacks).toEqual([]);
    const [event] = (await api.trace(result.runId!)).events;
    expect(event!.request).toMatchObject({ provider: 'gemini', model: 'gemini-3.1-flash-live-preview', delivery: 'reconnect' });
    // Without a model, the call's refreshes get the conservative delivery, and the connect says so.
    const unnamed = await api.geminiSetup('mars', { now: '2026-11-30T17:05:00Z' });
    expect(unnamed.warnings).toEqual([expect.stringMatching(/^delivery-model-unknown: no model was named/)]);
  });
});

describe('geminiSetup() when the service cannot answer: the static setup, told, never thrown', () => {
  const cases: Array<[string, () => Promise<string>, string]> = [
    ['down', downService, 'network'],
    ['answering 503', () => fakeService(json(503, { status: 503, code: 'CC_OVERLOADED', detail: 'busy' })), 'server-error'],
    // An OpenAI answer (a service that ignored provider=gemini) holds no setup.
    ['answering a session instead of a setup', () => fakeService(json(200, { runId: 'r', session: { type: 'realtime', instructions: 'x', audio: { output: { voice: 'ash' } }, tools: [] } })), 'invalid-answer'],
    ['answering 401', () => fakeService(json(401, { status: 401, code: 'CC_UNAUTHORIZED', detail: 'token' })), 'refused'],
  ];

  it.each(cases)('%s: the static setup, onFallback told once, a warning saying why', async (_label, start, reason) => {
    const { api, fallbacks } = watched(await start());
    const result = await api.geminiSetup('venus', { now: '2026-11-30T17:05:00Z', timezone: 'Europe/London' });
    expect(result).toMatchObject({ persona: 'venus', source: 'static', fallback: reason, runId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expectSendable(result.setup);
    expect(result.setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).toBe('Aoede');
    expect(result.setup.systemInstruction.parts[0]!.text.endsWith('Current date and time: Monday 30 November 2026, 17:05 (Europe/London, UTC+00:00)')).toBe(true);
    expect(result.warnings).toEqual([expect.stringMatching(new RegExp(`^static-session: ${reason} \\(.*\\); venus connected on its static session, without live context$`))]);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatchObject({ persona: 'venus', servedAs: 'venus', source: 'static', reason, error: expect.any(ContextCompilerError) });
  });

  it('hung: the static setup once the budget is spent', async () => {
    const { api } = watched(await fakeService(() => undefined), { budgetMs: 200 });
    const result = await api.geminiSetup('mars');
    expect(result).toMatchObject({ source: 'static', fallback: 'timeout' });
    expect(result.warnings[0]).toContain('no answer within 200 ms');
    expectSendable(result.setup);
  });

  it('an unknown persona connects as defaultPersona (venus), from the service when it answers', async () => {
    const { api, fallbacks } = watched(await service(), { budgetMs: 60_000 });
    const result = await api.geminiSetup('jupiter', { now: '2026-11-30T17:05:00Z' });
    expect(result).toMatchObject({ persona: 'venus', source: 'service', fallback: 'unknown-persona' });
    expectSendable(result.setup);
    expect(result.setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).toBe('Aoede');
    expect(fallbacks.map((event) => [event.persona, event.servedAs, event.source])).toEqual([['jupiter', 'venus', 'service']]);
  });

  it('with fallback: false, throws as context() would', async () => {
    const { api } = watched(await downService());
    await expect(api.geminiSetup('mars', {}, { fallback: false })).rejects.toBeInstanceOf(ContextCompilerError);
  });
});

describe('isGeminiSetup', () => {
  it('takes exactly the setup shape: a member more or less, or a second system part, is refused', async () => {
    const { api } = watched(await downService());
    const { setup } = await api.geminiSetup('mars');
    expect(isGeminiSetup(setup)).toBe(true);
    expect(isGeminiSetup({ ...setup, model: 'models/x' })).toBe(false);
    expect(isGeminiSetup({ ...setup, systemInstruction: { parts: [{ text: 'a' }, { text: 'b' }] } })).toBe(false);
    expect(isGeminiSetup({ ...setup, generationConfig: { ...setup.generationConfig, responseModalities: ['TEXT'] } })).toBe(false);
    expect(isGeminiSetup({ generationConfig: setup.generationConfig, systemInstruction: setup.systemInstruction })).toBe(false);
  });
});
