import { z } from 'zod';
import { MAX_READ_BYTES } from '../src/core/types.js';
import { PersonaIdSchema, RunIdSchema, WorkerIdSchema } from './ids.js';

/** `GET /runs/:runId/trace` and `GET /runs`: what the trace store returns (docs/traces.md). */

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
/** Parts whose shape belongs to the compiler (budget, cache plan, tokens): passed through as recorded. */
const Recorded = z.record(z.string(), z.unknown());

export const TraceOutcomeSchema = z.enum(['delivered', 'not-modified', 'failed']);

export const TraceSubjectSchema = z.object({
  kind: z.enum(['persona', 'worker']),
  id: z.string(),
});

/** A block as the trace records it: its summary, never its content (the text is in the segments). */
export const TraceBlockSchema = z.object({
  kind: z.string(),
  authority: z.string(),
  cacheClass: z.string(),
  source: z.string(),
  chars: z.number().int(),
  approxTokens: z.number().int(),
  sha256: z.string(),
});

/**
 * A brain file a compile read, as its trace records it: enough to read it again exactly the
 * same way (`maxBytes`, `keep`, `within`) and compare. The brain session records all of
 * them; events written before a field existed lack it.
 */
export const TraceSourceSchema = z.object({
  path: z.string(),
  size: z.number(),
  mtimeMs: z.number(),
  /** Of the bytes read: the whole file unless `truncated`. */
  sha256: z.string(),
  truncated: z.boolean().optional(),
  /** The read bound the file was read with: no reader uses more than `MAX_READ_BYTES`, and verification refuses more. */
  maxBytes: z.number().int().min(1).max(MAX_READ_BYTES).optional(),
  keep: z.enum(['head', 'tail']).optional(),
  /** The directory the read was confined to (a topic: `topics`), so a check is confined alike. */
  within: z.string().optional(),
});

/** A brain path a compile looked for and found missing. */
export const TraceAbsentSchema = z.object({
  path: z.string(),
});

/** A directory listing a compile relied on: its files' count and digest, and their names when few. */
export const TraceListingSchema = z.object({
  path: z.string(),
  /** Files the directory held (subdirectories are not counted). */
  count: z.number().int(),
  /** sha256 of the sorted file names, each followed by a newline. */
  sha256: z.string(),
  /** The sorted file names, recorded for a directory of at most 64 files. */
  names: z.array(z.string()).optional(),
});

/** A part whose shape belongs to the compiler (budget, cache plan, tokens), recorded as given. */
const RecordedPart = z.custom<object>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be an object');

/**
 * One delivery (or failed compile) of a run, as the deliver path hands it to the trace store
 * (docs/traces.md, "What an event holds"). Both backends store exactly this and give it
 * back as a `TraceEvent`.
 */
export const TraceEventInputSchema = z.object({
  runId: RunIdSchema,
  /** ISO 8601, server clock. */
  at: z.string().refine((text) => Number.isFinite(Date.parse(text)), 'must be an ISO time'),
  route: z.string(),
  subject: TraceSubjectSchema,
  surface: z.string().optional(),
  /** The HTTP status delivered. */
  status: z.number().int(),
  outcome: TraceOutcomeSchema,
  /** Identifiers and options only: never tokens, never prompt text. */
  request: z.record(z.string(), z.unknown()),
  blocks: z.array(TraceBlockSchema).optional(),
  /** Exact text pieces: `system.join('')` is the delivered systemPrompt, `input.join('')` the inputPrompt. */
  segments: z.object({ system: z.array(z.string()), input: z.array(z.string()) }).optional(),
  promptSha256: z.string().optional(),
  /** null when there is no input prompt. */
  inputSha256: z.string().nullable().optional(),
  budget: RecordedPart.optional(),
  cache: RecordedPart.optional(),
  tokens: RecordedPart.optional(),
  redactions: z.object({ email: z.number().int(), phone: z.number().int() }).optional(),
  warnings: z.array(z.string()).optional(),
  sources: z.array(TraceSourceSchema).optional(),
  /** So a later check can tell a file that appeared since (stored inline). */
  absent: z.array(TraceAbsentSchema).optional(),
  /** So a later check can tell files added to or removed from a directory since (stored inline). */
  listings: z.array(TraceListingSchema).optional(),
  error: z.object({ code: z.string(), status: z.number().int(), detail: z.string() }).optional(),
  timing: z.record(z.string(), z.number()).optional(),
});

/** A recorded source as `?verify=sources` answers it. */
export const TraceSourceViewSchema = TraceSourceSchema.extend({
  /** With `?verify=sources`: whether the file differs now (missing counts as changed). */
  changed: z.boolean().optional(),
  /** With `?verify=sources`: the file's sha256 now, null when it is gone or unreadable. */
  currentSha256: z.string().nullable().optional(),
});

export const TraceAbsentViewSchema = TraceAbsentSchema.extend({
  /** With `?verify=sources`: whether the path exists now (it was missing when the run read the brain). */
  appeared: z.boolean().optional(),
});

export const TraceListingViewSchema = TraceListingSchema.extend({
  /** With `?verify=sources`: whether the directory's files differ now (a directory gone holds none). */
  changed: z.boolean().optional(),
  /** With `?verify=sources`: files now; null when it cannot be listed. */
  currentCount: z.number().int().nullable().optional(),
  currentSha256: z.string().nullable().optional(),
  /** With `?verify=sources`, when the names were recorded: files there now that were not, and files gone. */
  added: z.array(z.string()).optional(),
  removed: z.array(z.string()).optional(),
});

