import { z } from 'zod';
import type { RealtimeSession } from '../src/core/persona/session.js';
import type { PersonaTool } from '../src/core/persona/tools.js';
import { AUTHORITIES, BLOCK_KINDS, CACHE_CLASSES } from '../src/core/types.js';

/** A block as delivered in a response: everything but its content. */
export const BlockSummarySchema = z.object({
  kind: z.enum(BLOCK_KINDS),
  authority: z.enum(AUTHORITIES),
  cacheClass: z.enum(CACHE_CLASSES),
  source: z.string(),
  chars: z.number().int(),
  approxTokens: z.number().int(),
  sha256: z.string(),
});

export const CacheBoundarySchema = z.object({
  class: z.enum(CACHE_CLASSES),
  afterBlock: z.enum(BLOCK_KINDS),
  blockIndex: z.number().int(),
  prefixChars: z.number().int(),
  prefixSha256: z.string(),
  approxTokens: z.number().int(),
  belowMinimum: z.boolean(),
});

export const CachePlanSchema = z.object({
  schemaVersion: z.number().int(),
  routeKey: z.string(),
  minimumTokens: z.number().int(),
  boundaries: z.array(CacheBoundarySchema),
});

export const BudgetSchema = z.object({
  limitChars: z.number().int(),
  usedChars: z.number().int(),
  remainingChars: z.number().int(),
  omitted: z.object({ memory: z.number().int(), briefing: z.number().int() }),
  blocks: z.record(z.string(), z.number().int()),
});

export const SourceSummarySchema = z.object({
  path: z.string(),
  sha256: z.string(),
  truncated: z.boolean(),
});

/** A function tool as realtime APIs take it; `parameters` is a JSON Schema object. */
export const ToolSchema = z.strictObject({
  type: z.literal('function'),
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
}) satisfies z.ZodType<Omit<PersonaTool, 'parameters'> & { parameters: Record<string, unknown> }>;

/**
 * The persona answer's `session`: what a voice server passes to the realtime calls endpoint
 * or `session.update` unchanged (SPEC §4); the model is the caller's to add.
 */
export const RealtimeSessionSchema = z.strictObject({
  type: z.literal('realtime'),
  instructions: z.string(),
  audio: z.strictObject({ output: z.strictObject({ voice: z.string() }) }),
  tools: z.array(ToolSchema),
}) satisfies z.ZodType<Omit<RealtimeSession, 'tools'> & { tools: unknown[] }>;

export const TopicSummarySchema = z.object({
  topicId: z.string(),
  found: z.boolean(),
  chars: z.number().int(),
  /** The topic file was over its cap and only its newest part was kept. */
  truncated: z.boolean().optional(),
});

/**
 * A compile response (SPEC §9), shared by `POST /compile` (`worker`) and the persona routes
 * (`persona` plus the persona-only fields).
 */
export const CompiledResponseSchema = z.object({
  runId: z.string(),
  worker: z.string().optional(),
  persona: z.string().optional(),
  surface: z.string().optional(),
  phase: z.string().optional(),
  systemPrompt: z.string(),
  inputPrompt: z.string().nullable(),
  instructions: z.string(),
  tokens: z.object({ total: z.number().int(), byKind: z.record(z.string(), z.number().int()) }),
  redactions: z.object({ email: z.number().int(), phone: z.number().int() }),
  promptSha256: z.string(),
  inputSha256: z.string().nullable(),
  blocks: z.array(BlockSummarySchema),
  budget: BudgetSchema,
  cache: CachePlanSchema,
  sources: z.array(SourceSummarySchema),
  liveContext: z.string().optional(),
  topic: TopicSummarySchema.nullable().optional(),
  voice: z.string().optional(),
  tools: z.array(ToolSchema).optional(),
  session: RealtimeSessionSchema.optional(),
  warnings: z.array(z.string()),
});

export type CompiledResponse = z.infer<typeof CompiledResponseSchema>;
