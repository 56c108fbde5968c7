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

/** `GET /status`: readiness and how compiles went, in one answer an operator's tools read (the viewer's status strip, the CLI's `status`). */
export const StatusSchema = z
  .object({
    status: z.enum(['ready', 'not-ready']).meta({ description: 'what /readyz would answer: `ready` (200) or `not-ready` (503)' }),
    checks: z.array(ReadinessResultSchema),
    since: z.string().meta({ format: 'date-time', description: 'when this process started counting: the counts below are since then, and this process’s own (with WORKERS > 1, one worker’s; /metrics sums them)' }),
    compiles: z
      .object({
        total: z.number().int().meta({ description: 'requests to the compile routes (GET /context/..., POST /compile), whatever they answered' }),
        failed: z.number().int().meta({ description: 'compiles that delivered no prompt (cc_compile_failures_total)' }),
        failureRate: z.number().nullable().meta({ description: 'failed / total, to four decimals; null before the first compile' }),
        byCode: z.record(z.string(), z.number().int()).meta({ description: 'the failures by problem code, e.g. CC_BUDGET_EXCEEDED, CC_INTERNAL' }),
      })
      .meta({ id: 'StatusCompiles' }),
    fallbacks: z
      .object({
        total: z.number().int(),
        static: z.number().int(),
        stale: z.number().int(),
      })
      .meta({
        id: 'StatusFallbacks',
        description:
          'calls that connected on a fallback session while the service was out and caught up here on their first refresh (cc_refresh_catch_ups_total), by the session they had; a call that never refreshed is counted by its client only',
      }),
  })
  .meta({ id: 'Status' });
export type Status = z.infer<typeof StatusSchema>;
