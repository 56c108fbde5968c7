import { z } from 'zod';
import { MAX_READ_BYTES } from '../src/core/types.js';
import { HudSchema, ReceiptsSchema, RecallSchema, RedactionsSchema, ToolSchema } from './compiled.js';
import { CALLER_NAME_PATTERN, InstantSchema, PersonaIdSchema, RunIdSchema, SafeIdSchema, WorkerIdSchema } from './ids.js';
import { TraceRefreshSchema } from './refresh.js';

/** `GET /runs/:runId/trace` and `GET /runs`: what the trace store returns (docs/traces.md). */

/**
 * The most events one run may hold, on either backend (docs/traces.md, "Runs are bounded"):
 * an append beyond it is refused with `CC_RUN_FULL` and nothing is delivered.
 */
export const MAX_RUN_EVENTS = 10_000;
/** The most events one page of `GET /runs/:runId/trace` holds, and its default. */
export const MAX_TRACE_PAGE_EVENTS = 100;
export const DEFAULT_TRACE_PAGE_EVENTS = 20;
/** A page of a run also ends once its events delivered this many characters (it always holds one event). */
export const TRACE_PAGE_CHARS = 1_000_000;

const count = (n: number) => n.toLocaleString('en-US');

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
/** Parts whose shape belongs to the compiler (budget, cache plan, tokens): passed through as recorded. */
const Recorded = z.record(z.string(), z.unknown());

export const TraceOutcomeSchema = z.enum(['delivered', 'not-modified', 'failed']).meta({ id: 'TraceOutcome' });

export const TraceSubjectSchema = z.object({
  kind: z.enum(['persona', 'worker']),
  id: z.string(),
}).meta({ id: 'TraceSubject' });

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
  sha256: z.string().meta({ description: 'Of the bytes read (the whole file unless truncated)' }),
  truncated: z.boolean().optional(),
  // No reader uses more than MAX_READ_BYTES, and verification refuses more.
  maxBytes: z.number().int().min(1).max(MAX_READ_BYTES).optional().meta({ description: 'The read bound the file was read with; verification refuses a larger one' }),
  keep: z.enum(['head', 'tail']).optional().meta({ description: 'Which end of an over-size file was kept' }),
  within: z
    .string()
    .optional()
    .meta({ description: 'The directory the read was confined to (topics for a topic file); ?verify=sources reads it confined alike' }),
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
  sha256: z.string().meta({ description: 'sha256 of the sorted file names, each followed by a newline' }),
  names: z.array(z.string()).optional().meta({ description: 'The sorted file names, recorded for a directory of at most 64 files' }),
});

/**
 * What a voice caller was given beside the prompts: the realtime voice and the function
 * tools, so the session it sent (`{type: "realtime", instructions, audio: {output: {voice}},
 * tools}`) can be rebuilt from the trace. The tool definitions are stored once by sha256,
 * not per event: a persona hands out the same tools on every call.
 */
export const TraceRealtimeSchema = z.object({
  voice: z.string(),
  tools: z.array(ToolSchema).readonly(),
});

/** A part whose shape belongs to the compiler (budget, cache plan, tokens), recorded as given. */
const RecordedPart = z.custom<object>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be an object');

/**
 * What an event records of the compiled result it delivered (`compiledEventFields`): the
 * same objects for every delivery of a shared result, so a store writes them once.
 */
export const TraceCompiledFieldsSchema = z.object({
  blocks: z.array(TraceBlockSchema).optional(),
  /** Exact text pieces: `system.join('')` is the delivered systemPrompt, `input.join('')` the inputPrompt. */
  segments: z.object({ system: z.array(z.string()), input: z.array(z.string()) }).optional(),
  promptSha256: z.string().optional(),
  /** null when there is no input prompt. */
  inputSha256: z.string().nullable().optional(),
  budget: RecordedPart.optional(),
  cache: RecordedPart.optional(),
  tokens: RecordedPart.optional(),
  redactions: RedactionsSchema.optional(),
});

/**
 * One delivery (or failed compile) of a run, as the deliver path hands it to the trace store
 * (docs/traces.md, "What an event holds"). Both backends store exactly this and give it
 * back as a `TraceEvent`.
 */
