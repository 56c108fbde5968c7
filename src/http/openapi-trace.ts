/**
 * Descriptions and component names for the trace schemas (`schemas/trace.ts`), registered
 * as zod metadata on those schemas. They are kept apart from the schemas while the trace
 * store is split into `src/io/trace/` (issue 15); once it is, they belong in `.meta()` there.
 */
import { z } from 'zod';
import {
  ChainStatusSchema,
  RunChainSchema,
  RunListQuerySchema,
  RunListSchema,
  RunSummarySchema,
  RunTraceQuerySchema,
  RunTraceSchema,
  TraceAbsentSchema,
  TraceEventSchema,
  TraceListingSchema,
  TraceOutcomeSchema,
  TraceSegmentSchema,
  TraceSourceSchema,
  TraceSubjectSchema,
} from '../../schemas/trace.js';

type Meta = { id?: string; description?: string; [key: string]: unknown };

const VERIFY = 'With ?verify=sources';

function describe(schema: z.ZodType, meta: Meta): void {
  z.globalRegistry.add(schema, { ...z.globalRegistry.get(schema), ...meta });
}

function fields(schema: z.ZodObject<z.ZodRawShape>, descriptions: Record<string, string>): void {
  for (const [field, description] of Object.entries(descriptions)) describe(schema.shape[field] as z.ZodType, { description });
}

/** Registers the trace schemas' documentation (idempotent). */
export function describeTraceSchemas(): void {
  describe(TraceOutcomeSchema, { id: 'TraceOutcome' });
  describe(TraceSubjectSchema, { id: 'TraceSubject' });
  describe(TraceSegmentSchema, {
    id: 'TraceSegment',
    description: 'One stored text piece of a prompt; `offset` and `chars` are JavaScript string indices into the rebuilt prompt.',
  });
  describe(ChainStatusSchema, {
    id: 'ChainStatus',
    description:
      "What a trace line's hash-chain link proves (docs/traces.md, Tamper evidence). signed: the HMAC under TRACE_SIGNING_KEY holds; linked: a plain SHA-256 link holds (consistent, but recomputable by anyone who can write TRACE_DIR); unchained: written before the chain (format 2); unverifiable: signed with a key this service does not hold; broken: altered, forged, out of place, or written after the end its writer vouched for.",
  });
  describe(TraceSourceSchema, { id: 'TraceSource', description: 'A brain file the compile read, with the sha256 of the bytes read' });
  fields(TraceSourceSchema, {
    changed: `${VERIFY}: the file differs now (missing counts as changed)`,
    currentSha256: `${VERIFY}: the file's sha256 now; null when it is gone or unreadable`,
  });
  describe(TraceAbsentSchema, { id: 'TraceAbsent', description: 'A brain path (file or directory) the compile looked for and found missing' });
  fields(TraceAbsentSchema, { appeared: `${VERIFY}: the path exists now` });
  describe(TraceListingSchema, {
    id: 'TraceListing',
    description: 'A directory listing the compile relied on (its files; subdirectories are not counted)',
  });
  fields(TraceListingSchema, {
    sha256: 'sha256 of the sorted file names, each followed by a newline',
    names: 'The sorted file names, recorded for a directory of at most 64 files',
    changed: `${VERIFY}: the files differ now (a directory gone holds none)`,
    currentCount: `${VERIFY}; null when the directory cannot be listed`,
    currentSha256: VERIFY,
    added: `${VERIFY}, when names were recorded: files there now that were not`,
    removed: `${VERIFY}, when names were recorded: files gone since`,
  });
  describe(TraceEventSchema, {
    id: 'TraceEvent',
    description:
      'One delivery of a run, as traced before it was sent. `request` holds identifiers and options only, never tokens or prompt text; an unusable topicId on a persona route is recorded as topicId null and topicIdRejected {reason, chars, sha256 (first 16 hex)}, never as its text.',
  });
  describe(TraceEventSchema.shape.at, { format: 'date-time', description: 'When the event was traced' });
  fields(TraceEventSchema, {
    route: 'Method and route pattern that delivered, e.g. GET /context/mars, GET /context/topic/:topicId or POST /compile',
    status: 'The HTTP status delivered',
    chars: 'Characters delivered (system + input prompt)',
    systemPrompt: 'Rebuilt byte for byte from the stored segments',
    verified:
      "The rebuilt prompts match the recorded digests and the event's chain link holds; with TRACE_SIGNING_KEY set, only an event signed with that key counts. Null when the event carries no prompt and its link holds.",
    absent: 'Brain paths (files or directories) the compile looked for and found missing',
    listings: 'Directory listings the compile relied on',
  });
  describe(RunChainSchema, { id: 'RunChain' });
  // `status` is the ChainStatus component itself (the worst of the run's events): described there.
  fields(RunChainSchema, {
    problems:
      'What breaks the chain: an event edited, forged, inserted, removed or reordered; a file of the writer missing or cut within retention (at most 20, then "and N more")',
    notes:
      'Accounted for, not tampering: a file its writer found truncated or removed under it; a file written without a key, or signed with another, while one is configured; a format-2 file',
  });
  describe(RunTraceSchema, { id: 'RunTrace' });
  describe(RunSummarySchema, { id: 'RunSummary', description: 'A run described by its most recent event, plus totals' });
  fields(RunSummarySchema, { events: 'Events of the run within retention' });
  describe(RunListSchema, { id: 'RunList' });
  fields(RunListSchema, { nextCursor: 'Pass as `cursor` for the next (older) page; null on the last page' });
  fields(RunListQuerySchema, {
    limit: 'Runs per page (1-100, default 20)',
    cursor: '`nextCursor` of the previous page',
    status: 'The HTTP status delivered, e.g. 200, 304, 422, 503',
  });
  fields(RunTraceQuerySchema, {
    verify:
      '`sources` adds, per recorded brain file, whether it changed since (missing counts as changed); per path the compile found missing, whether it appeared since; per directory listing it relied on, whether its files changed, and which were added or removed when the names were recorded.',
  });
}
