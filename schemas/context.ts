import { z } from 'zod';
import { PERSONAS } from '../src/core/persona/personas.js';
import { ANSWER_PROVIDERS } from '../src/core/persona/voices.js';
import { DELIVERIES } from '../src/core/persona/delivery.js';
import { AnswerFields, CacheBoundarySchema, CompiledFieldsSchema, RealtimeSessionSchema, TopicSummarySchema } from './compiled.js';
import { GeminiSetupSchema } from './gemini.js';
import { CompileRunIdSchema, EngineSchema, FormatSchema, HudFlagSchema, InstantSchema, ModelSchema, PersonaIdSchema, REFRESH_RUN_SUFFIX, TopicIdSchema } from './ids.js';

/** A display label from a URL is clamped to 80 chars later; anything this long is not one. */
export const MAX_TOPIC_NAME_INPUT = 1000;

const sanitize = z
  .enum(['ascii'])
  .optional()
  .meta({ description: '`ascii` transliterates typographic Unicode in every delivered block (digests describe the ASCII bytes)' });
const topicName = z
  .string()
  .max(MAX_TOPIC_NAME_INPUT)
  .optional()
  .meta({
    description:
      "a display label: made one line, control characters removed, at most 80 chars; advisory, inside the topic block only (on a persona route without topic notes, the topic block is one line naming it: \"Called from the topic '<name>'; no notes on it yet.\")",
  });
const runId = CompileRunIdSchema.optional().meta({ description: `the run to trace this delivery under (default: a new one); not one ending in ${REFRESH_RUN_SUFFIX}, which only a refresh of its connect opens` });

/** The realtime API an answer is shaped for (issue 24). A strict enum: anything else is a 400 naming the field. */
export const ProviderSchema = z.enum(ANSWER_PROVIDERS).meta({
  id: 'Provider',
  description:
    'the realtime API the answer is for: `openai` (default: `session`), `gemini` (Gemini Live: `setup` instead of `session`, its own voice, tools in Gemini’s schema, a cache plan that caches nothing) or `azure` (Azure OpenAI: OpenAI’s `session`; the model you add is your deployment name)',
});
const provider = ProviderSchema.optional();

export const PersonaParamsSchema = z.strictObject({
  persona: PersonaIdSchema.meta({
    description: 'a built-in persona; another slug is a 404 listing them, a non-slug a 400 CC_UNSAFE_ID',
    examples: PERSONAS.map((persona) => persona.key),
  }),
});

/** Which answer a persona route gives: the whole compile (`full`, the default) or only what a realtime connect uses (`session`). */
export const ANSWER_VIEWS = ['full', 'session'] as const;
export type AnswerView = (typeof ANSWER_VIEWS)[number];
export const AnswerViewSchema = z.enum(ANSWER_VIEWS).meta({
  id: 'AnswerView',
  description:
    '`session`: only what a realtime connect uses (`PersonaSession`: `session` or Gemini\'s `setup`, `runId`, `persona`, `provider`, `warnings`, `delivery`, `promptSha256` and the cache boundaries\' digests), a quarter of the full answer\'s bytes, traced the same way; not with `format=text` or `hud` (a 400). `full` (default): the whole compile (`PersonaCompiled`)',
});

/** `GET /context/:persona` query. Unknown parameters are a 400, like every other input. */
export const PersonaContextQuerySchema = z.strictObject({
  // Any text, even repeated: a call link always connects. An unusable id is a warning
  // (`topic-unsafe:`) and the generic context, never a 400 (src/sources/persona.ts).
  topicId: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .meta({
      description:
        'adds `topics/<topicId>.md` (newest part kept when over its cap) when it is a slug (`^[a-z0-9][a-z0-9-]*$`, at most 128 chars). Anything else, or a missing file, never fails the call: no topic block and a `topic-unsafe:`, `topic-missing:` or `topic-unreadable:` warning',
    }),
  topicName,
  // Any text: optional input fails open, as topicId does. An unusable zone is a warning
  // (`timezone-invalid:`) and the operator's zone, never a 400 (src/sources/persona/zone.ts).
  timezone: z
    .string()
    .optional()
    .meta({
      description:
        "the operator's IANA zone, in any casing (a canonical zone is spelled as tzdb spells it: america/new_york is America/New_York); default: memory/heartbeat-state.json, else DEFAULT_TIMEZONE. An empty or unknown zone never fails the call: it compiles in that default zone with a `timezone-invalid:` warning naming the value",
      examples: ['Europe/London'],
    }),
  now: InstantSchema.optional().meta({
    description: 'ISO 8601 instant with Z or an offset; the same now gives the same prompt. Default: the time of the request. Invalid: 400',
  }),
  runId,
  sanitize,
  engine: EngineSchema.optional(),
  provider,
  model: ModelSchema.optional().meta({
    description: "the realtime model the call runs on: recorded with the run, it chooses how the call's refreshes are delivered (`delivery`; `GET /context/:persona/refresh`, docs/providers.md)",
  }),
  hud: HudFlagSchema,
  format: FormatSchema,
  view: AnswerViewSchema.optional(),
}).superRefine((query, context) => {
  // The lean view is a JSON shape of its own: the text is already the instructions alone, and the HUD is the full answer's.
  if (query.view !== 'session') return;
  if (query.format === 'text') context.addIssue({ code: 'custom', path: ['view'], message: '`view=session` is a JSON answer; `format=text` already gives the instructions alone: ask for one or the other' });
  if (query.hud === '1' || query.hud === 'true') context.addIssue({ code: 'custom', path: ['view'], message: '`view=session` carries no HUD: ask for `hud` on the full answer' });
});

export type PersonaContextQuery = z.infer<typeof PersonaContextQuerySchema>;

export const TopicParamsSchema = z.strictObject({ topicId: TopicIdSchema });

/** `GET /context/topic/:topicId` query: no clock, so the answer (and its ETag) changes only with the topic. */
export const TopicContextQuerySchema = z.strictObject({
  topicName,
  runId,
  sanitize,
  provider: ProviderSchema.optional().meta({ description: 'the realtime API the topic is for: only the cache plan differs (`gemini` caches nothing); default `openai`' }),
  model: ModelSchema.optional().meta({
    description: 'the realtime model the call runs on: it chooses how the topic reaches the model mid-session (`delivery`, as a refresh is delivered; docs/providers.md)',
  }),
  hud: HudFlagSchema,
  format: FormatSchema,
});

export type TopicContextQuery = z.infer<typeof TopicContextQuerySchema>;

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
