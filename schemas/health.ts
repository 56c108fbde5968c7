import { z } from 'zod';

export const HealthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

export const ReadinessResultSchema = z.object({
  name: z.string().meta({
    description:
      'what was checked: `traces` (appends can be made durable), `brain` (the root is readable), `load` (under every load-shedding threshold) or `warm` (each persona compiled once since the start, so the first call is as fast as the next)',
  }),
  ok: z.boolean(),
  reason: z.string().optional().meta({ description: 'why it is not ready' }),
  /** Ready, but worth knowing: e.g. the trace file was truncated under the writer, which moved to a new one. */
  note: z
    .string()
    .optional()
    .meta({ description: 'Ready, but worth knowing, e.g. the trace file was truncated or removed under the writer, which moved to a new file (shown for an hour)' }),
});

export const ReadySchema = z
  .object({
    status: z.literal('ready'),
    checks: z.array(ReadinessResultSchema),
  })
  .meta({ id: 'Ready' });
