import { z } from 'zod';
import type { RealtimeSession } from '../src/core/persona/session.js';
import { FUNCTION_NAME, type PersonaTool } from '../src/core/persona/tools.js';
import { INTERACTION_FIELDS, RECALL_POLICIES, type Receipts, type RecallDecision } from '../src/core/governance.js';
import type { Hud } from '../src/core/hud.js';
import type { RedactionCounts } from '../src/core/pii.js';
import { AUTHORITIES, BLOCK_KINDS, CACHE_CLASSES, CACHE_PROVIDERS, PHASES, SURFACES } from '../src/core/types.js';

/**
 * The compile responses (README, "A tour with curl"; docs/compiler.md). Every member a response carries is required and listed in
 * the order it is written, so the bytes are the same whether Fastify's serializer, the
 * delivery's encoder or `JSON.stringify` of the parsed object writes them.
 */

const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/** A block as delivered in a response: everything but its content. */
export const BlockSummarySchema = z
  .object({
    kind: z.enum(BLOCK_KINDS),
    authority: z.enum(AUTHORITIES),
    cacheClass: z.enum(CACHE_CLASSES),
    source: z.string().meta({ description: 'a brain path (`workers/scribe/identity.md`), `builtin:*` or `request:*`' }),
    chars: z.number().int(),
    approxTokens: z.number().int().meta({ description: 'deterministic estimate (≈ bytes/4, more for code fences and table pipes)' }),
    sha256: Sha256Hex.meta({ description: 'sha256 of the block content as delivered' }),
  })
  .meta({ id: 'BlockSummary' });

export const CacheBoundarySchema = z
  .object({
    class: z.enum(CACHE_CLASSES),
    afterBlock: z.enum(BLOCK_KINDS).meta({ description: 'kind of the last block of this class' }),
    blockIndex: z.number().int().meta({ description: 'index of that block in `blocks`' }),
    prefixChars: z.number().int(),
    prefixSha256: Sha256Hex.meta({ description: 'sha256 of `systemPrompt` up to here: an Anthropic `cache_control` point' }),
    approxTokens: z.number().int().meta({ description: 'the estimate (approxTokens) of the prefix, summed over its segments' }),
    tokens: z
      .number()
      .int()
      .meta({ description: "tokens of the prefix as `tokenizer` counts them (exactly, for o200k_base), plus the session's tool definitions (`toolTokens`)" }),
    belowMinimum: z
      .boolean()
      .nullable()
      .meta({
        description:
          '`tokens` is under the provider’s minimum cacheable size (`minimumTokens`), so caching the prefix does nothing; null when the provider caches nothing (`caching: "none"`)',
      }),
  })
  .meta({ id: 'CacheBoundary' });

export const CachePlanSchema = z
  .object({
    schemaVersion: z.number().int(),
    routeKey: z.string().meta({
      description: 'for OpenAI `prompt_cache_key`: derived from the worker-stable prefix, the schema version and `engine` (when named), so two engines never share one',
    }),
    engine: z
      .string()
      .nullable()
      .meta({ description: 'the engine the request named (`engine`); it enters the route key only: every boundary hash is the same for every engine' }),
    tokenizer: z.string().meta({ description: 'what the boundaries’ `tokens` were counted with: `o200k_base` (OpenAI’s GPT-4o, GPT-4.1, GPT-5 and realtime models)' }),
    provider: z.enum(CACHE_PROVIDERS).meta({
      description:
        'whose prompt caching the plan is judged by: the persona route’s `provider` (`azure` is judged as `openai`), `openai` for POST /compile',
    }),
    caching: z.enum(['prefix', 'none']).meta({
      description:
        '`prefix`: the provider caches exact prefixes of `minimumTokens` or more, tool definitions included (OpenAI); `none`: it caches nothing (Gemini Live), and no boundary is judged',
    }),
    minimumTokens: z.number().int().nullable().meta({ description: 'the provider’s minimum cacheable prefix, in tokens; null when it caches nothing' }),
    toolTokens: z
      .number()
      .int()
      .meta({ description: "tokens of the tool definitions sent beside the instructions (the persona answer's `session.tools`), counted into every boundary; 0 without any" }),
    boundaries: z.array(CacheBoundarySchema).meta({ description: 'one per cache class present, after its last block' }),
  })
  .meta({ id: 'CachePlan' });

export const BudgetSchema = z
  .object({
    limitChars: z.number().int(),
    usedChars: z.number().int(),
    remainingChars: z.number().int(),
    omitted: z
      .object({ memory: z.number().int(), briefing: z.number().int(), experience: z.number().int() })
      .meta({ description: 'optional items left out because they did not fit' }),
    blocks: z.record(z.string(), z.number().int()).meta({ description: 'per-kind content limits from the policy' }),
  })
  .meta({ id: 'Budget' });

export const SourceSummarySchema = z.object({
  path: z.string(),
  sha256: Sha256Hex.meta({ description: 'sha256 of the bytes read' }),
  truncated: z.boolean(),
});

