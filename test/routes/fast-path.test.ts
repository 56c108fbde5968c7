import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { createCompiler } from '../../src/core/compile.js';
import { deliveryFor } from '../../src/core/persona/providers.js';
import { buildHud } from '../../src/core/hud.js';
import { DEFAULT_POLICY, mergePolicy } from '../../src/core/policy.js';
import { createBrain, type BrainSession } from '../../src/io/brain.js';
import { serializerJsonSchema } from '../../src/http/serializer.js';
import { NO_SOURCE_MEMO } from '../../src/sources/memo.js';
import { compilePersona, readPersonaSources, type PersonaRequest } from '../../src/sources/persona.js';
import { compileWorker, readWorkerSources, type WorkerRequest } from '../../src/sources/worker.js';
import { O200K_BASE } from '../../src/tokenizer.js';
import { CompiledResponseSchema } from '../../schemas/compiled.js';
import { PersonaContextResponseSchema } from '../../schemas/context.js';
import { buildTestApp, copyExampleBrain, TEST_TOKEN } from '../helpers/app.js';
import { instructionsOf } from '../helpers/answers.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface Answer {
  runId: string;
  sources: unknown;
  hud?: { files: unknown[] };
  systemPrompt: string;
  inputPrompt: string;
  /** Absent from a persona's full answer (each text once), present on POST /compile's. */
  instructions?: string;
  promptSha256: string;
  inputSha256: string;
  session: { instructions: string };
  cache: { engine: string | null; tokenizer: string; toolTokens: number; boundaries: Array<{ prefixChars: number; prefixSha256: string; tokens: number }> };
  budget: { usedChars: number };
}

/**
 * One Fastify instance answering with one serializer of the whole response schema, compiled
 * once per schema (compiling it for every answer compared took four fifths of this file's
 * time); `serialized` hands it the value to write.
 */
const references = new Map<z.ZodType, { app: FastifyInstance; value: { current: unknown } }>();
afterAll(async () => {
  for (const { app } of references.values()) await app.close();
});

/** What one serializer of the whole response schema writes for `value`. */
async function serialized(schema: z.ZodType, value: unknown): Promise<string> {
  let reference = references.get(schema);
  if (!reference) {
    const app = Fastify();
    const held = { current: undefined as unknown };
    app.get('/', { schema: { response: { 200: serializerJsonSchema(schema) } } }, async () => held.current);
    reference = { app, value: held };
    references.set(schema, reference);
  }
  reference.value.current = value;
  const response = await reference.app.inject({ method: 'GET', url: '/' });
  expect(response.statusCode).toBe(200);
  return response.body;
}

/** A plain compile: no memo at all (every block rendered, hashed and counted afresh), the service's tokenizer. */
const plain = createCompiler({ tokenizer: O200K_BASE });
const policy = mergePolicy(DEFAULT_POLICY, { limitChars: 48_000 });

/** The HUD a plain read of the brain gives, as `?hud=1` adds it. */
function hudOf(session: BrainSession, compiled: { blocks: Parameters<typeof buildHud>[0]['blocks']; budget: Parameters<typeof buildHud>[0]['budget'] }, wanted: boolean) {
  return wanted ? { hud: buildHud({ loaded: session.loaded(), missing: session.absent(), blocks: compiled.blocks, budget: compiled.budget }) } : {};
}

/**
 * The answer a plain compile gives: sources read afresh (no source memo), a compiler that
 * remembers nothing, one serializer of the whole schema. `sources` are the request's own
 * facts (the order reads complete in), so they are taken from the answer compared against.
 */
async function plainAnswer(brainRoot: string, request: PersonaRequest, answer: { runId: string; sources: unknown }, hud: boolean): Promise<string> {
  const session = createBrain(brainRoot, { warn: () => undefined }).session();
  const sources = await readPersonaSources(session, request, { defaultTimeZone: 'UTC', policy });
  const { compiled, extra } = compilePersona({ ...sources, compileKey: undefined }, plain);
  // The refresh delivery the answer names is the request's, by provider and model (none named here).
  const { delivery, warning } = deliveryFor(request.provider ?? 'openai', undefined);
  return serialized(PersonaContextResponseSchema, {
    runId: answer.runId,
    persona: request.persona,
    ...compiled,
    sources: answer.sources,
    ...extra,
    delivery,
    warnings: [...sources.warnings, ...(warning === null ? [] : [warning]), ...compiled.warnings],
    surface: 'voice',
    ...hudOf(session, compiled, hud),
  });
}

/** The same for a worker's `POST /compile`: its recall decision and receipts included. */
async function plainWorkerAnswer(brainRoot: string, request: WorkerRequest, answer: { runId: string; sources: unknown }, hud: boolean): Promise<string> {
  const session = createBrain(brainRoot, { warn: () => undefined }).session();
  const warnings: string[] = [];
  const sources = await readWorkerSources(session, request, { defaultTimeZone: 'UTC', policy }, NO_SOURCE_MEMO, warnings);
  const { compiled, extra } = compileWorker(request, sources, plain);
  return serialized(CompiledResponseSchema, {
    runId: answer.runId,
    worker: request.worker,
    ...compiled,
    ...extra,
    sources: answer.sources,
    warnings: [...warnings, ...compiled.warnings],
    surface: request.surface,
    phase: request.phase,
    ...hudOf(session, compiled, hud),
  });
}

