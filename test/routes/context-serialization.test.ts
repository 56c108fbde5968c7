import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { serializerJsonSchema } from '../../src/http/serializer.js';
import { CompiledResponseSchema } from '../../schemas/compiled.js';
import { PersonaContextResponseSchema, TopicContextResponseSchema } from '../../schemas/context.js';
import { buildTestApp } from '../helpers/app.js';

const NOW = '2026-11-30T17:05:00Z';

/** What Fastify's default schema serializer writes for `value` under `schema`'s JSON Schema: the bytes the routes delivered before they wrote their JSON themselves. */
async function schemaSerialized(schema: z.ZodType, value: unknown): Promise<string> {
  const reference = Fastify();
  reference.get('/', { schema: { response: { 200: serializerJsonSchema(schema) } } }, async () => value);
  const response = await reference.inject({ method: 'GET', url: '/' });
  await reference.close();
  return response.body;
}

/** The body must be both: what the schema's serializer writes, and a plain JSON.stringify of the object the schema validates. */
async function expectSchemaBytes(schema: z.ZodType, body: string, label: string): Promise<void> {
  expect(body, label).toBe(await schemaSerialized(schema, JSON.parse(body)));
  expect(body, label).toBe(JSON.stringify(schema.parse(JSON.parse(body))));
}

describe('compile routes write the bytes their response schema serializer would', () => {
  it('persona, topic and worker deliveries, first and repeated (served from the compile memo)', async () => {
    const { app } = await buildTestApp();
    const cases = [
      { schema: PersonaContextResponseSchema, url: `/context/mars?now=${NOW}` },
      { schema: PersonaContextResponseSchema, url: `/context/venus?now=${NOW}&topicId=garden&topicName=${encodeURIComponent('Gar"den\u2028')}` },
      { schema: PersonaContextResponseSchema, url: `/context/venus?now=${NOW}&topicId=no-such-topic&sanitize=ascii` },
      { schema: TopicContextResponseSchema, url: '/context/topic/garden?topicName=Beds' },
    ];
    for (const { schema, url } of cases) {
      for (let round = 0; round < 2; round++) {
        const response = await app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(200);
        await expectSchemaBytes(schema, response.body, url);
      }
    }
    const turn = await app.inject({
      method: 'POST',
      url: '/compile',
      payload: { worker: 'scribe', phase: 'turn', surface: 'chat', channelId: 'general', now: NOW, message: 'Three bullets for "Jordan", please.' },
    });
    expect(turn.statusCode).toBe(200);
    await expectSchemaBytes(CompiledResponseSchema, turn.body, 'POST /compile');
  });

  it('the session and every tool, write tools and an unsafe topicId included', async () => {
    const { app } = await buildTestApp({ VOICE_WRITE_TOOLS: 'true' });
    for (const url of [`/context/venus?now=${NOW}`, `/context/mars?now=${NOW}&topicId=${encodeURIComponent('../x"\u2028')}`]) {
      for (let round = 0; round < 2; round++) {
        const response = await app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(200);
        expect(response.json().session.tools.length, url).toBeGreaterThan(3);
        await expectSchemaBytes(PersonaContextResponseSchema, response.body, url);
      }
    }
  });

  it('a repeated persona call within the minute gets the same prompts, and a new minute a new clock line', async () => {
    const { app } = await buildTestApp();
    const get = async (now: string) => (await app.inject({ method: 'GET', url: `/context/mars?now=${now}` })).json();
    const first = await get('2026-11-30T17:05:00Z');
    const sameMinute = await get('2026-11-30T17:05:59Z');
    const nextMinute = await get('2026-11-30T17:06:00Z');
    expect(sameMinute.systemPrompt).toBe(first.systemPrompt);
    expect(sameMinute.promptSha256).toBe(first.promptSha256);
    expect(nextMinute.systemPrompt).not.toBe(first.systemPrompt);
    expect(nextMinute.systemPrompt.endsWith('09:06 (America/Los_Angeles, UTC-08:00)')).toBe(true);
    expect(nextMinute.runId).not.toBe(first.runId);
  });
});
