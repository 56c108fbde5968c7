import { describe, expect, it } from 'vitest';
import { MARS, VENUS } from '../../src/core/index.js';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';

describe('GET /personas', () => {
  it('lists key, name, voice and description of each persona, in a fixed order, without any prompt text', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/personas');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = response.json();
    expect(body.personas.map((persona: { key: string }) => persona.key)).toEqual(['mars', 'venus']);
    for (const persona of body.personas) {
      expect(Object.keys(persona).sort()).toEqual(['description', 'key', 'name', 'voice']);
    }
    expect(body.personas[0]).toEqual({ key: 'mars', name: MARS.name, voice: MARS.voices.openai, description: MARS.description });
    for (const prompt of [MARS.identity, MARS.character, VENUS.identity, VENUS.character, MARS.toolPosture]) {
      expect(response.body).not.toContain(prompt.slice(0, 40));
    }
  });

  it('needs a token like every other non-health route', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect((await app.inject('/personas')).statusCode).toBe(401);
    expect((await app.inject('/context/mars')).statusCode).toBe(401);
    const ok = await app.inject({ url: '/personas', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(ok.statusCode).toBe(200);
  });
});