export const TraceEventInputSchema = z.object({
  runId: RunIdSchema,
  parentRunId: RunIdSchema.optional().meta({ description: "A mid-call refresh: the connect's run it compared with (its own run is `<parentRunId>:refresh`)" }),
  /** ISO 8601, server clock. */
  at: z.string().refine((text) => Number.isFinite(Date.parse(text)), 'must be an ISO time'),
  route: z.string(),
  subject: TraceSubjectSchema,
  caller: z
    .string()
    .regex(CALLER_NAME_PATTERN)
    .optional()
    .meta({
      description:
        "The caller's name (`name:token` in CONTEXT_COMPILER_TOKENS; `token-` and 8 hex digits of its sha256 for an unnamed token), never the token. Absent without tokens, and on events recorded before callers were named.",
    }),
  surface: z.string().optional(),
  /** The HTTP status delivered. */
  status: z.number().int(),
  outcome: TraceOutcomeSchema,
  requestId: z
    .string()
    .optional()
    .meta({ description: "The request id: the caller's x-request-id when it was a safe id, else one the service made (also the x-request-id answer header)" }),
  traceparent: z
    .string()
    .optional()
    .meta({ description: "The caller's W3C traceparent (version-traceid-parentid-flags) when it sent a valid one: joins this run to the caller's trace" }),
  /** Identifiers and options only: never tokens, never prompt text. */
  request: z.record(z.string(), z.unknown()),
  ...TraceCompiledFieldsSchema.shape,
  warnings: z.array(z.string()).optional(),
  /** Persona routes: the voice and tools delivered beside the prompts. */
  realtime: TraceRealtimeSchema.optional(),
  sources: z.array(TraceSourceSchema).optional(),
  /** So a later check can tell a file that appeared since (stored inline). */
  absent: z.array(TraceAbsentSchema).optional(),
  /** So a later check can tell files added to or removed from a directory since (stored inline). */
  listings: z.array(TraceListingSchema).optional(),
  error: z.object({ code: z.string(), status: z.number().int(), detail: z.string() }).optional(),
  timing: z.record(z.string(), z.number()).optional(),
  /** The heads-up display of a compiled delivery: every file looked for, and its share of the budget (stored once by sha256). */
  hud: HudSchema.optional(),
  /** A worker compile's recall decision: whether memory notes were recalled, and why not. */
  recall: RecallSchema.optional(),
  /** A worker compile's receipts: role, blueprint revision, experiences and preferences applied. */
  receipts: ReceiptsSchema.optional(),
  /** A mid-call refresh: what changed since the parent run, by block (counts), and the digest of the text delivered. */
  refresh: TraceRefreshSchema.optional(),
});

/** A recorded source as `?verify=sources` answers it. */
export const TraceSourceViewSchema = TraceSourceSchema.extend({
  changed: z.boolean().optional().meta({ description: 'With ?verify=sources: the file differs now (missing counts as changed)' }),
  currentSha256: z.string().nullable().optional().meta({ description: "With ?verify=sources: the file's sha256 now; null when it is gone or unreadable" }),
}).meta({ id: 'TraceSource', description: 'A brain file the compile read, with the sha256 of the bytes read' });

export const TraceAbsentViewSchema = TraceAbsentSchema.extend({
  appeared: z.boolean().optional().meta({ description: 'With ?verify=sources: the path exists now (it was missing when the run read the brain)' }),
}).meta({ id: 'TraceAbsent', description: 'A brain path (file or directory) the compile looked for and found missing' });

export const TraceListingViewSchema = TraceListingSchema.extend({
  changed: z.boolean().optional().meta({ description: 'With ?verify=sources: the files differ now (a directory gone holds none)' }),
  currentCount: z.number().int().nullable().optional().meta({ description: 'With ?verify=sources: files now; null when the directory cannot be listed' }),
  currentSha256: z.string().nullable().optional().meta({ description: 'With ?verify=sources' }),
  added: z.array(z.string()).optional().meta({ description: 'With ?verify=sources, when names were recorded: files there now that were not' }),
  removed: z.array(z.string()).optional().meta({ description: 'With ?verify=sources, when names were recorded: files gone since' }),
}).meta({ id: 'TraceListing', description: 'A directory listing the compile relied on (its files; subdirectories are not counted)' });

