import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { json, problemResponse } from '../src/http/openapi.js';
import { sendProblem, toProblem } from '../src/http/problem.js';
import { ProblemError } from '../src/errors.js';
import { HealthSchema, ReadySchema } from '../schemas/health.js';

/**
 * A dependency `/readyz` checks; `check` resolves when ready — with a note when something
 * worth knowing happened that does not stop it serving — and throws a reason otherwise.
 */
export interface ReadinessCheck {
  name: string;
  check(): Promise<string | undefined | void>;
}

/** `GET /healthz` and `GET /readyz`: public and never rate limited, for probes. */
export const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  const checks = app.readinessChecks;
  // The same checks, at every scrape: cc_ready{check} is what an alert on readiness reads.
  app.metrics.collectReadiness(() => checks);

  app.get(
    '/healthz',
    {
      config: { public: true, rateLimit: false, overloadExempt: true },
      schema: {
        operationId: 'getLiveness',
        summary: 'Liveness (the process answers; no dependencies checked)',
        response: { 200: json(HealthSchema, 'alive') },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true, rateLimit: false, overloadExempt: true },
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness (brain root readable, trace store writable — probed by opening its first file at start — not overloaded, and warm: each persona compiled once since the start)',
        response: {
          200: json(ReadySchema, 'ready'),
          503: problemResponse(503, '`CC_NOT_READY` (with `checks`, each `{name, ok, reason?}`; `load` names the load-shedding threshold the replica is over) or `CC_SHUTTING_DOWN`'),
        },
      },
    },
    async (request, reply) => {
      const results = await Promise.all(
        checks.map(async ({ name, check }) => {
          try {
            const note = await check();
            return typeof note === 'string' ? { name, ok: true as const, note } : { name, ok: true as const };
          } catch (error) {
            return { name, ok: false as const, reason: (error as Error).message };
          }
        }),
      );
      const failing = results.filter((result) => !result.ok);
      if (failing.length === 0) return { status: 'ready' as const, checks: results };
      const detail = `Not ready: ${failing.map((result) => `${result.name}: ${'reason' in result ? result.reason : ''}`).join('; ')}.`;
      return sendProblem(reply, { ...toProblem(new ProblemError('CC_NOT_READY', detail), request), checks: results });
    },
  );
};
