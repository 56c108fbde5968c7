import { z } from 'zod';
import { isValidTimeZone } from '../src/config.js';
import { PHASES, SURFACES } from '../src/core/types.js';
import { ChannelIdSchema, RunIdSchema, WorkerIdSchema } from './ids.js';

export const MAX_CAPABILITIES = 64;
export const MAX_BRIEFING_ITEMS = 64;
export const MAX_EVIDENCE_ITEMS = 32;
export const MAX_EVIDENCE_BYTES = 2000;

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
  content: z.string().refine((text) => utf8Bytes(text) <= MAX_EVIDENCE_BYTES, `must be at most ${MAX_EVIDENCE_BYTES} bytes (UTF-8)`),
});

export const PreferencesSchema = z.strictObject({
  length: z.enum(['concise', 'detailed']).optional(),
  format: z.enum(['bullets', 'paragraphs']).optional(),
  tone: z.enum(['direct', 'gentle']).optional(),
});

const nonBlank = z.string().refine((text) => text.trim().length > 0, 'must not be blank');

/**
 * `POST /compile`. Phase rules: `start` may carry a task but no message; `turn` carries
 * exactly one message and no task.
 */
export const CompileRequestSchema = z
  .strictObject({
    phase: z.enum(PHASES),
    surface: z.enum(SURFACES),
    worker: WorkerIdSchema,
    channelId: ChannelIdSchema.optional(),
    task: nonBlank.optional(),
    message: nonBlank.optional(),
    capabilities: z
      .array(CapabilitySchema)
      .max(MAX_CAPABILITIES)
      .refine((items) => new Set(items.map((item) => item.id)).size === items.length, 'capability ids must be unique')
      .optional(),
    briefing: z.array(BriefingItemSchema).max(MAX_BRIEFING_ITEMS).optional(),
    evidence: z.array(EvidenceItemSchema).max(MAX_EVIDENCE_ITEMS).optional(),
    preferences: PreferencesSchema.optional(),
    runId: RunIdSchema.optional(),
    now: z.iso.datetime({ offset: true }).optional(),
    timezone: z.string().refine(isValidTimeZone, 'must be an IANA time zone such as UTC or Europe/London').optional(),
  })
  .superRefine((body, ctx) => {
    if (body.phase === 'start' && body.message !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['message'], message: 'phase "start" may not carry a message' });
    }
    if (body.phase === 'turn') {
      if (body.message === undefined) ctx.addIssue({ code: 'custom', path: ['message'], message: 'phase "turn" needs exactly one message' });
      if (body.task !== undefined) ctx.addIssue({ code: 'custom', path: ['task'], message: 'phase "turn" may not carry a task' });
    }
  });

export type CompileRequest = z.infer<typeof CompileRequestSchema>;

export const CompileQuerySchema = z.strictObject({
  format: z.enum(['json', 'text']).optional(),
});
