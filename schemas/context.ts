import { z } from 'zod';
import { isValidTimeZone, parseInstant } from '../src/core/time.js';
import { CompiledResponseSchema, RealtimeSessionSchema, ToolSchema, TopicSummarySchema } from './compiled.js';
import { PersonaIdSchema, RunIdSchema, TopicIdSchema } from './ids.js';

/** A display label from a URL is clamped to 80 chars later; anything this long is not one. */
export const MAX_TOPIC_NAME_INPUT = 1000;

const format = z.enum(['json', 'text']).optional();
const sanitize = z.enum(['ascii']).optional();
const topicName = z.string().max(MAX_TOPIC_NAME_INPUT).optional();

export const PersonaParamsSchema = z.strictObject({ persona: PersonaIdSchema });

/** `GET /context/:persona` query (SPEC §5). Unknown parameters are a 400, like every other input. */
export const PersonaContextQuerySchema = z.strictObject({
  // Any text, even repeated: a call link always connects. An unusable id is a warning
  // (`topic-unsafe:`) and the generic context, never a 400 (src/sources/persona.ts).
  topicId: z.union([z.string(), z.array(z.string())]).optional(),
  topicName,
  timezone: z.string().refine(isValidTimeZone, 'must be an IANA time zone such as UTC or Europe/London').optional(),
  now: z
    .string()
    .refine((text) => parseInstant(text) !== undefined, 'must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:20:00Z')
    .optional(),
  runId: RunIdSchema.optional(),
  sanitize,
  format,
});

export type PersonaContextQuery = z.infer<typeof PersonaContextQuerySchema>;

export const TopicParamsSchema = z.strictObject({ topicId: TopicIdSchema });

/** `GET /context/topic/:topicId` query: no clock, so the answer (and its ETag) changes only with the topic. */
export const TopicContextQuerySchema = z.strictObject({
  topicName,
  runId: RunIdSchema.optional(),
  sanitize,
  format,
});

export type TopicContextQuery = z.infer<typeof TopicContextQuerySchema>;

/**
 * A persona compile: the compile response plus `persona`, `liveContext`, `topic`, `voice`,
 * `tools` (each `{type: "function", name, description, parameters}` with a JSON Schema) and
 * `session`, the realtime session configuration built from them (SPEC §4, §9).
 */
export const PersonaContextResponseSchema = CompiledResponseSchema.extend({
  persona: z.string(),
  liveContext: z.string(),
  topic: TopicSummarySchema.nullable(),
  voice: z.string(),
  tools: z.array(ToolSchema),
  session: RealtimeSessionSchema,
});

/** A topic-only compile: the topic block is the input prompt; `persona` is the subject `topic`. */
export const TopicContextResponseSchema = CompiledResponseSchema.extend({
  persona: z.string(),
  topic: TopicSummarySchema,
});
