import { randomUUID } from 'node:crypto';
import { createClient, liveConfig, type FallbackEvent, type GeminiSetup } from '@context-compiler/client';
import { GoogleGenAI, Modality, Type, type LiveServerMessage, type Session } from '@google/genai';
import type { RealtimeClientEvent } from 'openai/resources/realtime/realtime';
import WebSocket from 'ws';

const logFallback = ({ persona, servedAs, source, reason }: FallbackEvent) => process.stderr.write(`context-compiler fallback: ${persona} connected as ${servedAs}, ${source} session (${reason})\n`);
const compiler = createClient({ baseUrl: process.env.CONTEXT_COMPILER_URL ?? 'http://127.0.0.1:8080', token: process.env.CONTEXT_COMPILER_TOKEN, realtime: { onFallback: logFallback } });
const log = (fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fields)}\n`);

// ---- OpenAI Realtime over WebRTC: the browser holds the media and the data channel; we relay the SDP offer.
const OPENAI_MODEL = process.env.REALTIME_MODEL ?? 'gpt-realtime-2';
const OPENAI_AUTH = { authorization: `Bearer ${process.env.OPENAI_API_KEY}` };

/** A call in progress: its run (one per call: passed on every compile of it), the last refresh's ETag, and the sideband to reach its model. */
interface OpenAICall {
  persona: string;
  runId: string;
  etag: string | null;
  sideband: Promise<WebSocket> | null;
}
const openaiCalls = new Map<string, OpenAICall>();

export async function connect(sdpOffer: string, persona: string, topicId?: string, callId: string = randomUUID()): Promise<string> {
  const connected = await compiler.realtimeSession(persona, { topicId, runId: callId, model: OPENAI_MODEL });
  log({ msg: 'call connected', callId, persona, source: connected.source, runId: connected.runId }); // runId: our x-run-id (a stale or static session's too: its first refresh opens it)
  const form = new FormData();
  form.set('sdp', sdpOffer);
  form.set('session', JSON.stringify({ ...connected.session, model: OPENAI_MODEL }));
  const answer = await fetch(process.env.REALTIME_CALLS_URL ?? 'https://api.openai.com/v1/realtime/calls', { method: 'POST', headers: OPENAI_AUTH, body: form });
  // The call's id is the last segment of the answer's Location (/v1/realtime/calls/rtc_…): the server's way to the call the browser holds.
  const location = answer.headers.get('location');
  const openaiCallId = answer.ok && location !== null ? location.slice(location.lastIndexOf('/') + 1) : '';
  openaiCalls.set(callId, { persona: connected.persona, runId: connected.runId!, etag: null, sideband: openaiCallId === '' ? null : sideband(openaiCallId) });
  return answer.text();
}

/** The sideband: a WebSocket of our own to the call's session, `wss://…/v1/realtime?call_id=`; resolves once open. */
function sideband(openaiCallId: string): Promise<WebSocket> {
  const url = new URL(process.env.REALTIME_SIDEBAND_URL ?? 'wss://api.openai.com/v1/realtime');
  url.searchParams.set('call_id', openaiCallId);
  const socket = new WebSocket(url, { headers: OPENAI_AUTH });
  socket.on('error', (error) => log({ msg: 'sideband failed', openaiCallId, error: error.message })); // a lost sideband loses refreshes, never the call
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
}

const send = (socket: WebSocket, event: RealtimeClientEvent) => socket.send(JSON.stringify(event));

/** On each operator turn (say, when the operator stops speaking): what changed since the connect, sent on the sideband. */
export async function onOperatorTurn(callId: string): Promise<void> {
  const call = openaiCalls.get(callId);
  if (call?.sideband == null) return;
  const answer = await compiler.refresh(call.persona, call.runId, { etag: call.etag }).catch(() => null); // a failed refresh never stops a call
  if (answer === null || 'notModified' in answer || answer.delivery !== 'conversation-item') return;
  const socket = await call.sideband.catch(() => null);
  if (socket === null) return;
  call.etag = answer.etag;
  send(socket, answer.event);
}

export async function hangUp(callId: string): Promise<void> {
  const call = openaiCalls.get(callId);
  openaiCalls.delete(callId);
  (await call?.sideband?.catch(() => null))?.close();
}

// ---- Gemini Live: the server holds the session; a 3.1+ model takes new context only on a new connection, resumed.
const GEMINI_MODEL = process.env.GEMINI_MODEL ?? 'gemini-3.1-flash-live-preview';
const geminiBaseUrl = process.env.GEMINI_BASE_URL;
let ai: GoogleGenAI | undefined; // made on the first Gemini call: an OpenAI-only server never builds it
const gemini = () => (ai ??= new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY ?? '', ...(geminiBaseUrl === undefined ? {} : { httpOptions: { baseUrl: geminiBaseUrl } }) }));

interface GeminiCall {
  persona: string;
  runId: string;
  etag: string | null;
  live: Session;
  /** The last resumption handle the server gave: a reconnect with it continues the conversation. */
  handle: string | undefined;
}
const geminiCalls = new Map<string, GeminiCall>();

export async function connectGemini(persona: string, topicId?: string, callId: string = randomUUID()): Promise<void> {
  const connected = await compiler.geminiSetup(persona, { topicId, runId: callId, model: GEMINI_MODEL });
  log({ msg: 'call connected', callId, persona, source: connected.source, runId: connected.runId });
  const call: Partial<GeminiCall> = { persona: connected.persona, runId: connected.runId!, etag: null, handle: undefined };
  call.live = await openLive(call, connected.setup);
  geminiCalls.set(callId, call as GeminiCall);
}

/** A Live session for the call with `setup`, resuming the call's conversation when it has a handle. */
function openLive(call: Partial<GeminiCall>, setup: GeminiSetup): Promise<Session> {
  return gemini().live.connect({
    model: GEMINI_MODEL,
    config: { ...liveConfig(setup, { Modality, Type }), sessionResumption: { handle: call.handle } },
    callbacks: {
      onmessage: (message: LiveServerMessage) => {
        const update = message.sessionResumptionUpdate;
        if (update?.resumable === true && update.newHandle !== undefined) call.handle = update.newHandle;
      },
    },
  });
}

export async function onGeminiOperatorTurn(callId: string): Promise<void> {
  const call = geminiCalls.get(callId);
  if (call === undefined) return;
  const answer = await compiler.refresh(call.persona, call.runId, { etag: call.etag }).catch(() => null);
  if (answer === null || 'notModified' in answer) return;
  call.etag = answer.etag;
  if (answer.delivery === 'client-content') call.live.sendClientContent(answer.event.clientContent);
  if (answer.delivery === 'reconnect') {
    const previous = call.live;
    call.live = await openLive(call, answer.setup);
    previous.close();
  }
}

export function hangUpGemini(callId: string): void {
  geminiCalls.get(callId)?.live.close();
  geminiCalls.delete(callId);
}
