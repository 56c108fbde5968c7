/**
 * Mid-call refresh that reaches the model (issue 33), through examples/voice-server.ts itself
 * against local mocks of the providers' wire protocols on loopback:
 * - OpenAI over WebRTC: the calls endpoint answers with the call's `Location`; the example
 *   opens the sideband WebSocket (`/v1/realtime?call_id=`) and sends each refresh event there,
 *   exactly as the service answered it (its trace's digest of the text);
 * - a call that connected on its static session while the service was down catches up on its
 *   first operator turn after the service recovers, through the same sideband;
 * - Gemini 3.1 Live: the example connects through `@google/genai` (no deprecation warning);
 *   a refresh is a reconnect carrying the call's resumption handle and the whole new setup,
 *   and nothing is sent as client content (the mock closes with 1007 as 3.1 does).
 */
import { createHash } from 'node:crypto';
import { appendFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { OpenAIContextEventSchema } from '../../schemas/refresh.js';
import { buildTestApp, copyExampleBrain, type TestApp } from '../helpers/app.js';

const TODAY = '# 2026-11-30\n\n- Woke early and felt calm about the week.\n';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** OpenAI's realtime endpoint: the calls endpoint (answering a Location) and the sideband WebSocket, recording what each call's sideband receives. */
function openaiMock() {
  let calls = 0;
  const sidebands = new Map<string, unknown[]>();
  const raw = new Map<string, string[]>();
  const server = createServer((request, response) => {
    request.resume();
    if (request.method !== 'POST' || request.url !== '/v1/realtime/calls' || request.headers.authorization !== 'Bearer test-key') return void response.writeHead(400).end();
    const id = `rtc_test${++calls}`;
    response.writeHead(201, { 'content-type': 'application/sdp', location: `/v1/realtime/calls/${id}` }).end('v=0 test answer');
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://realtime.test');
    const callId = url.searchParams.get('call_id') ?? '';
    if (url.pathname !== '/v1/realtime' || !/^rtc_test[0-9]+$/.test(callId) || request.headers.authorization !== 'Bearer test-key') return void socket.destroy();
    wss.handleUpgrade(request, socket, head, (ws) => {
      sidebands.set(callId, []);
      raw.set(callId, []);
      ws.on('message', (data) => {
        raw.get(callId)!.push(String(data));
        sidebands.get(callId)!.push(JSON.parse(String(data)));
      });
    });
  });
  return { server, wss, sidebands, raw };
}

/** Gemini Live's BidiGenerateContent endpoint, as a 3.1 model behaves: setup, then resumption handles; client content mid-session closes with 1007. */
function geminiMock() {
  const connections: Array<{ setup: Record<string, unknown> | null; messages: unknown[]; closed: number | null }> = [];
  const server = createServer((_request, response) => response.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(`http://live.test${request.url ?? '/'}`);
    // The SDK joins its base URL and path with a slash of its own: //ws/… here.
    if (!/^\/+ws\/google\.ai\.generativelanguage\.v1[a-z0-9]*\.GenerativeService\.BidiGenerateContent$/.test(url.pathname) || url.searchParams.get('key') !== 'test-gemini-key') return void socket.destroy();
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  });
  wss.on('connection', (ws: WebSocket) => {
    const connection = { setup: null as Record<string, unknown> | null, messages: [] as unknown[], closed: null as number | null };
    connections.push(connection);
    ws.on('close', (code) => (connection.closed = code));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as Record<string, unknown>;
      connection.messages.push(message);
      if ('setup' in message && connection.setup === null) {
        connection.setup = message['setup'] as Record<string, unknown>;
        ws.send(JSON.stringify({ setupComplete: {} }));
        ws.send(JSON.stringify({ sessionResumptionUpdate: { newHandle: `handle-${connections.length}`, resumable: true } }));
      } else if ('clientContent' in message) {
        ws.close(1007, 'Request contains an invalid argument.');
      }
    });
  });
  return { server, wss, connections };
}

