import { z } from 'zod';
import type { GeminiContextEvent, OpenAIContextEvent } from '../src/core/persona/refresh.js';
import { ANSWER_PROVIDERS, DELIVERIES } from '../src/core/persona/providers.js';
import { AnswerFields } from './compiled.js';
import { GeminiSetupSchema } from './gemini.js';
import { InstantSchema, MAX_ID_LENGTH, ModelSchema, REFRESH_RUN_SUFFIX, RunIdSchema, TopicIdSchema } from './ids.js';
import { MAX_TOPIC_NAME_INPUT } from './context.js';

/** `GET /context/:persona/refresh` (issue 24): a mid-call refresh against the connect's run. */

/** The longest connect run id a refresh takes: its refresh run's id must still be a run id. */
export const MAX_REFRESHED_RUN_ID = MAX_ID_LENGTH - REFRESH_RUN_SUFFIX.length;

/** The run a connect's refreshes are traced in: `<connect run>:refresh`. */
export function refreshRunId(parentRunId: string): string {
  return `${parentRunId}${REFRESH_RUN_SUFFIX}`;
}

export const RefreshQuerySchema = z.strictObject({
  runId: RunIdSchema.refine((id) => id.length <= MAX_REFRESHED_RUN_ID, `must be at most ${MAX_REFRESHED_RUN_ID} characters (its refreshes are traced as <runId>${REFRESH_RUN_SUFFIX})`).meta({
    description: `the connect's run (the \`runId\` of its GET /context/:persona answer, at most ${MAX_REFRESHED_RUN_ID} characters): yours, holding a delivered compile of this persona`,
  }),
  provider: z.enum(ANSWER_PROVIDERS).optional().meta({ description: "the event's form: `openai` or `azure` (a system message item), `gemini` (client content); default: the connect's provider" }),
  topicName: z
    .string()
    .max(MAX_TOPIC_NAME_INPUT)
    .optional()
    .meta({ description: 'the topicName the connect was given, if any: it is not traced as text, so a refresh is told it again (else the topic block differs by its name)' }),
  model: ModelSchema.optional().meta({
    description:
      "the realtime model the call runs on, which chooses the delivery (docs/providers.md): a Gemini Live model that takes mid-session client content gets `client-content`, one that refuses it (3.1 and later) or one not known gets `reconnect`; default: the connect's `model`",
  }),
  now: InstantSchema.optional().meta({ description: 'ISO 8601 instant to compile for (default: the time of the request)' }),
  baseline: z.enum(['static', 'stale']).optional().meta({
    description:
      "a catch-up: the call connected on a fallback while the service was out, so `runId` (the id the client made at connect) holds no connect. `static`: the call has the persona's static session, no live context; `stale`: the last good session, the connect of run `baselineRunId`. The refresh then opens run `runId` itself and delivers what the call misses; later refreshes compare with what it delivered. Ignored when `runId` holds a connect",
  }),
  baselineRunId: RunIdSchema.optional().meta({ description: 'with `baseline=stale`: the run of the stale session the call was given (yours, a connect of this persona)' }),
  topicId: TopicIdSchema.optional().meta({ description: 'a catch-up only: the topicId the call connected with (a connect reads it from its trace)' }),
  // Fails open as on the persona routes: an unusable zone compiles in the operator's, with a `timezone-invalid:` warning.
  timezone: z.string().optional().meta({ description: "a catch-up only: the timezone the call connected with; an empty or unknown zone compiles in the operator's zone with a `timezone-invalid:` warning, never a 400" }),
});
export type RefreshQuery = z.infer<typeof RefreshQuerySchema>;

export const OpenAIContextEventSchema = z
  .strictObject({
    type: z.literal('conversation.item.create'),
    item: z.strictObject({
      type: z.literal('message'),
      role: z.literal('system'),
      content: z.array(z.strictObject({ type: z.literal('input_text'), text: z.string() })).length(1),
    }),
  })
  .meta({ id: 'OpenAIContextEvent', description: 'OpenAI Realtime (and Azure): send on the session as it is; it adds a system message without asking for a response' }) satisfies z.ZodType<OpenAIContextEvent>;