/** The voice and tools a persona answer delivered, as `GET /runs/:runId/trace` returns them. */
export const TraceRealtimeViewSchema = z
  .object({
    voice: z.string().meta({ description: 'The realtime voice delivered (`session.audio.output.voice`)' }),
    toolNames: z.array(z.string()).meta({ description: 'The tools delivered, by name, in order' }),
    toolsSha256: Sha256.meta({ description: 'sha256 of the delivered `tools` as JSON: the record the definitions are stored in once' }),
    tools: z
      .array(ToolSchema)
      .nullable()
      .meta({ description: 'The tool definitions as delivered; null when their stored record cannot be read back' }),
  })
  .meta({
    id: 'TraceRealtime',
    description:
      'What a persona answer gave the caller beside the prompts. Its `session` was `{type: "realtime", instructions, audio: {output: {voice}}, tools}`, instructions being systemPrompt, a blank line and inputPrompt.',
  });

export const TraceSegmentSchema = z.object({
  sha256: Sha256,
  /** Offset of the piece in the rebuilt prompt, in JavaScript string indices. */
  offset: z.number().int(),
  chars: z.number().int(),
}).meta({
  id: 'TraceSegment',
  description: 'One stored text piece of a prompt; `offset` and `chars` are JavaScript string indices into the rebuilt prompt.',
});

/**
 * `signed`: HMAC under the configured key holds; `linked`: SHA-256 link holds (no key);
 * `unchained`: written before chaining (v2); `unverifiable`: signed with a key this service
 * does not hold; `broken`: altered, inserted, out of place, or a loss nobody accounted for.
 */
export const ChainStatusSchema = z.enum(['signed', 'linked', 'unchained', 'unverifiable', 'broken']).meta({
  id: 'ChainStatus',
  description:
    "What a trace line's hash-chain link proves (docs/traces.md, Tamper evidence). signed: the HMAC under TRACE_SIGNING_KEY holds; linked: a plain SHA-256 link holds (consistent, but recomputable by anyone who can write TRACE_DIR); unchained: written before the chain (format 2); unverifiable: signed with a key this service does not hold; broken: altered, forged, out of place, or written after the end its writer vouched for.",
});

/** A stored event as `GET /runs/:runId/trace` returns it: the prompts rebuilt from their segments and checked. */
export const TraceEventSchema = TraceEventInputSchema.omit({ segments: true, budget: true, cache: true, tokens: true, realtime: true, sources: true, absent: true, listings: true, hud: true }).extend({
  runId: z.string(),
  at: z.string().meta({ format: 'date-time', description: 'When the event was traced' }),
  route: z.string().meta({ description: 'Method and route pattern that delivered, e.g. GET /context/mars, GET /context/topic/:topicId or POST /compile' }),
  status: z.number().int().meta({ description: 'The HTTP status delivered' }),
  blocks: z
    .array(
      TraceBlockSchema.extend({
        tokens: z.number().int().optional().meta({
          description:
            "The block's exact tokens, counted when read by the tokenizer its event's cache plan names (o200k_base): a system block from its label to the next block's label — the pieces the cache plan counts, so a checkpoint's tokens are its blocks' plus the tool definitions' — an input block its JSON line. Absent when the plan counted an estimate",
        }),
      }),
    )
    .optional(),
  budget: Recorded.optional(),
  cache: Recorded.optional(),
  tokens: Recorded.optional(),
  realtime: TraceRealtimeViewSchema.optional(),
  sources: z.array(TraceSourceViewSchema).optional(),
  absent: z.array(TraceAbsentViewSchema).optional().meta({ description: 'Brain paths (files or directories) the compile looked for and found missing' }),
  listings: z.array(TraceListingViewSchema).optional().meta({ description: 'Directory listings the compile relied on' }),
  hud: HudSchema.optional().meta({ description: 'The heads-up display recorded for the compile, when it passed validation on read' }),
  hudRejected: z
    .array(z.string())
    .optional()
    .meta({
      description:
        'Why the recorded HUD was rejected when the trace was read back (a bad digest, an inverted line range, files out of order, ...): the HUD is then left out and the event reads verified: false',
    }),
  chars: z.number().int().meta({ description: 'Characters delivered (system + input prompt)' }),
  verifySkipped: z
    .string()
    .optional()
    .meta({
      description:
        "With ?verify=sources: why this event's sources, missing paths and listings were not checked — its chain link does not hold (with TRACE_SIGNING_KEY: it is not signed with it), so nothing it records may drive a read of the brain",
    }),
  segments: z.object({ system: z.array(TraceSegmentSchema), input: z.array(TraceSegmentSchema) }).optional(),
  systemPrompt: z.string().nullable().meta({ description: 'Rebuilt byte for byte from the stored segments' }),
  inputPrompt: z.string().nullable(),
  verified: z.boolean().nullable().meta({
    description:
      "The rebuilt prompts match the recorded digests and the event's chain link holds; with TRACE_SIGNING_KEY set, only an event signed with that key counts. Null when the event carries no prompt and its link holds.",
  }),
  /** What the event's chain link proves (docs/traces.md, "Tamper evidence"). */
  chain: ChainStatusSchema,
  refreshText: z
    .object({ text: z.string().nullable(), reason: z.string().optional() })
    .optional()
    .meta({
      description:
        "A delivered mid-call refresh: the text it sent (`Since we connected, ...`), rebuilt from the trace — the connect's input prompt, this event's fresh input prompt and clock line — and given only when its sha256 is `refresh.textSha256`; else `text` is null and `reason` says why",
    }),
}).meta({
  id: 'TraceEvent',
  description:
    'One delivery of a run, as traced before it was sent. `request` holds identifiers and options only, never tokens or prompt text; an unusable topicId on a persona route is recorded as topicId null and topicIdRejected {reason, chars, sha256 (first 16 hex)}, never as its text, and an unusable timezone as timezone null and timezoneRejected {reason: "invalid", chars, sha256}.',
});

