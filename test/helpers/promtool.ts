import { spawnSync } from 'node:child_process';

/** How to get promtool, said in the skip line and in CI's failure. */
export const ENABLE_PROMTOOL = 'apt-get install -y --no-install-recommends prometheus (Debian ships promtool in it), as .ci/run does';

/**
 * Prometheus's `promtool` on PATH, or why the tests that run it are skipped. Under CI=true
 * its absence fails the run instead (like the PostgreSQL suites'), so CI cannot pass without
 * having checked the alert rules.
 */
export function findPromtool(): { path: string; skipped: null } | { path: null; skipped: string } {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 15_000 });
  if (probe.status === 0) return { path: 'promtool', skipped: null };
  const reason = `promtool is not on PATH (${probe.error?.message ?? probe.stderr.trim().split('\n')[0]}): ${ENABLE_PROMTOOL}`;
  if (process.env['CI'] === 'true') throw new Error(`CI=true requires the alert rules to be checked, but ${reason}`);
  return { path: null, skipped: reason };
}
