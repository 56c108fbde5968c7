import { randomUUID } from 'node:crypto';
import { createClient, type FallbackEvent } from '@context-compiler/client';

const logFallback = ({ persona, servedAs, source, reason }: FallbackEvent) => process.stderr.write(`context-compiler fallback: ${persona} connected as ${servedAs}, ${source} session (${reason})\n`);
const compiler = createClient({ baseUrl: process.env.CONTEXT_COMPILER_URL ?? 'http://127.0.0.1:8080', token: process.env.CONTEXT_COMPILER_TOKEN, realtime: { onFallback: logFallback } });

export async function connect(sdpOffer: string, persona: string, topicId?: string, callId = randomUUID()): Promise<string> {
  const { session, runId, source } = await compiler.realtimeSession(persona, { topicId, runId: callId }); // one run per call: pass callId on every compile of it
  process.stdout.write(`${JSON.stringify({ msg: 'call connected', callId, persona, source, runId })}\n`); // runId: our x-run-id; a stale or static session's too (its first refresh opens it)
  const form = new FormData();
  form.set('sdp', sdpOffer);
  form.set('session', JSON.stringify({ ...session, model: 'gpt-realtime-2' }));
  const init = { method: 'POST', headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY}` }, body: form };
  return (await fetch(process.env.REALTIME_CALLS_URL ?? 'https://api.openai.com/v1/realtime/calls', init)).text();
}
