import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/config.js';
import { runNode } from '../helpers/server-process.js';

export const HEALTHCHECK_SCRIPT = join(PROJECT_ROOT, 'docker/healthcheck.mjs');

export interface HealthcheckRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs docker/healthcheck.mjs the way the container does, with exactly this environment (plus PATH). */
export function runHealthcheck(env: Record<string, string>): Promise<HealthcheckRun> {
  return runNode([HEALTHCHECK_SCRIPT], env);
}