/** What the digests and the plan promise of the bytes, whatever the route. */
function expectConsistent(answer: Answer, query: string): void {
  expect(answer.promptSha256, query).toBe(sha256(answer.systemPrompt));
  expect(answer.inputSha256, query).toBe(sha256(answer.inputPrompt));
  expect(instructionsOf(answer), query).toBe(`${answer.systemPrompt}\n\n${answer.inputPrompt}`);
  for (const boundary of answer.cache.boundaries) expect(boundary.prefixSha256, query).toBe(sha256(answer.systemPrompt.slice(0, boundary.prefixChars)));
  expect(answer.cache.boundaries.at(-1)!.prefixChars, query).toBe(answer.systemPrompt.length);
  expect(answer.cache.tokenizer, query).toBe('o200k_base');
  expect(answer.budget.usedChars, query).toBe(instructionsOf(answer).length);
}

/**
 * The event traced for `runId`, read back through `GET /runs/:runId/trace`, against the
 * answer a plain compile gives: the prompts rebuilt from the stored segments, their digests,
 * blocks, budget, cache plan (exact tokens included), token counts, redactions and session.
 */
async function expectTraced(app: Awaited<ReturnType<typeof buildTestApp>>['app'], runId: string, plain: Record<string, unknown>, label: string): Promise<void> {
  const response = await app.inject({ method: 'GET', url: `/runs/${runId}/trace`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  expect(response.statusCode, label).toBe(200);
  const events = (response.json() as { events: Array<Record<string, unknown>> }).events;
  expect(events, label).toHaveLength(1);
  const event = events[0]!;
  expect(event['verified'], label).toBe(true);
  for (const key of ['systemPrompt', 'inputPrompt', 'promptSha256', 'inputSha256', 'budget', 'cache', 'tokens', 'redactions']) expect(event[key], `${label} trace ${key}`).toEqual(plain[key]);
  const summary = ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 }: Record<string, unknown>) => ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 });
  expect((event['blocks'] as Array<Record<string, unknown>>).map(summary), `${label} trace blocks`).toEqual((plain['blocks'] as Array<Record<string, unknown>>).map(summary));
  const session = plain['session'] as { instructions: string; audio: { output: { voice: string } }; tools: Array<{ name: string }> };
  const realtime = event['realtime'] as { voice: string; toolNames: string[]; tools: unknown };
  expect(`${event['systemPrompt']}\n\n${event['inputPrompt']}`, `${label} trace instructions`).toBe(session.instructions);
  expect(realtime.voice, label).toBe(session.audio.output.voice);
  expect(realtime.toolNames, label).toEqual(session.tools.map((tool) => tool.name));
  expect(realtime.tools, label).toEqual(session.tools);
}

