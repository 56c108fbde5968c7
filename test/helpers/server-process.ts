import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { PROJECT_ROOT } from '../../src/config.js';
import { NO_DELAY_SHEDDING } from './app.js';
import { buildDist, SERVER_ENTRY } from './build.js';
import { beforeEveryFile } from './cleanups.js';

export { CLI_ENTRY, SERVER_ENTRY } from './build.js';

// Every file that starts the server or the CLI here runs them from dist/, built before its tests
// (once per process: buildDist keeps its first promise), also when a worker runs it after
// another file that imported this module first.
beforeEveryFile(() => buildDist());

export interface ServerProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
  /** Resolves with the port once the server logs that it is listening. */
  listening(timeoutMs?: number): Promise<number>;
}

export interface NodeProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
}

/** Runs `node <args>` from the project root with exactly the given environment (plus PATH), capturing its output. */
export function spawnNode(args: string[], env: Record<string, string>): NodeProcess {
  return spawnCommand(process.execPath, args, env);
}

/** Runs `command <args>` from the project root with exactly the given environment (plus PATH), capturing its output. */
export function spawnCommand(command: string, args: string[], env: Record<string, string>): NodeProcess {
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, exited, output: () => ({ stdout, stderr }) };
}

/** Runs `node <args>` to completion: its exit code and output. */
export async function runNode(args: string[], env: Record<string, string> = {}) {
  const run = spawnNode(args, env);
  const code = await run.exited;
  return { code, ...run.output() };
}

export interface StartOptions {
  /** `ulimit -n` for the server: its open-files limit (sockets included). */
  openFiles?: number;
  /** Node flags before the entry point, e.g. `npm start`'s heap caps. */
  nodeFlags?: string[];
}

/** Starts the server (`dist/src/server.js`) in a child process with the given environment (plus PATH), `NO_DELAY_SHEDDING` under it. */
export function startServer(env: Record<string, string>, options: StartOptions = {}): ServerProcess {
  env = { ...NO_DELAY_SHEDDING, ...env };
  const flags = options.nodeFlags ?? [];
  const { child, exited, output } =
    options.openFiles === undefined
      ? spawnNode([...flags, SERVER_ENTRY], env)
      : spawnCommand('sh', ['-c', `ulimit -n ${options.openFiles} && exec "$0" ${flags.join(' ')} "$1"`, process.execPath, SERVER_ENTRY], env);
  // A hang bound, not a speed: a server that cannot start exits or never logs; a busy machine can take over 20 s to start one.
  async function listening(timeoutMs = 120_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = /Server listening at http:\/\/(?:127\.0\.0\.1|\[::1\]|localhost):(\d+)/.exec(output().stdout);
      if (match) return Number(match[1]);
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    child.kill('SIGKILL');
    throw new Error(`server did not start: ${JSON.stringify(output())}`);
  }
  return { child, exited, output, listening };
}

/**
 * Polls `GET /readyz` on `port` until it answers 200 (the server warms each persona first) and
 * returns how many 503s it saw before; throws after `timeoutMs`.
 */
export async function untilReady(port: number, timeoutMs = 60_000): Promise<number> {
  const { request } = await import('undici');
  const deadline = Date.now() + timeoutMs;
  for (let notReady = 0; Date.now() < deadline; notReady++) {
    const response = await request(`http://127.0.0.1:${port}/readyz`);
    await response.body.dump();
    if (response.statusCode === 200) return notReady;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`/readyz on ${port} did not answer 200 within ${timeoutMs} ms`);
}
