import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { responseJsonSchema } from '../src/http/zod.js';
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

export async function brainReadable(root: string): Promise<void> {
  const info = await stat(root).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`brain root ${error.code === 'ENOENT' ? 'does not exist' : 'cannot be read'} (BRAIN_ROOT)`);
  });
  if (!info.isDirectory()) throw new Error('brain root is not a directory (BRAIN_ROOT)');
  await access(root, constants.R_OK | constants.X_OK).catch(() => {
    throw new Error('brain root is not readable (BRAIN_ROOT)');
  });
}

export async function healthRoutes(app: FastifyInstance): Promise<void> {
  const checks = app.readinessChecks;
  // The trace store registers its own check (`traces`: appends can be made durable).
  checks.push({ name: 'brain', check: () => brainReadable(app.config.brainRoot) });

  app.get(
    '/healthz',
    { config: { public: true, rateLimit: false }, schema: { response: { 200: responseJsonSchema(HealthSchema) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    { config: { public: true, rateLimit: false }, schema: { response: { 200: responseJsonSchema(ReadySchema) } } },
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
}