/** A function tool as realtime APIs take it; `parameters` is a JSON Schema object. */
export const ToolSchema = z
  .strictObject({
    type: z.literal('function'),
    name: z
      .string()
      .regex(FUNCTION_NAME)
      .meta({ description: 'the name the voice server dispatches' }),
    description: z.string(),
    parameters: z
      .record(z.string(), z.unknown())
      .meta({ description: 'a strict JSON Schema of the arguments (type object, additionalProperties false)' }),
  })
  .meta({ id: 'Tool', description: 'a function tool as realtime APIs take it' }) satisfies z.ZodType<
  Omit<PersonaTool, 'parameters'> & { parameters: Record<string, unknown> }
>;

/**
 * The persona answer's `session`: what a voice server passes to the realtime calls endpoint
 * or `session.update` unchanged (docs/voice-server.md); the model is the caller's to add.
 */
export const RealtimeSessionSchema = z
  .strictObject({
    type: z.literal('realtime'),
    instructions: z.string().meta({ description: 'the delivered instructions, made realtime-safe ASCII whatever `sanitize` says' }),
    audio: z.strictObject({ output: z.strictObject({ voice: z.string() }) }),
    tools: z.array(ToolSchema),
  })
  .meta({
    id: 'RealtimeSession',
    description: "the realtime session configuration a voice server sends unchanged (the model is the caller's): instructions are the delivered instructions in realtime-safe ASCII",
  }) satisfies z.ZodType<Omit<RealtimeSession, 'tools'> & { tools: unknown[] }>;

export const TopicSummarySchema = z
  .object({
    topicId: z.string(),
    found: z.boolean(),
    chars: z.number().int().meta({ description: 'chars of the delivered topic block' }),
    /** The topic file was over its cap and only its newest part was kept. */
    truncated: z.boolean().optional().meta({ description: 'the file was over its cap; its newest part was kept' }),
  })
  .meta({ id: 'TopicSummary' });

const LineRangeSchema = z
  .object({ from: z.number().int(), to: z.number().int() })
  .meta({
    id: 'LineRange',
    description:
      'the lines read, 1-based and inclusive, never inverted: from the start for a read that kept the head ({from: 1, to: 120}), from the end as negative numbers for one that kept the tail ({from: -120, to: -1}: the last 120 lines)',
  });

export const HudFileSchema = z
  .object({
    path: z.string().meta({ description: 'the brain path looked for' }),
    exists: z.boolean(),
    sha256: Sha256Hex.nullable().meta({ description: 'sha256 of the bytes read; null when missing' }),
    size: z.number().int().meta({ description: 'bytes of the whole file (0 when missing)' }),
    bytes: z.number().int().meta({ description: 'bytes of the file the text came from: size, unless only part was read' }),
    tokens: z.number().int().meta({ description: 'approxTokens of the text taken' }),
    lines: LineRangeSchema.nullable().meta({ description: 'the line range read when only part of the file was taken; null when read whole or missing' }),
    blocks: z.array(z.enum(BLOCK_KINDS)).meta({
      description: 'kinds of the delivered blocks built from this file: its own (source `path` or `path#...`) and those it makes with other files (a persona’s live context; see `shared`)',
    }),
    chars: z.number().int().meta({ description: 'content chars of those blocks (a block built from several files counts whole for each of them)' }),
    share: z.number().meta({ description: 'chars / limitChars, to four decimals' }),
  })
  .meta({ id: 'HudFile' });

export const HudSchema = z
  .object({
    snapshotSha256: Sha256Hex.meta({
      description: 'sha256 of the canonical snapshot of the files (docs/compiler.md, "HUD"): equal for two compiles that read the same bytes the same way',
    }),
    limitChars: z.number().int(),
    usedChars: z.number().int(),
    files: z.array(HudFileSchema).meta({ description: 'every brain file the compile looked for, found or missing, sorted by path' }),
    derived: z
      .array(z.object({ kind: z.enum(BLOCK_KINDS), source: z.string(), chars: z.number().int(), share: z.number() }))
      .meta({ description: 'delivered blocks taken from no brain file (built in, or from the request), by source' }),
    shared: z
      .array(
        z.object({
          kind: z.enum(BLOCK_KINDS),
          source: z.string(),
          chars: z.number().int(),
          share: z.number(),
          files: z.array(z.string()).meta({ description: 'the brain files it was built from, sorted by path; each lists the block too' }),
        }),
      )
      .optional()
      .meta({
        description:
          'delivered blocks distilled from several brain files (a persona’s live context: SOUL.md and the daily memory files for mars; tasks, calendar, inbox and the newest meeting for venus), by source. Absent from HUDs recorded before it existed, whose live context is a `derived` row.',
      }),
  })
  .meta({ id: 'Hud', description: 'the heads-up display of a compile: what it read, and what share of the budget each file took' }) satisfies z.ZodType<Hud>;

