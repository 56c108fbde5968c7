#!/usr/bin/env node
/**
 * The suite on a busy machine: starts HOGS (default 2) CPU-bound processes that compete with
 * it for the cores, runs `vitest run` (the suite `npm test` runs beside the typecheck, with any
 * arguments given: `npm run test:busy -- test/security`), stops the hogs whatever happens, and
 * exits with the suite's code. No test may depend on how fast the machine is; this is how we
 * see that none does.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const hogCount = Number(process.env.HOGS ?? 2);
if (!Number.isInteger(hogCount) || hogCount < 0) {
  console.error(`HOGS must be a whole number of processes, not ${process.env.HOGS}`);
  process.exit(2);
}

// A hog spins on one core. It checks now and then that its parent is still there, so that
// one outliving this script (killed with SIGKILL) stops by itself within a fraction of a second.
const HOG = `
const parent = process.ppid;
for (let i = 0; ; i++) if ((i & 0xfffff) === 0 && process.ppid !== parent) process.exit(0);
`;

const hogs = Array.from({ length: hogCount }, () => spawn(process.execPath, ['-e', HOG], { stdio: 'ignore' }));
function stopHogs() {
  for (const hog of hogs) if (hog.exitCode === null && hog.signalCode === null) hog.kill('SIGKILL');
}
process.on('exit', stopHogs);

const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
console.info(`test:busy: ${hogCount} CPU hog${hogCount === 1 ? '' : 's'} (pids ${hogs.map((hog) => hog.pid).join(', ') || 'none'}) competing with vitest run`);
const started = Date.now();
const suite = spawn(process.execPath, [vitest, 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    suite.kill(signal);
    stopHogs();
  });
}
suite.on('exit', (code, signal) => {
  stopHogs();
  console.info(`test:busy: vitest run ${signal ? `ended by ${signal}` : `exited ${code}`} after ${Math.round((Date.now() - started) / 1000)} s with ${hogCount} hog${hogCount === 1 ? '' : 's'}`);
  process.exit(code ?? 1);
});
suite.on('error', (error) => {
  stopHogs();
  console.error(`test:busy: could not start vitest: ${error.message}`);
  process.exit(1);
});
