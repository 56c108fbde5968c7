import { z } from 'zod';
import { ANSWER_PROVIDERS, DELIVERIES } from '../src/core/persona/providers.js';
import { AnswerFields, CacheBoundarySchema, CompiledFieldsSchema, RealtimeSessionSchema, TopicSummarySchema } from './compiled.js';
import { GeminiSetupSchema } from './gemini.js';

/*
 * What the context routes answer (their requests are context.ts, which re-exports these):
 * the persona answer, full and lean (`view=session`), and the topic answer.
 */

/** The realtime API an answer is shaped for (issue 24). A strict enum: anything else is a 400 naming the field. */
export const ProviderSchema = z.enum(ANSWER_PROVIDERS).meta({
  id: 'Provider',
  description:
    'the realtime API the answer is for: `openai` (default: `session`), `gemini` (Gemini Live: `setup` instead of `session`, its own voice, tools in Gemini’s schema, a cache plan that caches nothing) or `azure` (Azure OpenAI: OpenAI’s `session`; the model you add is your deployment name)',
});

const persona = z.string().meta({ description: 'the persona compiled (`topic` on the topic route)' });
/** Per request, not per compiled result: the same prompt is answered to calls on different models. */
const delivery = z.enum(DELIVERIES).meta({
  description:
    "how a mid-call refresh reaches this call's model (`provider` and `model`; docs/providers.md), as `GET /context/:persona/refresh` will answer it: `conversation-item` (OpenAI, Azure), `client-content` (a Gemini Live model that takes mid-session client content), `reconnect` (Gemini 3.1+ Live, or a model not known, with a `delivery-model-unknown:` warning)",
});
const { sources, warnings, hud } = AnswerFields;
const surface = z.literal('voice');

/** What a persona answer carries beside the compile, from the compiled result alone (written once per shared result). */
const personaExtra = {
  liveContext: z.string().meta({ description: 'the delivered live-context block (≤ 2500 chars, scrubbed)' }),
  topic: TopicSummarySchema.nullable().meta({ description: 'null without a usable topicId (none, or a `topic-unsafe:` one)' }),
  provider: ProviderSchema.meta({ description: 'the realtime API the answer is shaped for (`?provider=`, default `openai`)' }),
  voice: z.string().meta({
    description: "the realtime voice name for the provider: the persona's voice from the brain's personas/settings.json, else its default (OpenAI and Azure: mars ash, venus coral; Gemini: Orus, Aoede)",
  }),
};

/**
 * The realtime configuration to send, one of the two by provider. Optional members are
 * written after the required ones, so they come last in the schema too (before `hud`): the
 * bytes are the same whoever writes them.
 */
const personaRealtime = {
  session: RealtimeSessionSchema.optional().meta({ description: 'OpenAI and Azure (not with `provider=gemini`): the realtime session to send' }),
  setup: GeminiSetupSchema.optional().meta({ description: 'Gemini only (`provider=gemini`), instead of `session`: the Live setup to send' }),
};

/**
 * The compile as a persona answer carries it: each text once. The prompts are the
 * `systemPrompt`/`inputPrompt` pair, which says what is stable and cacheable; their join
 * (`instructions`) is `session.instructions` (or the setup's) in realtime-safe ASCII, and
 * `format=text` answers it as it was delivered.
 */
const personaCompiled = CompiledFieldsSchema.omit({ instructions: true });

/** The members of a persona answer that depend on the compiled result alone; the rest are the request's. */
export const PersonaResultSchema = personaCompiled.extend({ ...personaExtra, ...personaRealtime });
export type PersonaExtra = z.infer<z.ZodObject<typeof personaExtra & typeof personaRealtime>>;

/**
 * A persona compile: the compile response without `instructions` (each text once: the
 * prompts are the `systemPrompt`/`inputPrompt` pair) plus `persona`, `liveContext`, `topic`,
 * `provider`, `voice` and `session` — or, for `provider=gemini`, `setup` — the realtime
 * configuration, which holds the tools (`session.tools`: each `{type: "function", name,
 * description, parameters}` with a JSON Schema; the setup declares them translated) and the
 * instructions (docs/voice-server.md, docs/providers.md).
 */
export const PersonaContextResponseSchema = z
  .object({
    runId: z.string(),
    persona,
    ...personaCompiled.shape,
    sources,
    ...personaExtra,
    warnings,
    surface,
    delivery,
    ...personaRealtime,
    hud,
  })
  .meta({ id: 'PersonaCompiled', description: 'a voice persona compile (GET /context/mars, /context/venus): prompts, blocks, budget, cache plan, and the realtime session (a Gemini setup with provider=gemini)' });

/**
 * A cache boundary as the lean view carries it: its class and the length and digest of the
 * prefix, as the full answer's `cache.boundaries` and the trace record them, so an operator
 * matches a connect to its run (and the client finds the stable prefix it keeps).
 */
export const CacheBoundaryDigestSchema = CacheBoundarySchema.pick({ class: true, prefixChars: true, prefixSha256: true }).meta({
  id: 'CacheBoundaryDigest',
  description: "a cache boundary's class, prefix length and prefix digest, as `cache.boundaries` of the full answer and the trace hold them",
});

/** What the lean view carries from the compiled result alone (written once per shared result). */
const sessionViewResult = {
  promptSha256: CompiledFieldsSchema.shape.promptSha256,
  cacheBoundaries: z.array(CacheBoundaryDigestSchema).meta({ description: "the cache plan's boundaries, one per cache class present, most stable first: class and prefix digest only" }),
  provider: personaExtra.provider,
};

/** The members of the lean view that depend on the compiled result alone; the rest are the request's. */
export const PersonaSessionResultSchema = z.object({ ...sessionViewResult, ...personaRealtime });

/**
 * `GET /context/:persona?view=session`: only what a realtime connect uses — `session` (or
 * `setup` for Gemini), the run, persona, provider, warnings and refresh `delivery` — and the
 * digests that match it to its trace. The prompt text is in `session`/`setup` only.
 */
export const PersonaSessionResponseSchema = z
  .object({
    runId: z.string(),
    persona,
    ...sessionViewResult,
    warnings,
    delivery,
    ...personaRealtime,
  })
  .meta({
    id: 'PersonaSession',
    description: 'the lean answer for a realtime connect (GET /context/mars?view=session): the session (a Gemini setup with provider=gemini), its run, warnings and refresh delivery, and the digests of its prompt and cache boundaries',
  });

const topicExtra = { topic: TopicSummarySchema };

/** The members of a topic answer that depend on the compiled result alone. */
export const TopicResultSchema = CompiledFieldsSchema.extend(topicExtra);
export type TopicExtra = z.infer<z.ZodObject<typeof topicExtra>>;

/** A topic-only compile: the topic block is the input prompt; `persona` is the subject `topic`. */
export const TopicContextResponseSchema = z
  .object({
    runId: z.string(),
    persona,
    ...CompiledFieldsSchema.shape,
    sources,
    ...topicExtra,
    warnings,
    surface,
    delivery,
    hud,
  })
  .meta({ id: 'TopicCompiled', description: 'the topic block alone, compiled behind a short built-in frame' });
