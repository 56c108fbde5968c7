import { z } from 'zod';

export const HealthSchema = z.object({ status: z.literal('ok') });

export const ReadinessResultSchema = z.object({
  name: z.string(),
  ok: z.boolean(),
  reason: z.string().optional(),
});

export const ReadySchema = z.object({
  status: z.literal('ready'),
  checks: z.array(ReadinessResultSchema),
});