export const RecallSchema = z
  .object({
    policy: z.enum(RECALL_POLICIES).meta({ description: 'the worker’s `policy.json` `recall` (default `always`)' }),
    interactionContext: z
      .array(z.enum(INTERACTION_FIELDS))
      .meta({ description: 'the request fields that made this run one with interaction context (message, channelId, evidence); empty for a clean run' }),
    suppressed: z.boolean().meta({ description: 'true when memory notes were not recalled (nor read): a clean-room worker on a clean run' }),
  })
  .meta({ id: 'Recall', description: 'the recall decision of a worker compile (docs/compiler.md, "Recall policy")' }) satisfies z.ZodType<RecallDecision>;

export const ReceiptsSchema = z
  .object({
    role: z
      .object({
        id: z.string(),
        selectedBy: z.enum(['request', 'default']),
        source: z.string(),
        sha256: Sha256Hex.meta({ description: 'sha256 of the role block as delivered' }),
      })
      .nullable()
      .meta({ description: 'the role played; null without a role block' }),
    blueprint: z
      .object({
        revision: z.string().meta({ description: 'front matter `revision:`, else `sha256:` + 16 hex of the file; `none` without a blueprint block' }),
        source: z.string().nullable(),
        sha256: Sha256Hex.nullable().meta({ description: 'sha256 of the blueprint block as delivered; null with `none`' }),
      })
      .meta({ description: 'the platform blueprint applied' }),
    experiences: z
      .array(z.object({ sourceRef: z.string(), sha256: Sha256Hex }))
      .meta({ description: 'the experiences delivered (the ones that fit the budget), in order' }),
    preferences: z
      .object({
        length: z.enum(['concise', 'detailed']).optional(),
        format: z.enum(['bullets', 'paragraphs']).optional(),
        tone: z.enum(['direct', 'gentle']).optional(),
        initiative: z.enum(['ask-first', 'proactive']).optional(),
      })
      .meta({ description: 'the preference settings applied' }),
  })
  .meta({ id: 'Receipts', description: 'what shaped the prompt, auditable without re-reading it (also in the trace)' }) satisfies z.ZodType<Receipts>;

/** PII redacted from brain-derived text, by kind: the core's `RedactionCounts`. */
export const RedactionsSchema = z.object({ email: z.number().int(), phone: z.number().int() }) satisfies z.ZodType<RedactionCounts>;

/** The members every compile answer carries beside its compiled result, defined once for every route. */
export const AnswerFields = {
  sources: z.array(SourceSummarySchema).meta({ description: 'brain files read, with the sha256 of the bytes read' }),
  warnings: z.array(z.string()).meta({
    description:
      'one per degraded source or ignored option, never quoting brain text; an unusable topicId on the persona routes opens with `topic-unsafe:`, `topic-missing:` or `topic-unreadable:`',
  }),
  hud: HudSchema.optional().meta({ description: 'with `?hud=1`: the heads-up display of the files this compile read (always in the trace)' }),
};

/** What a compile delivers that depends on the compiled result alone: written once per shared result. */
export const CompiledFieldsSchema = z.object({
  systemPrompt: z.string().meta({ description: 'the trusted blocks, each under its own label line, most stable first' }),
  inputPrompt: z
    .string()
    .nullable()
    .meta({ description: 'advisory and content blocks, one JSON object per line (`{"block", "authority", "source", "text"}`); null when there are none' }),
  instructions: z.string().meta({ description: 'systemPrompt, a blank line, inputPrompt: for callers with a single channel' }),
  tokens: z
    .object({ total: z.number().int(), byKind: z.record(z.string(), z.number().int()) })
    .meta({ description: 'the estimate (approxTokens) per section; exact counts of the cacheable prefixes are in `cache`' }),
  redactions: RedactionsSchema.meta({ description: 'PII redacted from brain-derived text, by kind (counts only, never the values)' }),
  promptSha256: Sha256Hex.meta({ description: 'sha256 of the exact systemPrompt bytes (UTF-8)' }),
  inputSha256: Sha256Hex.nullable().meta({ description: 'sha256 of inputPrompt' }),
  blocks: z.array(BlockSummarySchema),
  budget: BudgetSchema,
  cache: CachePlanSchema,
});

const runId = z.string().meta({ description: 'the run this answer was traced under (also `x-run-id`)' });
const { sources, warnings, hud } = AnswerFields;

const workerExtra = { recall: RecallSchema, receipts: ReceiptsSchema };

/** The members of a worker answer that depend on the compiled result alone; the rest are the request's. */
export const WorkerResultSchema = CompiledFieldsSchema.extend(workerExtra);
export type WorkerExtra = z.infer<z.ZodObject<typeof workerExtra>>;

/** `POST /compile`: a worker's prompt for one phase. */
export const CompiledResponseSchema = z
  .object({
    runId,
    ...CompiledFieldsSchema.shape,
    sources,
    warnings,
    worker: z.string(),
    surface: z.enum(SURFACES),
    phase: z.enum(PHASES),
    ...workerExtra,
    hud,
  })
  .meta({ id: 'Compiled', description: 'a worker compile (POST /compile): prompts, blocks, budget, cache plan, recall and receipts' });
