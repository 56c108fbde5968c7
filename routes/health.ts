import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { json, problemResponse, problems } from '../src/http/openapi.js';
import { sendProblem, toProblem } from '../src/http/problem.js';
import { ProblemError } from '../src/errors.js';
import { HealthSchema, ReadySchema, StatusSchema, type Status } from '../schemas/health.js';
import type { Metrics } from '../src/http/metrics.js';

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
      const results = await runChecks(checks);
      const failing = results.filter((result) => !result.ok);
      if (failing.length === 0) return { status: 'ready' as const, checks: results };
      const detail = `Not ready: ${failing.map((result) => `${result.name}: ${'reason' in result ? result.reason : ''}`).join('; ')}.`;
      return sendProblem(reply, { ...toProblem(new ProblemError('CC_NOT_READY', detail), request), checks: results });
    },
  );

  const since = new Date().toISOString();
  app.get(
    '/status',
    {
      schema: {
        operationId: 'getStatus',
        summary: 'Readiness, the compile failure rate and the fallback count, in one answer (the viewer’s status strip, `context-compiler status`)',
        description: `Authenticated as \`/runs\` is (with tokens, any configured token), and always a 200:
\`status\` says what \`/readyz\` would answer, with the same \`checks\`. The counts are this process's since
\`since\`: compiles (requests to the compile routes) and those that delivered no prompt, by problem code,
and the calls that caught up here after connecting on a fallback session. Alerts read /metrics.`,
        response: { 200: json(StatusSchema, 'readiness and counts'), ...problems(401, 429) },
      },
    },
    async () => status(await runChecks(checks), app.metrics, since),
  );
};

type CheckResult = { name: string; ok: true; note?: string } | { name: string; ok: false; reason: string };

/** Every readiness check, at once; a check's note or reason as it said it. */
async function runChecks(checks: readonly ReadinessCheck[]): Promise<CheckResult[]> {
  return Promise.all(
    checks.map(async ({ name, check }): Promise<CheckResult> => {
      try {
        const note = await check();
        return typeof note === 'string' ? { name, ok: true, note } : { name, ok: true };
      } catch (error) {
        return { name, ok: false, reason: (error as Error).message };
      }
    }),
  );
}

/** The routes that compile: their requests are the compiles a failure rate is of. */
const COMPILE_ROUTES: readonly string[] = ['/compile', '/context/:persona', '/context/:persona/refresh', '/context/topic/:topicId'];

async function status(checks: CheckResult[], metrics: Metrics, since: string): Promise<Status> {
  const [requests, failures, catchUps] = await Promise.all([metrics.requests.get(), metrics.compileFailures.get(), metrics.refreshCatchUps.get()]);
  const total = requests.values.filter((value) => COMPILE_ROUTES.includes(String(value.labels['route']))).reduce((sum, value) => sum + value.value, 0);
  const byCode: Record<string, number> = {};
  for (const value of failures.values) {
    const code = String(value.labels['code']);
    byCode[code] = (byCode[code] ?? 0) + value.value;
  }
  const failed = Object.values(byCode).reduce((sum, count) => sum + count, 0);
  const baseline = (name: string) => catchUps.values.filter((value) => value.labels['baseline'] === name).reduce((sum, value) => sum + value.value, 0);
  const fallbacks = { static: baseline('static'), stale: baseline('stale') };
  return {
    status: checks.every((check) => check.ok) ? 'ready' : 'not-ready',
    checks,
    since,
    compiles: { total, failed, failureRate: total === 0 ? null : Math.round((failed / total) * 10_000) / 10_000, byCode },
    fallbacks: { total: fallbacks.static + fallbacks.stale, ...fallbacks },
  };
}
