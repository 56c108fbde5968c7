import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

const NOW = '2026-11-30T17:20:00Z';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface PersonaAnswer {
  runId: string;
  voice: string;
  session: { type: string; instructions: string; audio: { output: { voice: string } }; tools: Array<{ name: string }> };
}

async function harness() {
  const brainRoot = await copyExampleBrain();
  const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
  return { app, brainRoot, trace: async (runId: string) => (await app.inject(`/runs/${runId}/trace`)).json().events };
}

describe('a persona delivery’s trace holds what the caller was given beside the prompts', () => {
  it('regression: records the voice and the tools, so the delivered session can be rebuilt from the trace (it held neither)', async () => {
    const { app, trace } = await harness();
    const response = await app.inject(`/context/mars?topicId=real-estate&now=${NOW}&runId=voice-run`);
    expect(response.statusCode).toBe(200);
    const answer = response.json<PersonaAnswer>();
    const again = await app.inject({ url: `/context/mars?topicId=real-estate&now=${NOW}&runId=voice-run`, headers: { 'if-none-match': response.headers.etag as string } });
    expect(again.statusCode).toBe(304);

    const events = await trace('voice-run');
    expect(events.map((event: { outcome: string }) => event.outcome)).toEqual(['delivered', 'not-modified']);
    for (const event of events) {
      expect(event.realtime).toEqual({
        voice: answer.voice,
        toolNames: answer.session.tools.map((tool) => tool.name),
        // The digest of the `tools` member as delivered (the answer's bytes are JSON.stringify's of it).
        toolsSha256: sha256(JSON.stringify(answer.session.tools)),
        tools: answer.session.tools,
      });
    }
    const [event] = events;
    const instructions = event.inputPrompt === null ? event.systemPrompt : `${event.systemPrompt}\n\n${event.inputPrompt}`;
    const rebuilt = { type: 'realtime', instructions, audio: { output: { voice: event.realtime.voice } }, tools: event.realtime.tools };
    expect(JSON.stringify(rebuilt)).toBe(JSON.stringify(answer.session));
  });

  it('follows the tools the operator narrowed, per answer, and records none for a worker or the topic route', async () => {
    const { app, brainRoot, trace } = await harness();
    const before = (await app.inject(`/context/venus?now=${NOW}&runId=venus-before`)).json<PersonaAnswer>();
    await writeFile(join(brainRoot, 'personas/tools.json'), JSON.stringify({ personas: { venus: { tools: ['search', 'get_page'] } } }));
    const after = (await app.inject(`/context/venus?now=${NOW}&runId=venus-after`)).json<PersonaAnswer>();
    expect(after.session.tools.map((tool) => tool.name)).toEqual(['search', 'get_page']);
    const [beforeEvent] = await trace('venus-before');
    const [afterEvent] = await trace('venus-after');
    expect(beforeEvent.realtime.toolNames).toEqual(before.session.tools.map((tool) => tool.name));
    expect(afterEvent.realtime.toolNames).toEqual(['search', 'get_page']);
    expect(afterEvent.realtime.toolsSha256).not.toBe(beforeEvent.realtime.toolsSha256);

    await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hi', now: NOW, runId: 'worker-run' } });
    await app.inject('/context/topic/real-estate?runId=topic-run');
    expect((await trace('worker-run'))[0].realtime).toBeUndefined();
    expect((await trace('topic-run'))[0].realtime).toBeUndefined();
  });
});
