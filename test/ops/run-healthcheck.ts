import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/config.js';

export const HEALTHCHECK_SCRIPT = join(PROJECT_ROOT, 'docker/healthcheck.mjs');

export interface HealthcheckRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs docker/healthcheck.mjs the way the container does, with exactly this environment (plus PATH). */
export async function runHealthcheck(env: Record<string, string>): Promise<HealthcheckRun> {
  const child = spawn(process.execPath, [HEALTHCHECK_SCRIPT], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}
