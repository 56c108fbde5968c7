#!/usr/bin/env node
/**
 * `npm test`: the typecheck (`npm run typecheck`) and the suite (`vitest run`, with any arguments
 * given: `npm test -- test/security`) side by side, not one after the other. On a clean clone tsc
 * keeps one core busy for about 30 s, and the suite leaves a core idle now and then (its last
 * files run alone); one after the other, the typecheck's time was added to the suite's whole.
 * The typecheck's output is held until the suite ends and printed after it, so a type error is
 * the last thing on the screen. Exits non-zero when either fails.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// Under `npm test`, npm names its own script (npm_execpath), run here with this node: no shell,
// and no `npm.cmd`, which Node refuses to spawn without one on Windows. Run directly, `npm`
// through the shell.
const npmCli = process.env.npm_execpath;
const typecheckArgs = ['run', '--silent', 'typecheck'];
const typecheck = npmCli
  ? spawn(process.execPath, [npmCli, ...typecheckArgs], { stdio: ['ignore', 'pipe', 'pipe'] })
  : spawn('npm', typecheckArgs, { stdio: ['ignore', 'pipe', 'pipe'], shell: process.platform === 'win32' });
let typecheckOutput = '';
typecheck.stdout.on('data', (chunk) => (typecheckOutput += chunk));
typecheck.stderr.on('data', (chunk) => (typecheckOutput += chunk));
const typechecked = new Promise((resolve) => {
  typecheck.on('close', (code, signal) => resolve(signal ? `ended by ${signal}` : code));
  typecheck.on('error', (error) => resolve(`could not start: ${error.message}`));
});

const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
const suite = spawn(process.execPath, [vitest, 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    suite.kill(signal);
    typecheck.kill(signal);
  });
}
const suiteCode = await new Promise((resolve) => {
  suite.on('close', (code) => resolve(code ?? 1));
  suite.on('error', (error) => {
    console.error(`npm test: could not start vitest: ${error.message}`);
    resolve(1);
  });
});

const typecheckResult = await typechecked;
if (typecheckResult !== 0) {
  process.stdout.write(typecheckOutput);
  console.error(`npm test: the typecheck (npm run typecheck) failed: ${typeof typecheckResult === 'number' ? `exit ${typecheckResult}` : typecheckResult}`);
}
process.exit(suiteCode !== 0 ? suiteCode : typecheckResult === 0 ? 0 : 1);
