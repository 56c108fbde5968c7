import { createClient, type FallbackEvent } from '@context-compiler/client';

const logFallback = ({ persona, servedAs, source, reason }: FallbackEvent) => process.stderr.write(`context-compiler fallback: ${persona} connected as ${servedAs}, ${source} session (${reason})\n`);
const compiler = createClient({ baseUrl: process.env.CONTEXT_COMPILER_URL ?? 'http://context-compiler:8080', token: process.env.CONTEXT_COMPILER_TOKEN, realtime: { onFallback: logFallback } });

export async function connect(sdpOffer: string, persona: string, topicId?: string): Promise<string> {
  const form = new FormData();
  form.set('sdp', sdpOffer);
  form.set('session', JSON.stringify({ ...(await compiler.realtimeSession(persona, { topicId })).session, model: 'gpt-realtime' }));
  const init = { method: 'POST', headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY}` }, body: form };
  return (await fetch(process.env.REALTIME_CALLS_URL ?? 'https://api.openai.com/v1/realtime/calls', init)).text();
}
