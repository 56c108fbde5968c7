import { randomBytes } from 'node:crypto';
import { access, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/config.js';
import type { EnsuredBrain } from '../generate-brain.js';
import { parseStartCommand, type StartCommand } from '../start-command.js';
import type { Knobs } from './knobs.js';
import { BenchError, freePort, onCleanUp, spawnNode, waitForLine, waitForPort, type Spawned } from './processes.js';
import { createRssSampler, type RssSampler } from './proc-stats.js';
import { buildTargets, send, traceCommits, type Target } from './requests.js';
import type { MeasuredServer } from './window.js';

/** What every scenario of a run shares: the settings, the brain, and the two servers under load. */
export interface Bench {
  knobs: Knobs;
  brain: EnsuredBrain;
  token: string;
  /** `BENCH_ACCEPT_ENCODING`. */
  encoding: string | undefined;
  start: StartCommand;
  /** The service's node flags and environment, as `npm start` runs it (or with BENCH_NODE_OPTIONS). */
  serverEntry: string;
  nodeFlags: string[];
  serverEnv: Record<string, string>;
  /** A temporary directory for the run's traces (removed at the end unless BENCH_KEEP_TRACES=1). */
  traceRoot: string;
  traceDir: string;
  bare: { spawned: Spawned; base: string; target: Target };
  server: { spawned: Spawned; base: string; port: number; rss: RssSampler; measured: MeasuredServer; spawnedAt: number; listeningAt: number; profileDir: string | null };
  /** The routes of BENCH_ROUTES on the server. */
  targets: Target[];
}

/** The server's node command as `npm start` runs it, once both entry points are built. */
async function serverCommand(knobs: Knobs) {
  // The server runs as `npm start` runs it (its node flags, e.g. the heap cap), unless BENCH_NODE_OPTIONS replaces them.
  const start = parseStartCommand(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
  const serverEntry = join(PROJECT_ROOT, start.entry);
  const nodeFlags = knobs.BENCH_NODE_OPTIONS === undefined ? start.nodeFlags : [];
  const bareEntry = join(PROJECT_ROOT, 'dist/bench/bare-server.js');
  for (const entry of [serverEntry, bareEntry]) {
    await access(entry).catch(() => {
      throw new BenchError(`${entry} is missing; run "npm run build" (npm run bench does it for you)`);
    });
  }
  return { start, serverEntry, nodeFlags, bareEntry };
}

/** The server's environment variables before `npm start`'s own, e.g. `MALLOC_ARENA_MAX=1 ` (empty with BENCH_NODE_OPTIONS). */
export function startEnvText(bench: Pick<Bench, 'knobs' | 'start'>): string {
  return bench.knobs.BENCH_NODE_OPTIONS === undefined ? Object.entries(bench.start.env).map(([name, value]) => `${name}=${value} `).join('') : '';
}

/** Fails early when an entry point is missing (before the compiler and the brain take their time). */
export async function checkBuilt(knobs: Knobs): Promise<void> {
  await serverCommand(knobs);
}

/**
 * Starts the bare server (with its durable log beside the traces) and the service as
 * `npm start` starts it, on the brain, with a temporary trace directory and a random token.
 */
export async function startServers(knobs: Knobs, brain: EnsuredBrain): Promise<Bench> {
  const { start, serverEntry, nodeFlags, bareEntry } = await serverCommand(knobs);
  const traceRoot = await mkdtemp(join(tmpdir(), 'cc-bench-traces-'));
  if (knobs.BENCH_KEEP_TRACES !== '1') onCleanUp(() => rm(traceRoot, { recursive: true, force: true }));
  const traceDir = join(traceRoot, 'traces');
  // The durable same-body route appends to its own log beside the service's traces (the same file system).
  const durableDir = join(traceRoot, 'durable');
  await mkdir(durableDir, { mode: 0o700 });
  const bareSpawned = spawnNode(bareEntry, ['0', durableDir], {});
  const barePort = Number((await waitForLine(bareSpawned, /listening (\d+)/, 10_000))[1]);
  const bareBase = `http://127.0.0.1:${barePort}`;
  const bareTarget: Target = { key: 'bare', label: 'bare Fastify (constant JSON)', method: 'GET', url: `${bareBase}/`, headers: {}, personaTargets: false };
  // Warms undici in this process, so the cold measurement times the server, not the client.
  await send(bareTarget);

  const token = `bench-${randomBytes(16).toString('hex')}`;
  const port = await freePort();
  const serverEnv: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    BRAIN_ROOT: brain.dir,
    TRACE_DIR: traceDir,
    RATE_LIMIT_MAX: '100000000',
    LOG_LEVEL: 'warn',
    CONTEXT_COMPILER_TOKENS: token,
    ...(knobs.BENCH_NODE_OPTIONS === undefined ? start.env : { NODE_OPTIONS: knobs.BENCH_NODE_OPTIONS }),
  };
  const bench = { knobs, start };
  process.stdout.write(`server: ${startEnvText(bench)}node ${[...nodeFlags, start.entry].join(' ')}` +
    (knobs.BENCH_NODE_OPTIONS === undefined ? ' (as npm start runs it)' : ` with NODE_OPTIONS=${JSON.stringify(knobs.BENCH_NODE_OPTIONS)} (BENCH_NODE_OPTIONS, not npm start's flags)`) + '\n');
  // One profile over the whole run (cold start, every window); read it with BENCH_ROUTES set to one route.
  const profileDir = knobs.BENCH_CPU_PROF === '1' ? join(knobs.BENCH_OUT, 'cpu-profiles', new Date().toISOString().replace(/[:.]/g, '-')) : null;
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const spawnedAt = performance.now();
  const spawned = spawnNode(serverEntry, [], serverEnv, [...nodeFlags, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])]);
  const rss = createRssSampler(() => [spawned.pid]);
  const listeningAt = await waitForPort(port, spawned, 20_000);
  const base = `http://127.0.0.1:${port}`;
  const measured: MeasuredServer = { pids: () => [spawned.pid], rss, commits: () => traceCommits(base, token) };
  return {
    ...bench,
    brain,
    token,
    encoding: knobs.BENCH_ACCEPT_ENCODING,
    serverEntry,
    nodeFlags,
    serverEnv,
    traceRoot,
    traceDir,
    bare: { spawned: bareSpawned, base: bareBase, target: bareTarget },
    server: { spawned, base, port, rss, measured, spawnedAt, listeningAt, profileDir },
    targets: buildTargets(base, token, brain.manifest, knobs.BENCH_ROUTES, knobs.BENCH_ACCEPT_ENCODING),
  };
}

/** Another server started exactly like the first but for `env` (a variable set to undefined is left out), and not waited for. */
export async function spawnLikeServer(bench: Bench, env: Record<string, string | undefined>): Promise<{ spawned: Spawned; port: number; base: string }> {
  const port = await freePort();
  const merged = Object.fromEntries(Object.entries({ ...bench.serverEnv, ...env, PORT: String(port) }).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const spawned = spawnNode(bench.serverEntry, [], merged, bench.nodeFlags);
  return { spawned, port, base: `http://127.0.0.1:${port}` };
}

/** `spawnLikeServer`, once its port accepts connections. */
export async function startLikeServer(bench: Bench, env: Record<string, string | undefined>) {
  const started = await spawnLikeServer(bench, env);
  await waitForPort(started.port, started.spawned, 20_000);
  return started;
}