export const RunChainSchema = z.object({
  /** The worst status of the run's events; `broken` when any problem was found in or around their files. */
  status: ChainStatusSchema,
  problems: z.array(z.string()).meta({
    description:
      'What breaks the chain: an event edited, forged, inserted, removed or reordered; a file of the writer missing or cut within retention (at most 20, then "and N more")',
  }),
  notes: z.array(z.string()).meta({
    description:
      'Accounted for, not tampering: a file its writer found truncated or removed under it; a file written without a key, or signed with another, while one is configured; a format-2 file',
  }),
}).meta({ id: 'RunChain' });

export const RunTraceSchema = z.object({
  runId: z.string(),
  events: z.array(TraceEventSchema).meta({ description: 'One page of the run’s events, in order' }),
  chain: RunChainSchema.meta({ description: 'What the chains around the events of this page say' }),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page of events; null on the last page' }),
}).meta({ id: 'RunTrace', description: 'A page of a run’s events (docs/traces.md, "Reading a run")' });

export const RunTraceParamsSchema = z.object({ runId: RunIdSchema });

const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** A cursor this service issued: base64url, short. */
const Cursor = z.string().max(512).regex(/^[A-Za-z0-9_-]+$/, 'must be a cursor from a previous page');

export const RunTraceQuerySchema = z.object({
  limit: wholeNumber(1, MAX_TRACE_PAGE_EVENTS)
    .default(DEFAULT_TRACE_PAGE_EVENTS)
    .meta({
      description: `Events per page (1-${MAX_TRACE_PAGE_EVENTS}, default ${DEFAULT_TRACE_PAGE_EVENTS}); a page also ends once its events delivered ${count(TRACE_PAGE_CHARS)} characters (it always holds one). A run holds at most ${count(MAX_RUN_EVENTS)} events.`,
    }),
  cursor: Cursor.optional().meta({ description: '`nextCursor` of the previous page' }),
  verify: z.enum(['sources']).optional().meta({
    description:
      '`sources` adds, per recorded brain file, whether it changed since (missing counts as changed); per path the compile found missing, whether it appeared since; per directory listing it relied on, whether its files changed, and which were added or removed when the names were recorded.',
  }),
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
  caller: z.string().optional().meta({ description: 'The caller whose event this is (absent without tokens, and before callers were named)' }),
  promptSha256: z.string().nullable(),
  events: z.number().int().meta({ description: 'Events of the run within retention (of this caller’s, unless it reads every caller’s runs)' }),
  compiledFor: z.string().nullable().meta({
    description:
      'The instant the compile was made for (`nowUsed`: the request’s `now`, else the time of the request), ISO 8601; what the prompt’s clock line says. Null for events recorded before it was listed.',
  }),
  topicId: z.string().nullable().meta({ description: 'The topic a persona run was asked for (null without one, or when it was unusable)' }),
  role: z.string().nullable().meta({ description: 'The role a worker played (asked for, or its default); null without one' }),
  engine: z.string().nullable().meta({ description: 'The engine the request named for the route key; null without one' }),
  warnings: z.number().int().meta({ description: 'Warnings of the latest event (a missing topic, an unreadable file, items left out); 0 for none' }),
  requestId: z.string().optional().meta({ description: 'The request id of the latest event (the x-request-id the service logged)' }),
  traceparent: z.string().optional().meta({ description: 'The caller’s W3C traceparent of the latest event, when it sent one' }),
}).meta({ id: 'RunSummary', description: 'A run described by its most recent event, plus totals' });

