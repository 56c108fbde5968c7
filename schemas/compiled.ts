import { z } from 'zod';
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

export const ToolSchema = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});

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
  warnings: z.array(z.string()),
});

export type CompiledResponse = z.infer<typeof CompiledResponseSchema>;
