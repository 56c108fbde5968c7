import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { compile } from '../../src/core/compile.js';
import { DEFAULT_POLICY, mergePolicy } from '../../src/core/policy.js';
import { createBrain } from '../../src/io/brain.js';
import { serializerJsonSchema } from '../../src/http/zod.js';
import { compilePersona, readPersonaSources, type PersonaRequest } from '../../src/sources/persona.js';
import { PersonaContextResponseSchema } from '../../schemas/context.js';
import { buildTestApp, copyExampleBrain, TEST_TOKEN } from '../helpers/app.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface Answer {
  runId: string;
  sources: unknown;
  systemPrompt: string;
  inputPrompt: string;
  instructions: string;
  promptSha256: string;
  inputSha256: string;
  session: { instructions: string };
  cache: { boundaries: Array<{ prefixChars: number; prefixSha256: string }> };
  budget: { usedChars: number };
}

/** What one serializer of the whole response schema writes for `value`. */
async function serialized(value: unknown): Promise<string> {
  const reference = Fastify();
  reference.get('/', { schema: { response: { 200: serializerJsonSchema(PersonaContextResponseSchema) } } }, async () => value);
  const response = await reference.inject({ method: 'GET', url: '/' });
  await reference.close();
  return response.body;
}

/**
 * The answer a plain compile gives: sources read afresh (no source memo), `compile()` (which
 * remembers nothing), one serializer of the whole schema. `sources` are the request's own
 * facts, so they are taken from the answer compared against.
 */
async function plainAnswer(brainRoot: string, request: PersonaRequest, answer: { runId: string; sources: unknown }): Promise<string> {
  const brain = createBrain(brainRoot, { warn: () => undefined });
  const options = { defaultTimeZone: 'UTC', policy: mergePolicy(DEFAULT_POLICY, { limitChars: 48_000 }) };
  const sources = await readPersonaSources(brain.session(), request, options);
  const { compiled, extra } = compilePersona({ ...sources, compileKey: undefined }, { compile });
  return serialized({
    runId: answer.runId,
    persona: request.persona,
    ...compiled,
    sources: answer.sources,
    ...extra,
    warnings: [...sources.warnings, ...compiled.warnings],
    surface: 'voice',
  });
}

describe('the fast path answers byte for byte what a plain compile gives', () => {
  it('mars and venus at new and repeated minutes, with a topic, ASCII and a changed file: prompts, digests, cache plan, session, whole body', { timeout: 60_000 }, async () => {
    const brain = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: brain, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const cases: Array<{ query: string; request: PersonaRequest }> = [];
    for (const persona of ['mars', 'venus'] as const) {
      // A new minute, the same minute again, back to the minute before (kept), a new hour, a new day.
      for (const now of ['2026-11-30T17:05:00Z', '2026-11-30T17:06:00Z', '2026-11-30T17:06:40Z', '2026-11-30T17:05:30Z', '2026-11-30T19:41:00Z', '2026-12-01T09:00:00Z']) {
        cases.push({ query: `/context/${persona}?now=${now}`, request: { persona, now: new Date(now) } });
      }
      cases.push({ query: `/context/${persona}?now=2026-11-30T17:07:00Z&topicId=garden&topicName=Beds`, request: { persona, now: new Date('2026-11-30T17:07:00Z'), topicId: 'garden', topicName: 'Beds' } });
      cases.push({ query: `/context/${persona}?now=2026-11-30T17:08:00Z&sanitize=ascii`, request: { persona, now: new Date('2026-11-30T17:08:00Z'), sanitize: 'ascii' } });
      cases.push({ query: `/context/${persona}?now=2026-11-30T17:09:00Z&timezone=Asia%2FKolkata`, request: { persona, now: new Date('2026-11-30T17:09:00Z'), timezone: 'Asia/Kolkata' } });
    }
    const check = async ({ query, request }: (typeof cases)[number]) => {
      const response = await app.inject({ method: 'GET', url: query, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      expect(response.statusCode, query).toBe(200);
      const answer = response.json() as Answer;
      expect(response.body, query).toBe(await plainAnswer(brain, request, answer));
      // And, whatever both share, what the digests and the plan promise of the bytes.
      expect(answer.promptSha256, query).toBe(sha256(answer.systemPrompt));
      expect(answer.inputSha256, query).toBe(sha256(answer.inputPrompt));
      expect(answer.instructions, query).toBe(`${answer.systemPrompt}\n\n${answer.inputPrompt}`);
      expect(answer.session.instructions, query).toBe(answer.instructions);
      for (const boundary of answer.cache.boundaries) expect(boundary.prefixSha256, query).toBe(sha256(answer.systemPrompt.slice(0, boundary.prefixChars)));
      expect(answer.cache.boundaries.at(-1)!.prefixChars, query).toBe(answer.systemPrompt.length);
      expect(answer.budget.usedChars, query).toBe(answer.instructions.length);
    };
    // Twice over: the second round is served from every memo the first one filled.
    for (let round = 0; round < 2; round++) for (const each of cases) await check(each);
    // A file changes: the next answers are compiled from it, and still equal a plain compile.
    const { appendFile } = await import('node:fs/promises');
    await appendFile(`${brain}/memory/2026-11-30.md`, '- I feel a fresh hope about the garden.\n');
    await appendFile(`${brain}/tasks/open.md`, '- [ ] P0 **Call the plumber**\n');
    await new Promise((resolve) => setTimeout(resolve, 30));
    for (const each of cases) await check(each);
  });
});
