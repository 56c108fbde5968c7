/**
 * `?provider=` on the persona and topic routes (issue 24): `gemini` answers Gemini Live's
 * `setup` instead of `session` for both personas and every topic case, `azure` answers
 * OpenAI's shape, anything else is a 400; the ETag, the cache plan and the trace say which.
 * `?model=` on both: the answer says which refresh delivery the model gets (issue 33).
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GeminiSetupSchema } from '../../schemas/gemini.js';
import { RealtimeSessionSchema } from '../../schemas/compiled.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

const NOW = '2026-11-30T17:05:00Z';

async function harness() {
  const brainRoot = await copyExampleBrain();
  const built = await buildTestApp({ BRAIN_ROOT: brainRoot });
  const get = async (url: string) => {
    const response = await built.app.inject({ method: 'GET', url });
    expect(response.statusCode, `${url}: ${response.body.slice(0, 300)}`).toBe(200);
    return { body: response.json(), etag: String(response.headers['etag']) };
  };
  const trace = async (runId: string) => (await built.app.inject(`/runs/${runId}/trace`)).json().events as Array<Record<string, any>>;
  return { ...built, brainRoot, get, trace };
}

/** The topic cases a call link can bring: notes, a name without notes, an id with no file. */
const TOPIC_CASES = [
  { name: 'topic with notes', query: 'topicId=real-estate', topicBlock: 'topics/real-estate.md', warning: undefined },
  { name: 'topicName only', query: 'topicName=Flat%20hunt', topicBlock: 'request:topicName', warning: undefined },
  { name: 'unknown topic', query: 'topicId=no-such-topic', topicBlock: undefined, warning: 'topic-missing:' },
  { name: 'no topic', query: '', topicBlock: undefined, warning: undefined },
] as const;

describe('provider=gemini', () => {
  it('answers a setup instead of a session for both personas and every topic case, traced as gemini', async () => {
    const { get, trace } = await harness();
    for (const persona of ['mars', 'venus'] as const) {
      for (const topic of TOPIC_CASES) {
        const label = `${persona}, ${topic.name}`;
        const runId = `gemini-${persona}-${topic.name.replaceAll(' ', '-')}`;
        const { body: openai } = await get(`/context/${persona}?now=${NOW}&${topic.query}`);
        const { body } = await get(`/context/${persona}?now=${NOW}&provider=gemini&runId=${runId}&${topic.query}`);
        expect(body.session, label).toBeUndefined();
        expect(body.provider).toBe('gemini');
        const setup = GeminiSetupSchema.parse(body.setup);
        expect(setup.systemInstruction.parts[0]!.text, label).toBe(openai.session.instructions);
        expect(setup.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).toBe(persona === 'mars' ? 'Orus' : 'Aoede');
        expect(body.voice).toBe(persona === 'mars' ? 'Orus' : 'Aoede');
        expect(setup.tools[0]!.functionDeclarations.map((declaration) => declaration.name)).toEqual(openai.session.tools.map((tool: { name: string }) => tool.name));
        // The same prompts as OpenAI's: only the shape, the voice and the cache plan's judgement differ.
        expect([body.promptSha256, body.inputSha256]).toEqual([openai.promptSha256, openai.inputSha256]);
        expect(body.blocks.find((block: { kind: string }) => block.kind === 'topic')?.source, label).toBe(topic.topicBlock);
        expect(body.warnings.some((warning: string) => warning.startsWith('topic-missing:'))).toBe(topic.warning !== undefined);
        expect(body.warnings.filter((warning: string) => warning.startsWith('gemini-schema:'))).toEqual([]);
        expect(body.cache).toMatchObject({ provider: 'gemini', caching: 'none', minimumTokens: null });
        expect(body.cache.boundaries.every((boundary: { belowMinimum: unknown }) => boundary.belowMinimum === null)).toBe(true);
        const [event] = await trace(runId);
        expect(event!.request).toMatchObject({ provider: 'gemini' });
        expect(event!.cache).toMatchObject({ provider: 'gemini', caching: 'none' });
        expect(event!.realtime.voice).toBe(body.voice);
      }
    }
  });

  it('has its own ETag, which a later gemini call honours with a 304 (traced)', async () => {
    const { app, get, trace } = await harness();
    const { etag: openai } = await get(`/context/mars?now=${NOW}`);
    const { etag: gemini } = await get(`/context/mars?now=${NOW}&provider=gemini`);
    expect(gemini).not.toBe(openai);
    const again = await app.inject({ url: `/context/mars?now=${NOW}&provider=gemini&runId=gemini-304`, headers: { 'if-none-match': gemini } });
    expect(again.statusCode).toBe(304);
    const openaiWithGeminiTag = await app.inject({ url: `/context/mars?now=${NOW}`, headers: { 'if-none-match': gemini } });
    expect(openaiWithGeminiTag.statusCode).toBe(200);
    expect((await trace('gemini-304'))[0]).toMatchObject({ status: 304, outcome: 'not-modified', request: { provider: 'gemini' } });
  });

  it('the topic route judges its cache plan for the provider and traces it', async () => {
    const { get, trace } = await harness();
    const { body } = await get('/context/topic/real-estate?provider=gemini&runId=topic-gemini');
    expect(body.cache).toMatchObject({ provider: 'gemini', caching: 'none', minimumTokens: null });
    const { body: openai } = await get('/context/topic/real-estate');
    expect(openai.cache).toMatchObject({ provider: 'openai', caching: 'prefix', minimumTokens: 1024 });
    expect(body.inputPrompt).toBe(openai.inputPrompt);
    expect((await trace('topic-gemini'))[0]!.request).toMatchObject({ provider: 'gemini' });
  });
});