export const TraceSegmentSchema = z.object({
  sha256: Sha256,
  /** Offset of the piece in the rebuilt prompt, in JavaScript string indices. */
  offset: z.number().int(),
  chars: z.number().int(),
});

/**
 * `signed`: HMAC under the configured key holds; `linked`: SHA-256 link holds (no key);
 * `unchained`: written before chaining (v2); `unverifiable`: signed with a key this service
 * does not hold; `broken`: altered, inserted, out of place, or a loss nobody accounted for.
 */
export const ChainStatusSchema = z.enum(['signed', 'linked', 'unchained', 'unverifiable', 'broken']);

/** A stored event as `GET /runs/:runId/trace` returns it: the prompts rebuilt from their segments and checked. */
export const TraceEventSchema = TraceEventInputSchema.omit({ segments: true, budget: true, cache: true, tokens: true, sources: true, absent: true, listings: true }).extend({
  runId: z.string(),
  at: z.string(),
  budget: Recorded.optional(),
  cache: Recorded.optional(),
  tokens: Recorded.optional(),
  sources: z.array(TraceSourceViewSchema).optional(),
  /** Paths the compile looked for and found missing. */
  absent: z.array(TraceAbsentViewSchema).optional(),
  /** Directory listings the compile relied on. */
  listings: z.array(TraceListingViewSchema).optional(),
  /** Characters delivered (system + input prompt). */
  chars: z.number().int(),
  segments: z.object({ system: z.array(TraceSegmentSchema), input: z.array(TraceSegmentSchema) }).optional(),
  systemPrompt: z.string().nullable(),
  inputPrompt: z.string().nullable(),
  /**
   * The rebuilt prompts match their digests and the event's chain link holds (with
   * TRACE_SIGNING_KEY set: the event is signed with that key); null when the event carries
   * no prompt and its link holds.
   */
  verified: z.boolean().nullable(),
  /** What the event's chain link proves (docs/traces.md, "Tamper evidence"). */
  chain: ChainStatusSchema,
});

export const RunChainSchema = z.object({
  /** The worst status of the run's events; `broken` when any problem was found in or around their files. */
  status: ChainStatusSchema,
  /** What breaks the chain: an event edited, inserted, removed or reordered, a file cut or missing within retention. */
  problems: z.array(z.string()),
  /** Accounted for, not tampering: e.g. a file its writer found truncated under it, said so, and left. */
  notes: z.array(z.string()),
});

export const RunTraceSchema = z.object({
  runId: z.string(),
  events: z.array(TraceEventSchema),
  chain: RunChainSchema,
});

export const RunTraceParamsSchema = z.object({ runId: RunIdSchema });

export const RunTraceQuerySchema = z.object({
  verify: z.enum(['sources']).optional(),
});

/** A run described by its most recent event: that event's identifying fields, plus totals. */
export const RunSummarySchema = TraceEventSchema.pick({
  runId: true,
  at: true,
  route: true,
  subject: true,
  surface: true,
  status: true,
  outcome: true,
  chars: true,
}).extend({
  promptSha256: z.string().nullable(),
  events: z.number().int(),
});

export const RunListSchema = z.object({
  runs: z.array(RunSummarySchema),
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: z.string().nullable(),
});

const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const RunListQuerySchema = z.object({
  limit: wholeNumber(1, 100).default(20),
  cursor: z
    .string()
    .max(256)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be a cursor from a previous page')
    .optional(),
  persona: PersonaIdSchema.optional(),
  worker: WorkerIdSchema.optional(),
  /** The HTTP status delivered, e.g. 200, 304, 422, 503. */
  status: wholeNumber(100, 599).optional(),
  outcome: TraceOutcomeSchema.optional(),
});

export type TraceOutcome = z.infer<typeof TraceOutcomeSchema>;
export type TraceSubject = z.infer<typeof TraceSubjectSchema>;
export type TraceBlock = z.infer<typeof TraceBlockSchema>;
export type TraceSource = z.infer<typeof TraceSourceSchema>;
export type TraceAbsent = z.infer<typeof TraceAbsentSchema>;
export type TraceListing = z.infer<typeof TraceListingSchema>;
export type TraceEventInput = z.infer<typeof TraceEventInputSchema>;
export type TraceSourceView = z.infer<typeof TraceSourceViewSchema>;
export type TraceAbsentView = z.infer<typeof TraceAbsentViewSchema>;
export type TraceListingView = z.infer<typeof TraceListingViewSchema>;
export type TraceSegmentView = z.infer<typeof TraceSegmentSchema>;
export type TraceEvent = z.infer<typeof TraceEventSchema>;
export type RunChain = z.infer<typeof RunChainSchema>;
export type RunTrace = z.infer<typeof RunTraceSchema>;
export type ChainStatusName = z.infer<typeof ChainStatusSchema>;
export type RunSummaryBody = z.infer<typeof RunSummarySchema>;
export type RunList = z.infer<typeof RunListSchema>;
export type RunListQuery = z.infer<typeof RunListQuerySchema>;