describe('examples/voice-server.ts refreshes reach the model', () => {
  const openai = openaiMock();
  const gemini = geminiMock();
  let brainRoot = '';
  let servicePort = 0;
  let service: TestApp | null = null;
  let example: typeof import('../../examples/voice-server.js');

  const stopService = async () => {
    await service?.app.close();
    service = null;
  };
  /** The service on a fresh copy of the example brain (a test's temporary files go when it ends). */
  const startService = async () => {
    await stopService();
    brainRoot = await copyExampleBrain();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), TODAY);
    service = await buildTestApp({ BRAIN_ROOT: brainRoot });
    await service.app.listen({ port: servicePort, host: '127.0.0.1' });
    // Warm, as a ready service is: a cold first compile on a loaded test machine may outlast the connect's budget.
    for (const url of ['/context/mars', '/context/mars?provider=gemini']) expect((await service.app.inject(url)).statusCode).toBe(200);
  };
  const refreshEvents = async (runId: string) => (await service!.app.inject(`/runs/${encodeURIComponent(runId)}/trace`)).json().events as Array<Record<string, any>>;

  beforeAll(async () => {
    const openaiPort = await listen(openai.server);
    const geminiPort = await listen(gemini.server);
    servicePort = await freePort();
    Object.assign(process.env, {
      CONTEXT_COMPILER_URL: `http://127.0.0.1:${servicePort}`,
      OPENAI_API_KEY: 'test-key',
      REALTIME_CALLS_URL: `http://127.0.0.1:${openaiPort}/v1/realtime/calls`,
      REALTIME_SIDEBAND_URL: `ws://127.0.0.1:${openaiPort}/v1/realtime`,
      GEMINI_API_KEY: 'test-gemini-key',
      GEMINI_BASE_URL: `http://127.0.0.1:${geminiPort}`,
    });
    example = await import('../../examples/voice-server.js');
  });

  afterAll(async () => {
    await stopService();
    for (const server of [openai, gemini]) {
      for (const client of server.wss.clients) client.terminate();
      server.wss.close();
      await new Promise((resolve) => server.server.close(resolve));
    }
  });

  it('OpenAI WebRTC: the call id from Location, the sideband opened with it, each refresh event sent there exactly as answered', async () => {
    await startService();
    expect(await example.connect('v=0 test offer', 'mars', undefined, 'call-a')).toBe('v=0 test answer');
    await vi.waitFor(() => expect(openai.sidebands.get('rtc_test1')).toEqual([]));
    await example.onOperatorTurn('call-a'); // nothing changed: a 304, nothing sent
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '- Felt a quiet joy at the harbour lighthouse.\n');
    await example.onOperatorTurn('call-a');
    await example.onOperatorTurn('call-a'); // the same change again: a 304 to its ETag, nothing sent twice
    await vi.waitFor(() => expect(openai.sidebands.get('rtc_test1')).toHaveLength(1));
    const [event] = openai.sidebands.get('rtc_test1')!;
    const sent = OpenAIContextEventSchema.parse(event);
    expect(sent.item.content[0]!.text).toContain('harbour lighthouse');
    const traced = (await refreshEvents('call-a:refresh')).map((entry) => [entry.status, entry.refresh.delivery, entry.refresh.textSha256]);
    expect(traced).toEqual([
      [304, 'conversation-item', null],
      [200, 'conversation-item', sha256(sent.item.content[0]!.text)],
      [304, 'conversation-item', expect.any(String)],
    ]);
    expect(openai.raw.get('rtc_test1')).toEqual([JSON.stringify(sent)]);
    await example.hangUp('call-a');
  });

  it('a call that connected on a fallback during an outage gets its live context on the first operator turn after recovery, in its own run', async () => {
    await stopService();
    expect(await example.connect('v=0 test offer', 'mars', undefined, 'call-b')).toBe('v=0 test answer');
    await vi.waitFor(() => expect(openai.sidebands.get('rtc_test2')).toEqual([]));
    await example.onOperatorTurn('call-b'); // still down: nothing sent, the call goes on
    expect(openai.sidebands.get('rtc_test2')).toEqual([]);
    await startService();
    await example.onOperatorTurn('call-b');
    await vi.waitFor(() => expect(openai.sidebands.get('rtc_test2')).toHaveLength(1));
    const sent = OpenAIContextEventSchema.parse(openai.sidebands.get('rtc_test2')![0]);
    expect(sent.item.content[0]!.text).toContain('Woke early and felt calm about the week.');
    const [opened] = await refreshEvents('call-b');
    // The client connected call-b on call-a's session (stale): the restarted service holds no trace of call-a, so it
    // delivers the whole live context, as to a static session.
    expect(opened).toMatchObject({ runId: 'call-b', route: 'GET /context/mars/refresh', status: 200, request: { baseline: 'stale', baselineRunId: 'call-a' } });
    expect(opened!.warnings).toContainEqual(expect.stringMatching(/^refresh-baseline-missing: no connect of mars in run call-a/));
    expect(opened!.refresh.textSha256).toBe(sha256(sent.item.content[0]!.text));
    await example.hangUp('call-b');
  });

  it('Gemini 3.1 Live: connects through the SDK with no deprecation warning; a refresh reconnects with the call’s handle and the whole new setup, never client content', async () => {
    await startService();
    const warn = vi.spyOn(console, 'warn');
    await example.connectGemini('mars', undefined, 'call-g');
    expect(warn).not.toHaveBeenCalled();
    expect(gemini.connections).toHaveLength(1);
    const first = gemini.connections[0]!;
    // The flat config is the same wire message as the service's raw setup, with the model.
    const served = (await service!.app.inject(`/runs/call-g/trace`)).json().events[0];
    expect(served).toMatchObject({ route: 'GET /context/mars', request: { model: 'gemini-3.1-flash-live-preview', provider: 'gemini' } });
    const setup = first.setup!;
    expect(setup['model']).toBe('models/gemini-3.1-flash-live-preview');
    expect(setup['generationConfig']).toMatchObject({ responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Orus' } } } });
    expect(setup['sessionResumption']).toEqual({});
    const instructionsBefore = (setup['systemInstruction'] as { parts: Array<{ text: string }> }).parts[0]!.text;
    expect(instructionsBefore).not.toContain('harbour pilot praised');

    await example.onGeminiOperatorTurn('call-g'); // nothing changed
    expect(gemini.connections).toHaveLength(1);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '- Felt proud when the harbour pilot praised the regatta plan.\n');
    await example.onGeminiOperatorTurn('call-g');
    expect(gemini.connections).toHaveLength(2);
    const second = gemini.connections[1]!.setup!;
    expect(second['sessionResumption']).toEqual({ handle: 'handle-1' });
    expect((second['systemInstruction'] as { parts: Array<{ text: string }> }).parts[0]!.text).toContain('harbour pilot praised');
    expect(second['tools']).toEqual(setup['tools']);
    await vi.waitFor(() => expect(first.closed).not.toBeNull()); // the old session, closed by the example once the new one is set up
    expect(gemini.connections.flatMap((connection) => connection.messages).filter((message) => 'clientContent' in (message as object))).toEqual([]);
    // The reconnect is one more traced compile of the call's run, naming it as its parent.
    const traced = (await refreshEvents('call-g:refresh')).map((event) => [event.status, event.parentRunId, event.refresh.delivery, event.refresh.provider]);
    expect(traced).toEqual([
      [304, 'call-g', 'reconnect', 'gemini'],
      [200, 'call-g', 'reconnect', 'gemini'],
    ]);
    expect(warn).not.toHaveBeenCalled();
    example.hangUpGemini('call-g');
  });
});
