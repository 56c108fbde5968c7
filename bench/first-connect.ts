/**
 * The first connect after a start (issue 32: ready means warm): `restarts` times, start the
 * server as `npm start` does, wait until `/readyz` answers 200, then time the first
 * `GET /context/mars` and, after it, the first `GET /context/venus` — no `now`, as a voice
 * server connects — and stop it. `npm run bench` reports it as a row on the bench brain
 * (`BENCH_RESTARTS`); on its own it measures any brain:
 *
 *   npm run build && node dist/bench/first-connect.js examples/brain [restarts=10]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { request } from 'undici';
import { PROJECT_ROOT } from '../src/config.js';
import { parseStartCommand } from './start-command.js';
import { freePort } from './lib/processes.js';

/** A started server: where it answers, and how to stop it (resolves once it exited). */
export interface Launched {
  base: string;
  stop(): Promise<void>;
}

export interface FirstConnects {
  restarts: number;
  /** Spawn → `/readyz` 200, ms, per start. */
  readyMs: number[];
  /** The first connect of each persona after ready, ms, per start (waits a shed answer asked for included). */
  firstMs: Record<'mars' | 'venus', number[]>;
  /** First connects the server shed (503 with `retry-after`: the machine was busy) and answered when asked again. */
  shed: number;
}

export const FIRST_CONNECT_PERSONAS = ['mars', 'venus'] as const;

/** The p50 (nearest rank) and max of `values`. */
export function p50Max(values: readonly number[]): { p50: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: sorted[Math.max(0, Math.ceil(sorted.length / 2) - 1)] ?? NaN, max: sorted.at(-1) ?? NaN };
}

async function get(url: string, token: string): Promise<{ status: number; ms: number; retryAfterS: number | null }> {
  const began = performance.now();
  const response = await request(url, { headers: { authorization: `Bearer ${token}` } });
  await response.body.dump();
  const retryAfter = Number(response.headers['retry-after']);
  return { status: response.statusCode, ms: performance.now() - began, retryAfterS: Number.isFinite(retryAfter) ? retryAfter : null };
}

/** How often a shed first connect is asked again, as a voice server would after `retry-after`, before the run stops. */
const SHED_RETRIES = 5;

/**
 * Runs `restarts` starts of `launch()`. A first connect the server shed (503 with
 * `retry-after`, when its event loop lags on a busy machine) is asked again after the time it
 * gave, as a voice server would, and counted (`shed`); its time runs from the first ask. Any
 * other answer that is not a 200 stops the run naming it.
 */
export async function measureFirstConnects(options: { restarts: number; token: string; launch: () => Promise<Launched> }): Promise<FirstConnects> {
  const result: FirstConnects = { restarts: options.restarts, readyMs: [], firstMs: { mars: [], venus: [] }, shed: 0 };
  for (let i = 0; i < options.restarts; i++) {
    const spawnedAt = performance.now();
    const server = await options.launch();
    try {
      for (let status = 0; status !== 200; ) {
        if (performance.now() - spawnedAt > 120_000) throw new Error('/readyz did not answer 200 within 120 s');
        status = await get(`${server.base}/readyz`, options.token).then((answer) => answer.status, () => 0);
        if (status !== 200) await sleep(5);
      }
      result.readyMs.push(performance.now() - spawnedAt);
      for (const persona of FIRST_CONNECT_PERSONAS) {
        const asked = performance.now();
        for (let retries = 0; ; retries++) {
          const { status, retryAfterS } = await get(`${server.base}/context/${persona}`, options.token);
          if (status === 200) break;
          if (status !== 503 || retryAfterS === null || retries === SHED_RETRIES) throw new Error(`the first GET /context/${persona} answered ${status}`);
          result.shed++;
          await sleep(retryAfterS * 1000);
        }
        result.firstMs[persona].push(performance.now() - asked);
      }
    } finally {
      await server.stop();
    }
  }
  return result;
}

/** `node dist/bench/first-connect.js <brain> [restarts]`: the server as `npm start` runs it, on that brain. */
async function main(): Promise<void> {
  const [brainArg, restartsArg = '10'] = process.argv.slice(2);
  if (brainArg === undefined) throw new Error('usage: node dist/bench/first-connect.js <brain> [restarts=10]');
  const start = parseStartCommand(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
  const token = `bench-${process.pid}-first-connect-token`;
  const traceRoot = await mkdtemp(join(tmpdir(), 'cc-first-connect-'));
  const launch = async (): Promise<Launched> => {
    const port = await freePort();
    const env = { PATH: process.env['PATH'] ?? '', ...start.env, PORT: String(port), HOST: '127.0.0.1', BRAIN_ROOT: resolve(brainArg), TRACE_DIR: await mkdtemp(join(traceRoot, 't-')), LOG_LEVEL: 'warn', CONTEXT_COMPILER_TOKENS: token, RATE_LIMIT_MAX: '100000000' };
    const child = spawn(process.execPath, [...start.nodeFlags, join(PROJECT_ROOT, start.entry)], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
    const exited = once(child, 'exit');
    return { base: `http://127.0.0.1:${port}`, stop: async () => void (child.kill('SIGTERM'), await exited) };
  };
  try {
    const figures = await measureFirstConnects({ restarts: Number(restartsArg), token, launch });
    const ready = p50Max(figures.readyMs);
    process.stdout.write(`${brainArg}: ${figures.restarts} starts; spawn → ready p50 ${ready.p50.toFixed(0)} ms, max ${ready.max.toFixed(0)} ms\n`);
    for (const persona of FIRST_CONNECT_PERSONAS) {
      const { p50, max } = p50Max(figures.firstMs[persona]);
      process.stdout.write(`  first GET /context/${persona} after ready: p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms\n`);
    }
  } finally {
    await rm(traceRoot, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