describe('provider=azure', () => {
  it("answers OpenAI's session, voice and cache plan, named azure in the answer and the trace", async () => {
    const { get, trace } = await harness();
    const { body: openai, etag: openaiTag } = await get(`/context/venus?now=${NOW}`);
    const { body, etag } = await get(`/context/venus?now=${NOW}&provider=azure&runId=azure-run`);
    expect(RealtimeSessionSchema.parse(body.session)).toEqual(openai.session);
    expect(body).toMatchObject({ provider: 'azure', voice: 'coral', cache: { provider: 'openai', caching: 'prefix' } });
    expect(body.setup).toBeUndefined();
    expect(openai.provider).toBe('openai');
    expect(etag).not.toBe(openaiTag);
    expect((await trace('azure-run'))[0]!.request).toMatchObject({ provider: 'azure' });
  });
});

describe('an unknown provider', () => {
  it('is a 400 problem naming the field, on every route that takes one, and nothing is traced', async () => {
    const { app } = await harness();
    for (const url of ['/context/mars?provider=anthropic', '/context/venus?provider=Gemini', '/context/topic/real-estate?provider=', '/context/mars?provider=gemini&provider=openai']) {
      const response = await app.inject(url);
      expect(response.statusCode, url).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = response.json();
      expect(problem.code).toBe('CC_VALIDATION_FAILED');
      expect(JSON.stringify(problem.errors), url).toContain('provider');
    }
    expect((await app.inject('/runs')).json().runs).toEqual([]);
  });
});

describe('?model= on the persona and topic routes', () => {
  /** Each model's delivery, as the refresh of the same connect answers it. */
  const MODELS = [
    { query: '', delivery: 'conversation-item', unknown: false },
    { query: 'provider=azure&model=my-deployment', delivery: 'conversation-item', unknown: false },
    { query: 'provider=gemini&model=gemini-2.5-flash-native-audio-preview-12-2025', delivery: 'client-content', unknown: false },
    { query: 'provider=gemini&model=gemini-3.1-flash-live-preview', delivery: 'reconnect', unknown: false },
    { query: 'provider=gemini&model=gemini-3-pro-live', delivery: 'reconnect', unknown: true },
    { query: 'provider=gemini', delivery: 'reconnect', unknown: true },
  ] as const;

  it('say which refresh delivery the model gets, as its refresh answers it, traced with the run; an unknown Gemini model gets the reconnect with a warning', async () => {
    const { get, app, trace, brainRoot } = await harness();
    // Today's note with one line, so the line appended below is a change of the live context (not one of six that pushes the weakest out).
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), '# 2026-11-30\n\n- Woke early and felt calm about the week.\n');
    for (const [i, model] of MODELS.entries()) {
      const runId = `model-${i}`;
      const { body } = await get(`/context/mars?now=${NOW}&runId=${runId}&${model.query}`);
      expect(body.delivery, model.query).toBe(model.delivery);
      expect(body.warnings.some((warning: string) => warning.startsWith('delivery-model-unknown:')), model.query).toBe(model.unknown);
      const [event] = await trace(runId);
      expect(event!.request, model.query).toMatchObject({ delivery: model.delivery });
      const { body: topic } = await get(`/context/topic/real-estate?runId=topic-${runId}&${model.query}`);
      expect(topic.delivery, model.query).toBe(model.delivery);
      expect(topic.warnings.some((warning: string) => warning.startsWith('delivery-model-unknown:')), model.query).toBe(model.unknown);
      const [topicEvent] = await trace(`topic-${runId}`);
      expect(topicEvent!.request, model.query).toMatchObject({ delivery: model.delivery, model: /model=([^&]+)/.exec(model.query)?.[1] ?? null });
    }
    // What the connect said is what its refresh does.
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '- Felt a quiet joy at the harbour lighthouse.\n');
    for (const [i, model] of MODELS.entries()) {
      const refresh = await app.inject(`/context/mars/refresh?runId=model-${i}&now=2026-11-30T17:09:00Z`);
      expect(refresh.statusCode, model.query).toBe(200);
      expect(refresh.json().delivery, model.query).toBe(model.delivery);
    }
  });

  it('is a 400 naming the field when it is not a model name, on the topic route too, and nothing is traced', async () => {
    const { app } = await harness();
    for (const url of [`/context/mars?model=Not%20A%20Model`, '/context/topic/real-estate?model=Not%20A%20Model']) {
      const response = await app.inject(url);
      expect(response.statusCode, url).toBe(400);
      expect(JSON.stringify(response.json().errors), url).toContain('model');
    }
    expect((await app.inject('/runs')).json().runs).toEqual([]);
  });
});
