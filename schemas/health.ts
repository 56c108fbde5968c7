import { z } from 'zod';

export const HealthSchema = z.object({ status: z.literal('ok') });

export const ReadinessResultSchema = z.object({
  name: z.string(),
  ok: z.boolean(),
  reason: z.string().optional(),
  /** Ready, but worth knowing: e.g. the trace file was truncated under the writer, which moved to a new one. */
  note: z.string().optional(),
});

export const ReadySchema = z.object({
  status: z.literal('ready'),
  checks: z.array(ReadinessResultSchema),
});
