import { z } from 'zod';
import { PERSONAS } from '../src/core/persona/personas.js';
import { ProviderSchema } from './context-answers.js';
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

export * from './context-answers.js';

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