export const GeminiContextEventSchema = z
  .strictObject({
    clientContent: z.strictObject({
      turns: z.array(z.strictObject({ role: z.literal('user'), parts: z.array(z.strictObject({ text: z.string() })).length(1) })).length(1),
      turnComplete: z.literal(false),
    }),
  })
  .meta({
    id: 'GeminiContextEvent',
    description: 'Gemini Live: send on the WebSocket between turns (it interrupts a generation in progress); turnComplete false asks for no answer',
  }) satisfies z.ZodType<GeminiContextEvent>;

export const BlockChangeSchema = z
  .object({
    block: z.string().meta({ description: '`live-context` or `topic`' }),
    source: z.string(),
    added: z.number().int().meta({ description: 'lines new since the connect' }),
    removed: z.number().int().meta({ description: 'lines of the connect no longer there' }),
  })
  .meta({ id: 'BlockChange' });

const refreshResult = {
  parentRunId: z.string().meta({ description: "the connect's run this refresh compared with" }),
  provider: z.enum(ANSWER_PROVIDERS),
  delivery: z.enum(DELIVERIES).meta({
    description:
      'how `event` or `setup` reaches the model: `conversation-item` (OpenAI, Azure: send `event` on the session, or its sideband WebSocket), `client-content` (Gemini 2.x Live: `live.sendClientContent(event.clientContent)`), `reconnect` (Gemini 3.1+ Live: connect again with `setup` and the call’s sessionResumption handle; `event` is null)',
  }),
  text: z.string().meta({
    description:
      'the changed lines only, in realtime-safe ASCII: a line saying since when (with the clock of now), then each changed block as the input encodes it — one advisory JSON object per line holding its new lines (`New:`) and those gone (`No longer:`)',
  }),
  event: z
    .union([OpenAIContextEventSchema, GeminiContextEventSchema])
    .nullable()
    .meta({ description: "the provider's event that delivers `text` mid-session, never the whole instructions again; null for a `reconnect`" }),
  changes: z.array(BlockChangeSchema),
  inputSha256: z.string().nullable().meta({ description: "sha256 of the fresh compile's input prompt (the live context now)" }),
  setup: GeminiSetupSchema.optional().meta({ description: 'a `reconnect` only: the whole updated Gemini setup, to send on a new connection with the call’s sessionResumption handle' }),
};

/** The members of a refresh answer that its result holds; the rest are the request's. */
export const RefreshResultSchema = z.object(refreshResult);

export const RefreshResponseSchema = z
  .object({
    runId: z.string().meta({ description: 'the refresh run this answer was traced under: `<parentRunId>:refresh` (also `x-run-id`)' }),
    persona: z.string(),
    ...refreshResult,
    warnings: AnswerFields.warnings,
  })
  .meta({ id: 'PersonaRefresh', description: 'what changed in the live context since the connect, and the event that delivers it' });

/** What a refresh's trace event records of it: counts and a digest, never the lines. */
export const TraceRefreshSchema = z
  .object({
    provider: z.enum(ANSWER_PROVIDERS),
    delivery: z.enum(DELIVERIES).optional().meta({ description: 'how it reached the model (absent in events traced before deliveries were chosen by model)' }),
    changes: z.array(BlockChangeSchema),
    textSha256: z.string().nullable().meta({ description: 'sha256 of the delivered text; null at 304' }),
    chars: z.number().int().meta({ description: 'characters of the delivered text (0 at 304)' }),
  })
  .meta({ id: 'TraceRefresh', description: 'a mid-call refresh: what changed since its parent run, as delivered' });
export type TraceRefresh = z.infer<typeof TraceRefreshSchema>;
