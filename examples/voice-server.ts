import { createClient } from '@context-compiler/client';

const compiler = createClient({ baseUrl: 'http://context-compiler:8080', token: process.env.CONTEXT_COMPILER_TOKEN });

export async function connect(sdpOffer: string, persona: 'mars' | 'venus', topicId?: string): Promise<string> {
  const form = new FormData();
  form.set('sdp', sdpOffer);
  form.set('session', JSON.stringify({ ...(await compiler.realtimeSession(persona, { topicId })), model: 'gpt-realtime' }));
  const headers = { authorization: `Bearer ${process.env.OPENAI_API_KEY}` };
  return (await fetch('https://api.openai.com/v1/realtime/calls', { method: 'POST', headers, body: form })).text();
}
