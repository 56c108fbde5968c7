import { z } from 'zod';
import { phaseIssues } from '../src/core/compile.js';
import { PHASES, SURFACES } from '../src/core/types.js';
import { ChannelIdSchema, CompileRunIdSchema, EngineSchema, FormatSchema, HudFlagSchema, InstantSchema, REFRESH_RUN_SUFFIX, RoleIdSchema, TimeZoneSchema, WorkerIdSchema } from './ids.js';

export const MAX_CAPABILITIES = 64;
export const MAX_BRIEFING_ITEMS = 64;
export const MAX_EVIDENCE_ITEMS = 32;
export const MAX_EVIDENCE_BYTES = 2000;
export const MAX_EXPERIENCES = 9;
export const MAX_EXPERIENCE_BYTES = 2000;

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

export const CapabilitySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 of [A-Za-z0-9_.:-]'),
  description: z.string().max(1000),
});

export const BriefingItemSchema = z.strictObject({
  kind: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a lowercase word such as approval'),
  id: z.string().regex(/^[A-Za-z0-9_:.-]{1,128}$/, 'must be 1-128 of [A-Za-z0-9_:.-]'),
  intent: z.string().min(1).max(1000),
  state: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a lowercase word such as pending'),
});

export const EvidenceItemSchema = z.strictObject({
  sourceRef: z.string().min(1).max(512),
  content: z
    .string()
    .refine((text) => utf8Bytes(text) <= MAX_EVIDENCE_BYTES, `must be at most ${MAX_EVIDENCE_BYTES} bytes (UTF-8)`)
    .meta({ description: `at most ${MAX_EVIDENCE_BYTES} bytes (UTF-8)` }),
});

/** A lesson the host recalls for this turn: advisory, encoded like evidence. */
export const ExperienceItemSchema = z.strictObject({
  sourceRef: z.string().min(1).max(512),
  content: z
    .string()
    .refine((text) => utf8Bytes(text) <= MAX_EXPERIENCE_BYTES, `must be at most ${MAX_EXPERIENCE_BYTES} bytes (UTF-8)`)
    .meta({ description: `at most ${MAX_EXPERIENCE_BYTES} bytes (UTF-8)` }),
});

export const PreferencesSchema = z
  .strictObject({
    length: z.enum(['concise', 'detailed']).optional(),
    format: z.enum(['bullets', 'paragraphs']).optional(),
    tone: z.enum(['direct', 'gentle']).optional(),
    initiative: z.enum(['ask-first', 'proactive']).optional(),
  })
  .meta({ description: 'presentation only, from a closed set; never grants a tool, data or authority' });

const nonBlank = z.string().refine((text) => text.trim().length > 0, 'must not be blank');

/**
 * `POST /compile`. The phase rules (`start` may carry a task but no message; `turn` carries
 * exactly one message and no task) are core's `phaseIssues`, reported here for every field
 * that breaks one.
 */
export const CompileRequestSchema = z
  .strictObject({
    phase: z.enum(PHASES),
    surface: z.enum(SURFACES),
    worker: WorkerIdSchema.meta({ description: 'reads `workers/<worker>/`' }),
    channelId: ChannelIdSchema.optional().meta({ description: 'reads `channels/<channelId>/purpose.md`; makes the run one with interaction context (recall)' }),
    role: RoleIdSchema.optional().meta({
      description:
        'the role to play, one the worker admits (`policy.json` `roles.admitted`): reads `workers/<worker>/roles/<role>.md`. Default: the policy’s `roles.default`, else none. Not admitted: 422 CC_ROLE_NOT_ADMITTED; admitted without a file: 404',
    }),
    task: nonBlank.optional().meta({ description: 'phase start only; content authority' }),
    message: nonBlank.optional().meta({ description: 'phase turn only (required there); content authority; makes the run one with interaction context (recall)' }),
    capabilities: z
      .array(CapabilitySchema)
      .max(MAX_CAPABILITIES)
      .refine((items) => new Set(items.map((item) => item.id)).size === items.length, 'capability ids must be unique')
      .optional()
      .meta({ description: 'the tools this turn may call: trusted; rendered sorted by id; ids unique' }),
    briefing: z
      .array(BriefingItemSchema)
      .max(MAX_BRIEFING_ITEMS)
      .optional()
      .meta({ description: 'advisory host state, taken in order while it fits the budget' }),
    experiences: z
      .array(ExperienceItemSchema)
      .max(MAX_EXPERIENCES)
      .optional()
      .meta({
        description: `advisory lessons, at most ${MAX_EXPERIENCES} of at most ${MAX_EXPERIENCE_BYTES} UTF-8 bytes each, encoded like evidence and taken in order while they fit the budget; the ones applied are in receipts.experiences`,
      }),
    evidence: z
      .array(EvidenceItemSchema)
      .max(MAX_EVIDENCE_ITEMS)
      .optional()
      .meta({ description: `recalled material: untrusted content; each at most ${MAX_EVIDENCE_BYTES} UTF-8 bytes; one or more makes the run one with interaction context (recall)` }),
    preferences: PreferencesSchema.optional(),
    engine: EngineSchema.optional(),
    runId: CompileRunIdSchema.optional().meta({ description: `the run to trace this compile under (default: a new one); not one ending in ${REFRESH_RUN_SUFFIX}, which only a refresh opens` }),
    now: InstantSchema.optional().meta({ description: 'ISO 8601 with Z or an offset; default: the time of the request' }),
    timezone: TimeZoneSchema.optional().meta({ description: 'IANA zone, in any casing (a canonical zone is spelled as tzdb spells it); default: memory/heartbeat-state.json, else DEFAULT_TIMEZONE' }),
  })
  .superRefine((body, ctx) => {
    for (const issue of phaseIssues(body)) ctx.addIssue({ code: 'custom', path: [issue.field], message: issue.message });
  })
  .meta({ id: 'CompileRequest' });

export type CompileRequest = z.infer<typeof CompileRequestSchema>;

export const CompileQuerySchema = z.strictObject({ format: FormatSchema, hud: HudFlagSchema });