export const RunListSchema = z.object({
  runs: z.array(RunSummarySchema),
  nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next (older) page; null on the last page' }),
  partial: z.boolean().meta({
    description:
      'True when the listing stopped at its read bound before it could fill the page (the files backend, a filter that matches nothing in the newest trace files): the runs given are exact and newest first, but fewer than `limit`, and `nextCursor` continues the search from where it stopped (docs/traces.md, "Finding a run").',
  }),
  visibleTo: z.string().optional().meta({
    description:
      'Present when the listing holds only this caller’s runs (several tokens, and the caller is not named in CONTEXT_COMPILER_READ_ALL): a run another caller opened is not listed, and reads as an unknown one. Absent when every run is listed.',
  }),
}).meta({ id: 'RunList' });

/** A trace id (32 lowercase hex), alone or inside a whole `traceparent` header value. */
const TRACE_ID_QUERY = /^(?:[0-9a-f]{2}-)?([0-9a-f]{32})(?:-[0-9a-f]{16}-[0-9a-f]{2})?$/;

/** The trace id a `?traceparent=` names. */
export function traceIdOf(value: string): string | undefined {
  return TRACE_ID_QUERY.exec(value)?.[1];
}

export const RunListQuerySchema = z.object({
  limit: wholeNumber(1, 100).default(20).meta({ description: 'Runs per page (1-100, default 20)' }),
  cursor: Cursor.optional().meta({ description: '`nextCursor` of the previous page' }),
  persona: PersonaIdSchema.optional(),
  worker: WorkerIdSchema.optional(),
  status: wholeNumber(100, 599).optional().meta({ description: 'The HTTP status delivered, e.g. 200, 304, 422, 503' }),
  outcome: TraceOutcomeSchema.optional(),
  runId: RunIdSchema.optional().meta({ description: 'Only this run' }),
  requestId: SafeIdSchema.optional().meta({
    description: 'Only the run holding an event of this request: the request id in a log line, an x-request-id answer header or a problem’s `requestId`',
  }),
  traceparent: z
    .string()
    .max(64)
    .regex(TRACE_ID_QUERY, 'must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>) or its 32-hex trace id')
    .optional()
    .meta({ description: 'Only runs holding an event of this W3C trace: a whole traceparent, or its 32-hex trace id (the parent id is ignored)' }),
  from: InstantSchema.optional().meta({ description: 'Only runs whose latest event was traced at or after this instant (ISO 8601)' }),
  to: InstantSchema.optional().meta({ description: 'Only runs whose latest event was traced before this instant (ISO 8601)' }),
});

export type TraceOutcome = z.infer<typeof TraceOutcomeSchema>;
export type TraceSubject = z.infer<typeof TraceSubjectSchema>;
export type TraceBlock = z.infer<typeof TraceBlockSchema>;
export type TraceSource = z.infer<typeof TraceSourceSchema>;
export type TraceAbsent = z.infer<typeof TraceAbsentSchema>;
export type TraceListing = z.infer<typeof TraceListingSchema>;
export type TraceEventInput = z.infer<typeof TraceEventInputSchema>;
export type TraceCompiledFields = z.infer<typeof TraceCompiledFieldsSchema>;
export type TraceRealtime = z.infer<typeof TraceRealtimeSchema>;
export type TraceRealtimeView = z.infer<typeof TraceRealtimeViewSchema>;
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