describe('the fast path answers byte for byte what a plain compile gives', () => {
  it('mars and venus at new and repeated minutes, with a topic, ASCII, an engine, the HUD and a changed file: prompts, digests, token counts, cache plan, session, HUD, whole body, and the trace event read back', { timeout: 90_000 }, async () => {
    const brain = await copyExampleBrain();
    // A full day: venus shows fewer of the events that are over as the day goes on, so her blocks change with the minute.
    const events = Array.from({ length: 24 }, (_, i) => `- ${String(7 + Math.floor(i / 2)).padStart(2, '0')}:${i % 2 === 0 ? '00' : '30'} Event number ${i + 1}`);
    await writeFile(`${brain}/calendar/today.md`, `# Today — 2026-11-30\n\n${events.join('\n')}\n`);
    const { app } = await buildTestApp({ BRAIN_ROOT: brain, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const cases: Array<{ query: string; request: PersonaRequest; hud: boolean }> = [];
    for (const persona of ['mars', 'venus'] as const) {
      // A new minute, the same minute again, back to the minute before (kept), a new hour, a new day.
      for (const now of ['2026-11-30T17:05:00Z', '2026-11-30T17:06:00Z', '2026-11-30T17:06:40Z', '2026-11-30T17:05:30Z', '2026-11-30T19:41:00Z', '2026-12-01T09:00:00Z']) {
        cases.push({ query: `/context/${persona}?now=${now}`, request: { persona, now: new Date(now) }, hud: false });
        // The same minute for another engine (its own route key), and with the HUD.
        cases.push({ query: `/context/${persona}?now=${now}&engine=gpt-realtime`, request: { persona, now: new Date(now), engine: 'gpt-realtime' }, hud: false });
        cases.push({ query: `/context/${persona}?now=${now}&hud=1`, request: { persona, now: new Date(now) }, hud: true });
      }
      cases.push({
        query: `/context/${persona}?now=2026-11-30T17:07:00Z&topicId=garden&topicName=Beds&hud=1`,
        request: { persona, now: new Date('2026-11-30T17:07:00Z'), topicId: 'garden', topicName: 'Beds' },
        hud: true,
      });
      // The HUD of the day kept from a minute before is not the answer once the blocks change (venus: events over).
      for (const now of ['2026-11-30T16:10:00Z', '2026-11-30T21:40:00Z', '2026-12-01T03:10:00Z']) {
        cases.push({ query: `/context/${persona}?now=${now}&hud=1`, request: { persona, now: new Date(now) }, hud: true });
      }
      cases.push({ query: `/context/${persona}?now=2026-11-30T17:08:00Z&sanitize=ascii`, request: { persona, now: new Date('2026-11-30T17:08:00Z'), sanitize: 'ascii' }, hud: false });
      cases.push({
        query: `/context/${persona}?now=2026-11-30T17:09:00Z&timezone=Asia%2FKolkata&engine=gpt-4o-realtime`,
        request: { persona, now: new Date('2026-11-30T17:09:00Z'), timezone: 'Asia/Kolkata', engine: 'gpt-4o-realtime' },
        hud: false,
      });
    }
    const engines = new Map<string, string>();
    const check = async ({ query, request, hud }: (typeof cases)[number]) => {
      const response = await app.inject({ method: 'GET', url: query, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      expect(response.statusCode, query).toBe(200);
      const answer = response.json() as Answer;
      const plainBody = await plainAnswer(brain, request, answer, hud);
      expect(response.body, query).toBe(plainBody);
      await expectTraced(app, answer.runId, JSON.parse(plainBody) as Record<string, unknown>, query);
      // And, whatever both share, what the digests and the plan promise of the bytes.
      expectConsistent(answer, query);
      expect(answer.session.instructions, query).toBe(instructionsOf(answer));
      expect(answer.cache.toolTokens, query).toBeGreaterThan(0);
      expect(answer.cache.engine, query).toBe(request.engine ?? null);
      expect(answer.hud !== undefined, query).toBe(hud);
      // Two engines never share a route key.
      const key = `${request.persona}|${request.engine ?? '-'}|${request.timezone ?? '-'}`;
      const routeKey = (answer.cache as unknown as { routeKey: string }).routeKey;
      for (const [other, known] of engines) if (other !== key && other.startsWith(`${request.persona}|`) && other.endsWith(`|${request.timezone ?? '-'}`)) expect(known, query).not.toBe(routeKey);
      engines.set(key, routeKey);
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

  it('a governed worker through POST /compile at new and repeated minutes, with an engine, a role, experiences and the HUD: recall, receipts, token counts, whole body', { timeout: 60_000 }, async () => {
    const brain = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: brain, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const payloads: Array<Record<string, unknown>> = [];
    for (const now of ['2026-11-30T17:20:00Z', '2026-11-30T17:21:00Z', '2026-11-30T17:21:30Z', '2026-12-01T08:00:00Z']) {
      payloads.push({ phase: 'start', surface: 'queued-task', worker: 'courier', task: "Assemble and send this week's digest.", now });
      payloads.push({ phase: 'start', surface: 'queued-task', worker: 'courier', task: "Assemble and send this week's digest.", now, engine: 'claude-sonnet-4.5', role: 'reviewer' });
      payloads.push({
        phase: 'turn',
        surface: 'chat',
        worker: 'courier',
        channelId: 'general',
        message: 'Which services can you reach for the digest?',
        experiences: [{ sourceRef: 'runs/42', content: 'Last week the mail host rejected a large attachment; link to the doc instead.' }],
        now,
      });
      payloads.push({ phase: 'turn', surface: 'chat', worker: 'scribe', message: 'Summarise the garden notes.', now, engine: 'gpt-4.1' });
    }
    const check = async (payload: Record<string, unknown>, hud: boolean) => {
      const url = hud ? '/compile?hud=1' : '/compile';
      const response = await app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      const label = `${url} ${JSON.stringify(payload)}`;
      expect(response.statusCode, label).toBe(200);
      const answer = response.json() as Answer & { receipts: unknown; recall: unknown };
      const request = { ...payload, now: new Date(payload['now'] as string) } as unknown as WorkerRequest;
      expect(response.body, label).toBe(await plainWorkerAnswer(brain, request, answer, hud));
      expectConsistent({ ...answer, inputPrompt: answer.inputPrompt }, label);
      expect(answer.cache.engine, label).toBe(payload['engine'] ?? null);
      expect(answer.receipts, label).toBeDefined();
      expect(answer.recall, label).toBeDefined();
    };
    for (let round = 0; round < 2; round++) for (const payload of payloads) await check(payload, round === 1);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const { appendFile } = await import('node:fs/promises');
    await appendFile(`${brain}/workers/courier/identity.md`, '\nKeep every digest under one page.\n');
    await new Promise((resolve) => setTimeout(resolve, 30));
    for (const payload of payloads) await check(payload, true);
  });
});
