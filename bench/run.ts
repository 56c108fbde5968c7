import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { access, appendFile, mkdir, mkdtemp, readFile, readdir, realpath, rm, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { z } from 'zod';
import { PROJECT_ROOT } from '../src/config.js';
import { ensureBrain, type BrainManifest } from './generate-brain.js';
import { createCluster, createDatabase, destroyCluster, findServerBinaries, type ClusterInfo } from './postgres-cluster.js';
import { mixedRequests, type MixRequest } from './mix.js';
import { FIRST_CONNECT_PERSONAS, measureFirstConnects, p50Max, type FirstConnects } from './first-connect.js';
import { parseStartCommand } from './start-command.js';

/**
 * The performance targets (2-core machine, 10,000-page brain, durable traces on). Every one is a
 * ratio between windows of the same run, or a bound on this run's own figure.
 */
export const TARGETS = {
  /**
   * Mars and venus, at one fixed minute and with a new minute on every request, against the
   * durable same-body route (the same bytes after the same `lstat`s and a hash-chained event
   * of the same size appended with group commit): req/s ratio at least…
   */
  durableRatio: 0.5,
  /** …server CPU per request at most this multiple of the durable route's… */
  durableCpu: 2.5,
  /** …and p99 at most this multiple of the durable route's. */
  durableP99: 2,
  /** A line appended to today's memory every 100 ms: mars req/s over the steady (fixed-minute) window. */
  churnRatio: 0.6,
  coldMs: 200,
  /** The first connect after a start, once /readyz answers 200 (p50 over `BENCH_RESTARTS` starts, each persona), on the bench brain. */
  firstConnectMs: 200,
  rssMB: 200,
  compilesPerSecond: 50_000,
} as const;

/** How often the churn window's writer appends a line to today's memory file. */
export const CHURN_INTERVAL_MS = 100;

const KnobsSchema = z.object({
  BENCH_DURATION: z.coerce.number().int().min(1).max(600).default(10),
  BENCH_WARMUP: z.coerce.number().int().min(0).max(600).default(5),
  BENCH_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(32),
  BENCH_COMPILE_DURATION: z.coerce.number().int().min(1).max(120).default(5),
  /** Seconds of POST /compile with a new message on every request (0 skips it); peak RSS is judged over it too. */
  BENCH_DISTINCT_DURATION: z.coerce.number().int().min(0).max(600).default(20),
  /**
   * Seconds of the mixed distinct-input load (bench/mix.ts: 70 % POST /compile, 10 % each of
   * mars at a new minute, venus in a randomly cased zone, a topic with a new name) from
   * BENCH_MIX_CONNECTIONS clients (0 skips it); peak RSS is judged over it.
   */
  BENCH_MIX_DURATION: z.coerce.number().int().min(0).max(600).default(20),
  BENCH_MIX_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(16),
  BENCH_ROUTES: z
    .string()
    .default('mars,venus,topic,compile')
    .transform((text) => text.split(',').map((part) => part.trim()).filter(Boolean))
    .pipe(z.array(z.enum(['mars', 'venus', 'topic', 'compile'])).min(1)),
  BENCH_SEED: z.string().min(1).default('context-compiler-bench'),
  BENCH_BRAIN: z.string().min(1).default(join(PROJECT_ROOT, 'bench/brain')),
  BENCH_OUT: z.string().min(1).default(join(PROJECT_ROOT, 'bench/out')),
  BENCH_KEEP_TRACES: z.enum(['0', '1']).default('0'),
  BENCH_CPU_PROF: z.enum(['0', '1']).default('0'),
  /** NODE_OPTIONS for the measured server *instead of* `npm start`'s node flags; unset, it runs exactly as `npm start` runs it. */
  BENCH_NODE_OPTIONS: z.string().optional(),
  /**
   * `postgres`: also start a throwaway local PostgreSQL cluster and a second server tracing
   * to it, and measure the persona routes on both backends side by side.
   */
  BENCH_TRACE: z.enum(['files', 'postgres']).default('files'),
  /** `0` skips the brain-churn window (mars while a writer appends to today's memory). */
  BENCH_CHURN: z.enum(['0', '1']).default('1'),
  /** Processes of the second server the persona routes are measured on (`WORKERS`); `0` or `1` skips it. */
  BENCH_WORKERS: z.coerce.number().int().min(0).max(64).default(2),
  /** Starts of the server, each timed from /readyz 200 to its first connect of each persona (`bench/first-connect.ts`); `0` skips it. */
  BENCH_RESTARTS: z.coerce.number().int().min(0).max(100).default(10),
  /**
   * An `Accept-Encoding` the persona windows send (e.g. `gzip` or `br`); the same-bytes bare
   * route then answers the same compressed bytes. Unset: no header, as the voice server's
   * undici client sends none by default.
   */
  BENCH_ACCEPT_ENCODING: z.string().regex(/^[a-z, ;=.0-9]+$/).optional(),
});
type Knobs = z.infer<typeof KnobsSchema>;
type RouteKey = Knobs['BENCH_ROUTES'][number];

type WindowKey = RouteKey | 'bare' | 'same' | 'durable' | 'minute' | 'churn' | 'workers' | 'compile-distinct' | 'mix';

interface Target {
  key: WindowKey;
  /** The route a derived window measures (a persona's new-minute, churn or same-bytes window). */
  route?: RouteKey;
  label: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Whether the persona targets apply to this route. */
  personaTargets: boolean;
}

interface Latency {
  p50: number;
  p97_5: number;
  p99: number;
  max: number;
  mean: number;
}

interface WindowResult {
  index: number;
  key: Target['key'];
  route: RouteKey | null;
  label: string;
  seconds: number;
  requests: number;
  requestsPerSecond: number;
  latencyMs: Latency;
  status: Record<string, number>;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Server CPU time per response, from /proc (null where /proc is missing). */
  serverCpuUsPerRequest: number | null;
  serverPeakRssMB: number | null;
  /** Bytes of the answers as they arrived (compressed when they were), per response. */
  bytesPerResponse: number;
  /** Durable trace commits (fsyncs, or transactions) per response, from `cc_trace_commits_total`; null for the bare server. */
  commitsPerRequest: number | null;
}

type Verdict = 'pass' | 'fail' | 'invalid' | 'n/a';

/** A failure the harness explains in one message (bad settings, a server that will not start). */
class BenchError extends Error {
  override readonly name = 'BenchError';
}

// ---------------------------------------------------------------------------------------
// Child processes: every one is registered so an exit, a signal or a crash kills it.

const children = new Set<ChildProcess>();
let currentLoad: autocannon.Instance | undefined;
let traceRoot: string | undefined;
let keepTraces = false;
let cluster: ClusterInfo | undefined;

process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping the servers\n`);
    currentLoad?.stop();
    for (const child of children) child.kill('SIGKILL');
    const cleanup = Promise.all([
      churning.brainDir ? restoreChurn(churning.brainDir) : undefined,
      traceRoot && !keepTraces ? rm(traceRoot, { recursive: true, force: true }) : undefined,
      cluster ? destroyCluster(cluster) : undefined,
    ]);
    void cleanup.finally(() => process.exit(130));
  });
}

interface Spawned {
  child: ChildProcess;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 16 KiB the process wrote (warnings and errors only at LOG_LEVEL=warn). */
  tail(): string;
  logLines(): number;
}

function spawnNode(script: string, args: string[], env: Record<string, string>, nodeArgs: string[] = []): Spawned {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let tail = '';
  let lines = 0;
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    lines += text.split('\n').length - 1;
    tail = (tail + text).slice(-16_384);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit').then(([code, signal]) => {
    children.delete(child);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  if (child.pid === undefined) throw new Error(`could not start ${script}`);
  return { child, pid: child.pid, exited, tail: () => tail, logLines: () => lines };
}

async function stopChild(spawned: Spawned, graceMs: number) {
  if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return { ...(await spawned.exited), ms: 0 };
  const started = performance.now();
  spawned.child.kill('SIGTERM');
  const timer = setTimeout(() => spawned.child.kill('SIGKILL'), graceMs);
  const result = await spawned.exited;
  clearTimeout(timer);
  return { ...result, ms: Math.round(performance.now() - started) };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolveConnect(true);
    });
    socket.once('error', () => resolveConnect(false));
  });
}

/** Polls until the port accepts a connection; returns performance.now() at that moment. */
async function waitForPort(port: number, spawned: Spawned, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await canConnect(port)) return performance.now();
    if (spawned.child.exitCode !== null) break;
    await sleep(2);
  }
  throw new BenchError(`server did not listen on ${port} within ${timeoutMs} ms; output:\n${spawned.tail()}`);
}

async function waitForLine(spawned: Spawned, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const match = pattern.exec(spawned.tail());
    if (match) return match;
    if (spawned.child.exitCode !== null) break;
    await sleep(10);
  }
  throw new BenchError(`no ${pattern} from child within ${timeoutMs} ms; output:\n${spawned.tail()}`);
}

// ---------------------------------------------------------------------------------------
// /proc sampling: peak RSS (VmHWM) and CPU time of the server under test.

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

async function procStatus(pid: number): Promise<{ rssKB: number; hwmKB: number } | null> {
  try {
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rssKB: field('VmRSS'), hwmKB: field('VmHWM') };
  } catch {
    return null;
  }
}

async function procCpuMs(pid: number): Promise<number | null> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS) * 1000;
  } catch {
    return null;
  }
}

/** `pid` and its children (a `WORKERS=N` server is its primary and N workers). */
async function processTree(pid: number): Promise<number[]> {
  const pids = [pid];
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = await readFile(`/proc/${name}/stat`, 'utf8');
      // The parent pid is the second field after the command name.
      if (Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]) === pid) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** CPU time of a process and its children, ms; null where /proc is missing. */
async function treeCpuMs(pids: readonly number[]): Promise<number | null> {
  let total = 0;
  for (const pid of pids) {
    const ms = await procCpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

/** Samples VmRSS every 200 ms (and VmHWM) of each process in `pids()`: the peak is the largest process's. */
function createRssSampler(pids: () => readonly number[]) {
  let windowPeakKB = 0;
  let peakKB = 0;
  let available = true;
  const sample = async () => {
    for (const pid of pids()) {
      const status = await procStatus(pid);
      if (!status) {
        if (pid === pids()[0]) available = false;
        continue;
      }
      windowPeakKB = Math.max(windowPeakKB, status.rssKB);
      peakKB = Math.max(peakKB, status.hwmKB, status.rssKB);
    }
  };
  const timer = setInterval(() => void sample(), 200);
  timer.unref();
  return {
    startWindow: () => void (windowPeakKB = 0),
    windowPeakMB: () => (available && windowPeakKB > 0 ? windowPeakKB / 1024 : null),
    async finalPeakMB(): Promise<number | null> {
      await sample();
      return available && peakKB > 0 ? peakKB / 1024 : null;
    },
    stop: () => clearInterval(timer),
  };
}

// ---------------------------------------------------------------------------------------
// Load windows.

function percentiles(values: number[]): Latency {
  if (values.length === 0) return { p50: NaN, p97_5: NaN, p99: NaN, max: NaN, mean: NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  let sum = 0;
  for (const value of sorted) sum += value;
  return { p50: at(0.5), p97_5: at(0.975), p99: at(0.99), max: sorted[sorted.length - 1]!, mean: sum / sorted.length };
}

interface LoadOptions {
  onResponse?: (status: number, ms: number, bytes: number) => void;
  /** A new body for every request (instead of `target.body`). */
  nextBody?: () => string;
  /** A new path and query for every request (instead of the target URL's). */
  nextPath?: () => string;
  /** A whole new request (method, path, headers, body) every time: the mixed window. */
  nextRequest?: () => MixRequest;
}

async function load(target: Target, seconds: number, connections: number, { onResponse, nextBody, nextPath, nextRequest }: LoadOptions = {}) {
  const setup = nextBody || nextPath || nextRequest;
  const instance = autocannon({
    url: target.url,
    method: target.method,
    headers: target.headers,
    ...(target.body === undefined ? {} : { body: target.body }),
    ...(setup
      ? {
          requests: [
            {
              setupRequest: (request) => ({
                ...request,
                ...(nextBody ? { body: nextBody() } : {}),
                ...(nextPath ? { path: nextPath() } : {}),
                ...(nextRequest ? nextRequest() : {}),
              }),
            },
          ],
        }
      : {}),
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
  });
  currentLoad = instance;
  if (onResponse) instance.on('response', (_client, status, bytes, ms) => onResponse(status, ms, bytes));
  try {
    return await instance;
  } finally {
    currentLoad = undefined;
  }
}

/** The server's `cc_trace_commits_total`, or null when it cannot be read. */
async function traceCommits(base: string, token: string): Promise<number | null> {
  try {
    const response = await request(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
    const text = await response.body.text();
    if (response.statusCode !== 200) return null;
    const match = /^cc_trace_commits_total (\d+)$/m.exec(text);
    return match ? Number(match[1]) : 0;
  } catch {
    return null;
  }
}

interface MeasuredServer {
  /** The processes whose CPU time counts (a `WORKERS=N` server: its primary and workers). */
  pids: () => readonly number[];
  rss?: ReturnType<typeof createRssSampler>;
  commits?: () => Promise<number | null>;
}

interface WindowOptions {
  warmupSeconds?: number;
  seconds?: number;
  nextBody?: () => string;
  nextPath?: () => string;
  nextRequest?: () => MixRequest;
  /** Clients of this window (default BENCH_CONNECTIONS). */
  connections?: number;
  /** Runs for the whole window (warm-up included), e.g. the churn writer; the returned function stops it. */
  during?: () => () => Promise<void>;
}

async function measureWindow(index: number, target: Target, knobs: Knobs, server: MeasuredServer, options: WindowOptions = {}): Promise<WindowResult> {
  const warmup = options.warmupSeconds ?? knobs.BENCH_WARMUP;
  const varying = {
    ...(options.nextBody ? { nextBody: options.nextBody } : {}),
    ...(options.nextPath ? { nextPath: options.nextPath } : {}),
    ...(options.nextRequest ? { nextRequest: options.nextRequest } : {}),
  };
  const stop = options.during?.();
  try {
    const connections = options.connections ?? knobs.BENCH_CONNECTIONS;
    if (warmup > 0) await load(target, warmup, connections, varying);
    const latencies: number[] = [];
    const status: Record<string, number> = {};
    let bytes = 0;
    server.rss?.startWindow();
    const commitsBefore = (await server.commits?.()) ?? null;
    const pids = server.pids();
    const cpuBefore = await treeCpuMs(pids);
    const result = await load(target, options.seconds ?? knobs.BENCH_DURATION, connections, {
      onResponse: (code, ms, size) => {
        latencies.push(ms);
        bytes += size;
        status[code] = (status[code] ?? 0) + 1;
      },
      ...varying,
    });
    const cpuAfter = await treeCpuMs(pids);
    const commitsAfter = (await server.commits?.()) ?? null;
    const requests = latencies.length;
    return {
      index,
      key: target.key,
      route: target.route ?? (target.key === 'bare' ? null : (target.key as RouteKey)),
      label: target.label,
      seconds: result.duration,
      requests,
      requestsPerSecond: requests / result.duration,
      latencyMs: percentiles(latencies),
      status,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      serverCpuUsPerRequest: cpuBefore !== null && cpuAfter !== null && requests > 0 ? ((cpuAfter - cpuBefore) * 1000) / requests : null,
      serverPeakRssMB: server.rss?.windowPeakMB() ?? null,
      bytesPerResponse: requests > 0 ? bytes / requests : 0,
      commitsPerRequest: commitsBefore !== null && commitsAfter !== null && requests > 0 ? (commitsAfter - commitsBefore) / requests : null,
    };
  } finally {
    await stop?.();
  }
}

interface MixContext {
  base: string;
  token: string;
  manifest: BrainManifest;
  knobs: Knobs;
  measured: MeasuredServer;
}

/** The mixed distinct-input window (bench/mix.ts), with its own client count and no warm-up. */
async function measureMix(index: number, { base, token, manifest, knobs, measured }: MixContext): Promise<WindowResult> {
  const compile = buildTargets(base, token, manifest, ['compile'])[0]!;
  const dayStart = localDayStartMs(manifest.endDate, manifest.timezone);
  const target: Target = { ...compile, key: 'mix', label: 'mixed distinct inputs' };
  process.stdout.write(`[mix] ${target.label} (${knobs.BENCH_MIX_DURATION} s, ${knobs.BENCH_MIX_CONNECTIONS} clients) … `);
  const result = await measureWindow(index, target, knobs, measured, {
    warmupSeconds: 0,
    seconds: knobs.BENCH_MIX_DURATION,
    connections: knobs.BENCH_MIX_CONNECTIONS,
    nextRequest: mixedRequests({
      token,
      compileBody: JSON.parse(compile.body!) as Record<string, unknown>,
      // A new minute every time, counting back from the brain's last local day.
      minuteAt: (i) => new Date(dayStart + 1439 * 60_000 - i * 60_000).toISOString().replace('.000Z', 'Z'),
      topicId: manifest.topics.typical,
      seed: knobs.BENCH_SEED,
    }),
  });
  out(`${fmt.int(result.requestsPerSecond)} req/s, peak RSS ${result.serverPeakRssMB === null ? '—' : `${result.serverPeakRssMB.toFixed(1)} MB`}` +
    `${result.non2xx ? `, ${result.non2xx} non-2xx` : ''}${result.errors ? `, ${result.errors} errors` : ''}`);
  return result;
}

// ---------------------------------------------------------------------------------------
// Single requests: cold start and preflight.

interface Sent {
  status: number;
  bytes: number;
  /** The body as it arrived (compressed when the server compressed it). */
  raw: Buffer;
  body: string;
  ms: number;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  runId: string | undefined;
}

async function send(target: Target, path?: string): Promise<Sent> {
  const started = performance.now();
  const url = path === undefined ? target.url : new URL(path, target.url).href;
  const response = await request(url, {
    method: target.method,
    headers: target.headers,
    ...(target.body === undefined ? {} : { body: target.body }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const raw = Buffer.from(await response.body.arrayBuffer());
  const header = (name: string) => {
    const value = response.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return {
    status: response.statusCode,
    bytes: raw.length,
    raw,
    body: raw.toString('utf8'),
    ms: performance.now() - started,
    contentType: header('content-type'),
    contentEncoding: header('content-encoding'),
    runId: header('x-run-id'),
  };
}

function problemSummary(body: string): string | undefined {
  try {
    const problem = JSON.parse(body) as { code?: string; detail?: string };
    return [problem.code, problem.detail].filter(Boolean).join(': ').slice(0, 200) || undefined;
  } catch {
    return undefined;
  }
}

interface Cold {
  spawnToListeningMs: number;
  firstRequestMs: number;
  firstStatus: number;
  listeningToFirst200Ms: number | null;
  attempts: number;
  note?: string;
}

/** The first request after start, from the moment the port accepts connections. */
async function measureCold(target: Target, spawnedAt: number, listeningAt: number): Promise<Cold> {
  let attempts = 1;
  const first = await send(target);
  const cold: Cold = {
    spawnToListeningMs: listeningAt - spawnedAt,
    firstRequestMs: first.ms,
    firstStatus: first.status,
    listeningToFirst200Ms: first.status === 200 ? performance.now() - listeningAt : null,
    attempts,
  };
  // Only "not ready yet" is worth retrying; any other status is the route's answer.
  let last = first;
  while (last.status === 503 && performance.now() - listeningAt < 10_000) {
    await sleep(5);
    last = await send(target);
    attempts++;
    if (last.status === 200) cold.listeningToFirst200Ms = performance.now() - listeningAt;
  }
  cold.attempts = attempts;
  if (cold.listeningToFirst200Ms === null) cold.note = `no 200: status ${last.status}${problemSummary(last.body) ? ` (${problemSummary(last.body)})` : ''}`;
  return cold;
}

// ---------------------------------------------------------------------------------------
// Requests the bench sends: the calls a voice server and a chat host make.

function buildTargets(base: string, token: string, manifest: BrainManifest, routes: RouteKey[], acceptEncoding?: string): Target[] {
  const auth = { authorization: `Bearer ${token}` };
  const voice = acceptEncoding === undefined ? auth : { ...auth, 'accept-encoding': acceptEncoding };
  // "now" pins the clock to the brain's last day, so today's and yesterday's memory exist.
  const now = `${manifest.endDate}T17:30:00Z`;
  const worker = manifest.workers.includes('scribe') ? 'scribe' : manifest.workers[0]!;
  const channelId = manifest.channels.includes('general') ? 'general' : manifest.channels[0]!;
  const all: Record<RouteKey, Target> = {
    mars: { key: 'mars', label: 'GET /context/mars', method: 'GET', url: `${base}/context/mars?now=${now}`, headers: voice, personaTargets: true },
    venus: { key: 'venus', label: 'GET /context/venus', method: 'GET', url: `${base}/context/venus?now=${now}`, headers: voice, personaTargets: true },
    topic: {
      key: 'topic',
      label: 'GET /context/topic/:id',
      method: 'GET',
      url: `${base}/context/topic/${manifest.topics.largest}`,
      headers: auth,
      personaTargets: false,
    },
    compile: {
      key: 'compile',
      label: 'POST /compile',
      method: 'POST',
      url: `${base}/compile`,
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        worker,
        phase: 'turn',
        surface: 'chat',
        channelId,
        now,
        message: 'Can you turn my notes from the roadmap review into three short bullet points for Jordan? Keep it plain.',
        capabilities: [
          { id: 'docs.read', description: 'Read a shared document by id.' },
          { id: 'docs.search', description: 'Search shared documents by keyword.' },
          { id: 'calendar.read', description: "Read today's calendar." },
          { id: 'notes.recall', description: 'Recall one of your memory notes by heading.' },
        ],
        briefing: [{ kind: 'approval', id: 'ap-17', intent: 'Send the roadmap summary to Jordan', state: 'pending' }],
        preferences: { length: 'concise', format: 'bullets' },
      }),
      personaTargets: false,
    },
  };
  return routes.map((key) => all[key]);
}

/** Epoch ms of the local midnight that starts `date` in `timeZone` (the zone's offset at noon that day). */
export function localDayStartMs(date: string, timeZone: string): number {
  const midnightUtc = Date.parse(`${date}T00:00:00Z`);
  const noon = new Date(midnightUtc + 12 * 3_600_000);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .formatToParts(noon)
      .map((part) => [part.type, part.value]),
  );
  const localNoonAsUtc = Date.UTC(Number(parts['year']), Number(parts['month']) - 1, Number(parts['day']), Number(parts['hour']), Number(parts['minute']));
  return midnightUtc - (localNoonAsUtc - noon.getTime());
}

/**
 * Paths of a persona route with a new minute of the brain's last local day on every request:
 * minute 7·i mod 1440 (every one of the day's 1,440 minutes before any repeats) and second i
 * mod 60, so "today" and "yesterday" stay the brain's last two memory days.
 */
export function newMinutePaths(path: string, manifest: Pick<BrainManifest, 'endDate' | 'timezone'>): () => string {
  const start = localDayStartMs(manifest.endDate, manifest.timezone);
  let i = 0;
  return () => {
    const at = start + ((i * 7) % 1440) * 60_000 + (i % 60) * 1000;
    i++;
    return `${path}?now=${new Date(at).toISOString().replace('.000Z', 'Z')}`;
  };
}

// ---------------------------------------------------------------------------------------
// The in-process compiler benchmark, provided by the compiler's owner.

async function measureCompiles(durationMs: number): Promise<{ compilesPerSecond: number | null; note?: string }> {
  const url = new URL('./compile-bench.js', import.meta.url);
  let module: { measureCompilesPerSecond?: (ms: number) => unknown };
  try {
    await access(url);
  } catch {
    return { compilesPerSecond: null, note: 'not available (bench/compile-bench.ts not present)' };
  }
  try {
    module = (await import(url.href)) as typeof module;
  } catch (error) {
    return { compilesPerSecond: null, note: `not available (import failed: ${(error as Error).message.split('\n')[0]})` };
  }
  if (typeof module.measureCompilesPerSecond !== 'function') {
    return { compilesPerSecond: null, note: 'not available (compile-bench exports no measureCompilesPerSecond)' };
  }
  try {
    const value = await module.measureCompilesPerSecond(durationMs);
    const rate = typeof value === 'number' ? value : (value as { compilesPerSecond?: unknown } | null)?.compilesPerSecond;
    if (typeof rate === 'number' && Number.isFinite(rate)) return { compilesPerSecond: rate };
    return { compilesPerSecond: null, note: `not available (unexpected result ${JSON.stringify(value)?.slice(0, 80)})` };
  } catch (error) {
    return { compilesPerSecond: null, note: `failed: ${(error as Error).message.split('\n')[0]}` };
  }
}

// ---------------------------------------------------------------------------------------
// CPU profile of the server (BENCH_CPU_PROF=1): node writes it when the server exits.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface ProfileSummary {
  path: string;
  /** Sampled time on the main thread, and how much of it was busy (not idle). */
  totalMs: number;
  busyMs: number;
  /** Functions by self time, the largest first; `percent` is of the busy time. */
  self: Array<{ fn: string; ms: number; percent: number }>;
}

/** The functions with the most self time in the newest `.cpuprofile` under `dir`, idle time left out. */
async function summarizeProfile(dir: string, top: number): Promise<ProfileSummary | null> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.cpuprofile')).sort();
  const name = names[names.length - 1];
  if (!name) return null;
  const path = join(dir, name);
  const profile = JSON.parse(await readFile(path, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const where = frame.url ? ` ${frame.url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}:${frame.lineNumber + 1}` : '';
    const fn = `${frame.functionName || '(anonymous)'}${where}`;
    const delta = Math.max(0, profile.timeDeltas[i] ?? 0);
    selfUs.set(fn, (selfUs.get(fn) ?? 0) + delta);
    totalUs += delta;
  });
  const busyUs = totalUs - (selfUs.get('(idle)') ?? 0);
  selfUs.delete('(idle)');
  const self = [...selfUs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, us]) => ({ fn, ms: us / 1000, percent: busyUs > 0 ? (100 * us) / busyUs : 0 }));
  return { path, totalMs: totalUs / 1000, busyMs: busyUs / 1000, self };
}

// ---------------------------------------------------------------------------------------
// BENCH_TRACE=postgres: the same persona routes against a server tracing to PostgreSQL.

interface BackendComparison {
  /** The database runs on this machine too: its CPU competes with the server's. */
  database: string;
  routes: Array<{ key: RouteKey; label: string; files: WindowResult; postgres: WindowResult }>;
}

async function compareBackends(options: {
  knobs: Knobs;
  brain: BrainManifest;
  token: string;
  serverEntry: string;
  nodeFlags: string[];
  serverEnv: Record<string, string>;
  files: { pid: number; port: number; commits: () => Promise<number | null> };
  acceptEncoding?: string | undefined;
}): Promise<BackendComparison> {
  const { knobs, brain, token, serverEntry, nodeFlags, serverEnv, files, acceptEncoding } = options;
  const bin = findServerBinaries();
  if (!bin) throw new BenchError('BENCH_TRACE=postgres needs the PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  process.stdout.write('postgres: starting a throwaway cluster … ');
  cluster = await createCluster(bin);
  const version = /\/(\d+)\/bin$/.exec(bin)?.[1] ?? '?';
  const url = await createDatabase(cluster.url, 'cc_bench');
  out(`PostgreSQL ${version} on 127.0.0.1:${cluster.port} (initdb in a temporary directory, defaults but for max_connections)`);
  const port = await freePort();
  const { TRACE_DIR: _traceDir, ...rest } = serverEnv;
  const server = spawnNode(serverEntry, [], { ...rest, PORT: String(port), TRACE_DATABASE_URL: url }, nodeFlags);
  await waitForPort(port, server, 20_000);
  const base = `http://127.0.0.1:${port}`;
  const personas = knobs.BENCH_ROUTES.filter((key) => key === 'mars' || key === 'venus');
  const routes: BackendComparison['routes'] = [];
  const forFiles = buildTargets(`http://127.0.0.1:${files.port}`, token, brain, personas, acceptEncoding);
  const forPostgres = buildTargets(base, token, brain, personas, acceptEncoding);
  for (const target of forPostgres) {
    const response = await send(target);
    if (response.status !== 200) throw new BenchError(`preflight on PostgreSQL traces: ${target.label} answered ${response.status} ${problemSummary(response.body) ?? ''}`);
  }
  const commits = () => traceCommits(base, token);
  for (const [i, key] of personas.entries()) {
    process.stdout.write(`[${key}] files traces … `);
    const onFiles = await measureWindow(i, forFiles[i]!, knobs, { pids: () => [files.pid], commits: files.commits });
    process.stdout.write(`${fmt.int(onFiles.requestsPerSecond)} req/s; PostgreSQL traces … `);
    const onPostgres = await measureWindow(i, forPostgres[i]!, knobs, { pids: () => [server.pid], commits });
    out(`${fmt.int(onPostgres.requestsPerSecond)} req/s`);
    routes.push({ key, label: forFiles[i]!.label, files: onFiles, postgres: onPostgres });
    if (server.child.exitCode !== null) throw new BenchError(`the PostgreSQL-traced server exited; output:\n${server.tail()}`);
  }
  await stopChild(server, 20_000);
  return { database: `PostgreSQL ${version}, local, same machine`, routes };
}

function printComparison(comparison: BackendComparison): void {
  out();
  out(`persona routes by trace backend (${comparison.database}; alternating windows of this run):`);
  const header = ['route', 'files req/s', 'p99 ms', 'commits/req', '', 'postgres req/s', 'p99 ms', 'commits/req', 'CPU µs/req'];
  const rows = [header];
  const commits = (value: number | null) => (value === null ? '—' : value.toFixed(3));
  for (const { label, files, postgres } of comparison.routes) {
    rows.push([
      label,
      fmt.int(files.requestsPerSecond),
      fmt.ms(files.latencyMs.p99),
      commits(files.commitsPerRequest),
      '',
      fmt.int(postgres.requestsPerSecond),
      fmt.ms(postgres.latencyMs.p99),
      commits(postgres.commitsPerRequest),
      postgres.serverCpuUsPerRequest === null ? '' : `${fmt.int(postgres.serverCpuUsPerRequest)} (node only)`,
    ]);
  }
  const widths = header.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) out(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '));
}

// ---------------------------------------------------------------------------------------
// Same-bytes bare routes, brain churn and WORKERS=N.

/** Gives the bare server the bytes a route answered, to answer them itself at `/same/<route>`. */
async function registerSameBytes(bareBase: string, route: RouteKey, answer: Sent): Promise<void> {
  const response = await request(`${bareBase}/same/${route}`, {
    method: 'PUT',
    headers: {
      'content-type': 'application/octet-stream',
      'x-serve-content-type': answer.contentType ?? 'application/json; charset=utf-8',
      ...(answer.contentEncoding ? { 'x-serve-content-encoding': answer.contentEncoding } : {}),
    },
    body: answer.raw,
  });
  await response.body.dump();
  if (response.statusCode !== 204) throw new BenchError(`the bare server refused the ${route} body (${response.statusCode})`);
}

/** What the durable same-body route of a persona repeats before it answers. */
interface DurableWork {
  /** Brain paths `lstat`ed per request: every directory and file on the way to what the answer relied on. */
  paths: string[];
  /** Bytes one request at the fixed minute adds to the trace store once its shared records are written. */
  eventBytes: number;
  /** How many requests `eventBytes` is the mean of. */
  sampled: number;
}

/**
 * What the service did for one answer, read back from its trace: the paths of its sources,
 * of the paths it found missing and of the directories it listed, each with every directory
 * on the way (what a revalidation `lstat`s: the brain reader's lookups); and the bytes an
 * event of the route adds to the trace store, measured over `samples` more requests at the
 * fixed minute (the first wrote the shared records every later event refers to).
 */
async function durableWork(options: { base: string; token: string; target: Target; runId: string; traceDir: string; brainRoot: string; samples: number }): Promise<DurableWork> {
  const { base, token, target, runId, traceDir, brainRoot, samples } = options;
  const response = await request(`${base}/runs/${encodeURIComponent(runId)}/trace`, { headers: { authorization: `Bearer ${token}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new BenchError(`the trace of the ${target.label} preflight answered ${response.statusCode} ${problemSummary(text) ?? ''}`);
  const trace = JSON.parse(text) as { events: Array<{ sources?: Array<{ path: string }>; absent?: Array<{ path: string }>; listings?: Array<{ path: string }> }> };
  const event = trace.events[trace.events.length - 1];
  if (!event) throw new BenchError(`the trace of the ${target.label} preflight holds no event`);
  const relied = [...(event.sources ?? []), ...(event.absent ?? []), ...(event.listings ?? [])].map((item) => item.path);
  const paths = new Set<string>();
  for (const path of relied) {
    const names = path.split('/');
    for (let i = 1; i <= names.length; i++) paths.add(names.slice(0, i).join('/'));
  }
  const before = await dirUsage(traceDir);
  for (let i = 0; i < samples; i++) {
    const sent = await send(target);
    if (sent.status !== 200) throw new BenchError(`${target.label} answered ${sent.status} while its event size was measured`);
  }
  const after = await dirUsage(traceDir);
  const root = await realpath(brainRoot);
  return { paths: [...paths].sort().map((path) => join(root, path)), eventBytes: Math.round((after.bytes - before.bytes) / samples), sampled: samples };
}

/** Gives the bare server what its durable route for `route` repeats (its body is the same-bytes route's). */
async function registerDurable(bareBase: string, route: RouteKey, work: DurableWork): Promise<void> {
  const response = await request(`${bareBase}/durable/${route}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ paths: work.paths, eventBytes: work.eventBytes }),
  });
  await response.body.dump();
  if (response.statusCode !== 204) throw new BenchError(`the bare server refused the ${route} durable route (${response.statusCode})`);
}

/** Where a churn window recorded what to put back: a run killed mid-window is repaired by the next one. */
const CHURN_MARKER = '.bench-churn-restore.json';

/** Cuts today's memory file back to the size it had before a churn window, if a marker says one ran. */
async function restoreChurn(brainDir: string): Promise<void> {
  const marker = join(brainDir, CHURN_MARKER);
  let saved: { path: string; size: number };
  try {
    saved = JSON.parse(await readFile(marker, 'utf8')) as { path: string; size: number };
  } catch {
    return;
  }
  await truncate(join(brainDir, saved.path), saved.size);
  await unlink(marker);
}

/** The brain a churn window is appending to right now, so a signal or a failure puts it back. */
const churning: { brainDir: string | null } = { brainDir: null };

/**
 * Appends a line to today's memory file every `CHURN_INTERVAL_MS` (as an operator's notes
 * app would), until the returned function is called; then cuts the file back to its size
 * before, so the generated brain is unchanged for the next run.
 */
function startChurn(brainDir: string, manifest: Pick<BrainManifest, 'endDate'>): () => Promise<void> {
  const path = `memory/${manifest.endDate}.md`;
  const file = join(brainDir, path);
  let appended = 0;
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const ready = (async () => {
    const size = (await stat(file)).size;
    await writeFile(join(brainDir, CHURN_MARKER), JSON.stringify({ path, size }));
    churning.brainDir = brainDir;
    timer = setInterval(() => {
      writing = writing.then(() => appendFile(file, `- ${String(appended++).padStart(5, '0')}: I feel a small hope about the churn line that just landed.\n`));
    }, CHURN_INTERVAL_MS);
  })();
  return async () => {
    await ready;
    clearInterval(timer);
    await writing;
    await restoreChurn(brainDir);
    churning.brainDir = null;
  };
}

/** The bare windows on either side of window `index` (the ones its ratio is taken against). */
function nearestBare(windows: readonly WindowResult[], index: number): WindowResult[] {
  const found: WindowResult[] = [];
  for (let i = index - 1; i >= 0; i--) {
    if (windows[i]!.key === 'bare') {
      found.push(windows[i]!);
      break;
    }
  }
  for (let i = index + 1; i < windows.length; i++) {
    if (windows[i]!.key === 'bare') {
      found.push(windows[i]!);
      break;
    }
  }
  return found;
}

interface Comparison {
  label: string;
  /** The window judged and the one it is compared with (indexes into `windows`). */
  window: number;
  reference: number;
  ratio: number | null;
  target: number;
  direction: 'at least' | 'at most';
  verdict: Verdict;
}

function ratioOf(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

function compare(label: string, window: WindowResult, reference: WindowResult, ratio: number | null, target: number, direction: Comparison['direction']): Comparison {
  const clean = [window, reference].every((w) => w.non2xx === 0 && w.errors === 0 && w.requests > 0);
  const ok = ratio !== null && (direction === 'at least' ? ratio >= target : ratio <= target);
  return { label, window: window.index, reference: reference.index, ratio, target, direction, verdict: ratio === null ? 'n/a' : verdict(ok, clean) };
}

interface WorkersComparison {
  workers: number;
  /** Processes found serving (the primary and its workers); 1 when the build ignores WORKERS. */
  processes: number;
  peakRssMB: number | null;
  routes: Array<{ key: RouteKey; label: string; one: WindowResult; many: WindowResult; ratio: number }>;
}

/**
 * Starts a second server exactly like the first but with `WORKERS=N` and its own trace
 * directory, and measures each persona route at a fixed minute on it; the one-process figure
 * is that route's window in the main table.
 */
async function compareWorkers(options: {
  knobs: Knobs;
  brain: BrainManifest;
  token: string;
  serverEntry: string;
  nodeFlags: string[];
  serverEnv: Record<string, string>;
  windows: WindowResult[];
  traceRoot: string;
  acceptEncoding?: string | undefined;
}): Promise<WorkersComparison> {
  const { knobs, brain, token, serverEntry, nodeFlags, serverEnv, windows, acceptEncoding } = options;
  const port = await freePort();
  const workers = knobs.BENCH_WORKERS;
  const env = { ...serverEnv, PORT: String(port), WORKERS: String(workers), TRACE_DIR: join(options.traceRoot, `traces-workers-${workers}`) };
  process.stdout.write(`WORKERS=${workers}: starting … `);
  const server = spawnNode(serverEntry, [], env, nodeFlags);
  await waitForPort(port, server, 20_000);
  const base = `http://127.0.0.1:${port}`;
  const personas = knobs.BENCH_ROUTES.filter((key) => key === 'mars' || key === 'venus');
  const targets = buildTargets(base, token, brain, personas, acceptEncoding);
  // Every worker answers before the load starts (connections are spread over the processes).
  for (let i = 0; i < 4 * workers; i++) for (const target of targets) await send(target);
  let pids: number[] = await processTree(server.pid);
  const deadline = performance.now() + 10_000;
  while (pids.length < workers + 1 && performance.now() < deadline) {
    await sleep(100);
    pids = await processTree(server.pid);
  }
  out(`${pids.length} process(es)`);
  const rss = createRssSampler(() => pids);
  const routes: WorkersComparison['routes'] = [];
  for (const [i, target] of targets.entries()) {
    const key = target.key as RouteKey;
    process.stdout.write(`[WORKERS=${workers}] ${target.label} … `);
    const many = await measureWindow(i, { ...target, key: 'workers', route: key, label: `${target.label}, WORKERS=${workers}` }, knobs, { pids: () => pids, rss });
    out(`${fmt.int(many.requestsPerSecond)} req/s, p99 ${fmt.ms(many.latencyMs.p99)} ms`);
    const one = windows.find((window) => window.key === key)!;
    routes.push({ key, label: target.label, one, many, ratio: many.requestsPerSecond / one.requestsPerSecond });
    if (server.child.exitCode !== null) throw new BenchError(`the WORKERS=${workers} server exited; output:\n${server.tail()}`);
  }
  const peakRssMB = await rss.finalPeakMB();
  rss.stop();
  await stopChild(server, 20_000);
  return { workers, processes: pids.length, peakRssMB, routes };
}

function printWorkers(comparison: WorkersComparison): void {
  out();
  out(`persona routes at a fixed minute, WORKERS=1 (the windows above) and WORKERS=${comparison.workers} (${comparison.processes} processes, peak RSS of the largest ${comparison.peakRssMB === null ? '—' : `${comparison.peakRssMB.toFixed(1)} MB`}):`);
  const rows = [['route', '1: req/s', 'p99 ms', 'CPU µs/req', `${comparison.workers}: req/s`, 'p99 ms', 'CPU µs/req', 'ratio']];
  for (const { label, one, many, ratio } of comparison.routes) {
    rows.push([
      label,
      fmt.int(one.requestsPerSecond),
      fmt.ms(one.latencyMs.p99),
      fmt.int(one.serverCpuUsPerRequest),
      fmt.int(many.requestsPerSecond),
      fmt.ms(many.latencyMs.p99),
      fmt.int(many.serverCpuUsPerRequest),
      ratio.toFixed(2),
    ]);
  }
  printTable(rows);
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) out(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '));
}

function fmtBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes === 0) return '—';
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${Math.round(bytes)} B`;
}

// ---------------------------------------------------------------------------------------
// Report.

function verdict(ok: boolean, valid = true): Verdict {
  return valid ? (ok ? 'pass' : 'fail') : 'invalid';
}

const fmt = {
  int: (n: number | null) => (n === null || !Number.isFinite(n) ? '—' : Math.round(n).toLocaleString('en-US')),
  ms: (n: number | null) => (n === null || !Number.isFinite(n) ? '—' : n < 10 ? n.toFixed(2) : n.toFixed(1)),
  mark: (v: Verdict) => ({ pass: 'PASS', fail: 'FAIL', invalid: 'INVALID', 'n/a': '' })[v],
};

async function dirUsage(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return { files, bytes };
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = await dirUsage(path);
      files += inner.files;
      bytes += inner.bytes;
    } else {
      files++;
      bytes += (await stat(path)).size;
    }
  }
  return { files, bytes };
}

function gitInfo(): { commit: string | null; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

const out = (line = '') => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const parsed = KnobsSchema.safeParse(
    Object.fromEntries(Object.entries(process.env).filter(([key, value]) => key.startsWith('BENCH_') && (value !== '' || key === 'BENCH_NODE_OPTIONS'))),
  );
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${String(issue.path[0])}: ${issue.message}`);
    throw new BenchError(`invalid benchmark settings\n  ${lines.join('\n  ')}`);
  }
  const knobs = parsed.data;
  keepTraces = knobs.BENCH_KEEP_TRACES === '1';
  const runStarted = performance.now();
  const startedAt = new Date();
  const loadAtStart = loadavg();

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

  out(`context-compiler bench — ${cpus().length} CPUs, node ${process.version}, ${knobs.BENCH_CONNECTIONS} connections, ` +
    `${knobs.BENCH_WARMUP} s warm-up + ${knobs.BENCH_DURATION} s measure per window; load average ${loadAtStart.map((n) => n.toFixed(2)).join(' ')}`);
  // First, while the machine is idle and this process is fresh.
  process.stdout.write(`in-process compiler (${knobs.BENCH_COMPILE_DURATION} s) … `);
  const compile = await measureCompiles(knobs.BENCH_COMPILE_DURATION * 1000);
  out(compile.compilesPerSecond === null ? compile.note : `${fmt.int(compile.compilesPerSecond)} compiles/s`);

  const brainStarted = performance.now();
  const brain = await ensureBrain(resolve(knobs.BENCH_BRAIN), { seed: knobs.BENCH_SEED }).catch((error: Error) => {
    throw new BenchError(`brain: ${error.message}`, { cause: error });
  });
  const brainMs = performance.now() - brainStarted;
  out(`brain: ${brain.manifest.totalFiles.toLocaleString('en-US')} files, ${(brain.manifest.totalBytes / 1e6).toFixed(1)} MB at ${brain.dir} ` +
    `(${brain.generated ? 'generated' : 'reused'} in ${Math.round(brainMs)} ms)`);

  await restoreChurn(brain.dir);

  traceRoot = await mkdtemp(join(tmpdir(), 'cc-bench-traces-'));
  const traceDir = join(traceRoot, 'traces');
  // The durable same-body route appends to its own log beside the service's traces (the same file system).
  const durableDir = join(traceRoot, 'durable');
  await mkdir(durableDir, { mode: 0o700 });
  const bare = spawnNode(bareEntry, ['0', durableDir], {});
  const barePort = Number((await waitForLine(bare, /listening (\d+)/, 10_000))[1]);
  const bareBase = `http://127.0.0.1:${barePort}`;
  const bareTarget: Target = { key: 'bare', label: 'bare Fastify (constant JSON)', method: 'GET', url: `${bareBase}/`, headers: {}, personaTargets: false };
  // Warms undici in this process, so the cold measurement below times the server, not the client.
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
  const startEnv = knobs.BENCH_NODE_OPTIONS === undefined ? Object.entries(start.env).map(([name, value]) => `${name}=${value} `).join('') : '';
  out(`server: ${startEnv}node ${[...nodeFlags, start.entry].join(' ')}` +
    (knobs.BENCH_NODE_OPTIONS === undefined ? ' (as npm start runs it)' : ` with NODE_OPTIONS=${JSON.stringify(knobs.BENCH_NODE_OPTIONS)} (BENCH_NODE_OPTIONS, not npm start's flags)`));
  // One profile over the whole run (cold start, every window); read it with BENCH_ROUTES set to one route.
  const profileDir = knobs.BENCH_CPU_PROF === '1' ? join(knobs.BENCH_OUT, 'cpu-profiles', new Date().toISOString().replace(/[:.]/g, '-')) : null;
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const spawnedAt = performance.now();
  const server = spawnNode(serverEntry, [], serverEnv, [...nodeFlags, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])]);
  const rss = createRssSampler(() => [server.pid]);
  const listeningAt = await waitForPort(port, server, 20_000);
  const base = `http://127.0.0.1:${port}`;
  const encoding = knobs.BENCH_ACCEPT_ENCODING;
  const targets = buildTargets(base, token, brain.manifest, knobs.BENCH_ROUTES, encoding);
  const commits = () => traceCommits(base, token);
  const measured: MeasuredServer = { pids: () => [server.pid], rss, commits };
  const coldTarget = targets.find((target) => target.key === 'mars') ?? buildTargets(base, token, brain.manifest, ['mars'], encoding)[0]!;
  const cold = await measureCold(coldTarget, spawnedAt, listeningAt);
  out(`cold: listening ${fmt.ms(cold.spawnToListeningMs)} ms after spawn; first /context/mars ${fmt.ms(cold.firstRequestMs)} ms ` +
    `(status ${cold.firstStatus}); first 200 ${cold.listeningToFirst200Ms === null ? cold.note : `${fmt.ms(cold.listeningToFirst200Ms)} ms after listening`}`);

  // Preflight: one request per route. A persona's answer at the fixed minute becomes the
  // body of its same-bytes bare route, byte for byte (compressed as it arrived, if it was).
  const preflight: Record<string, { status: number; bytes: number; contentEncoding?: string; problem?: string }> = {};
  const sameTargets = new Map<RouteKey, Target>();
  const durableTargets = new Map<RouteKey, Target>();
  const durable: Partial<Record<RouteKey, DurableWork>> = {};
  for (const target of targets) {
    const response = await send(target);
    const problem = response.status >= 300 ? problemSummary(response.body) : undefined;
    preflight[target.key] = {
      status: response.status,
      bytes: response.bytes,
      ...(response.contentEncoding ? { contentEncoding: response.contentEncoding } : {}),
      ...(problem ? { problem } : {}),
    };
    out(`preflight ${target.label}: ${response.status}, ${response.bytes} bytes${response.contentEncoding ? ` (${response.contentEncoding})` : ''}${problem ? ` — ${problem}` : ''}`);
    if (target.personaTargets && response.status === 200) {
      const route = target.key as RouteKey;
      await registerSameBytes(bareBase, route, response);
      sameTargets.set(route, {
        key: 'same',
        route,
        label: `  bare Fastify (the ${fmtBytes(response.bytes)} of ${route})`,
        method: 'GET',
        url: `${bareBase}/same/${route}`,
        headers: encoding === undefined ? {} : { 'accept-encoding': encoding },
        personaTargets: false,
      });
      if (response.runId === undefined) throw new BenchError(`${target.label} answered without an x-run-id`);
      const work = await durableWork({ base, token, target, runId: response.runId, traceDir, brainRoot: brain.dir, samples: 32 });
      durable[route] = work;
      await registerDurable(bareBase, route, work);
      out(`  durable same-body route for ${route}: ${work.paths.length} lstats, a ${fmtBytes(work.eventBytes)} event (mean of ${work.sampled} fixed-minute events)`);
      durableTargets.set(route, {
        key: 'durable',
        route,
        label: `  durable same-body (${work.paths.length} lstats, ${fmtBytes(work.eventBytes)} event, group commit)`,
        method: 'GET',
        url: `${bareBase}/durable/${route}`,
        headers: encoding === undefined ? {} : { 'accept-encoding': encoding },
        personaTargets: false,
      });
    }
  }

  // The windows, in order: every route between bare windows; each persona at a fixed minute,
  // then its same-bytes bare route and its durable same-body route, then a new minute on every
  // request (and mars under churn).
  interface Planned {
    target: Target;
    options?: WindowOptions;
  }
  const plan: Planned[] = [{ target: bareTarget }];
  for (const target of targets) {
    plan.push({ target });
    if (target.personaTargets) {
      const route = target.key as RouteKey;
      const same = sameTargets.get(route);
      if (same) plan.push({ target: same });
      const floor = durableTargets.get(route);
      if (floor) plan.push({ target: floor });
      const path = new URL(target.url).pathname;
      plan.push({
        target: { ...target, key: 'minute', route, label: `${target.label}, a new minute every request` },
        options: { nextPath: newMinutePaths(path, brain.manifest) },
      });
      if (route === 'mars' && knobs.BENCH_CHURN === '1') {
        plan.push({
          target: { ...target, key: 'churn', route, label: `${target.label}, today's memory appended every ${CHURN_INTERVAL_MS} ms` },
          options: { during: () => startChurn(brain.dir, brain.manifest) },
        });
      }
    }
    plan.push({ target: bareTarget });
  }
  const windows: WindowResult[] = [];
  for (const [index, { target, options }] of plan.entries()) {
    process.stdout.write(`[${index + 1}/${plan.length}] ${target.label.trim()} … `);
    const bareSide = target.key === 'bare' || target.key === 'same' || target.key === 'durable';
    const window = await measureWindow(index, target, knobs, bareSide ? { pids: () => [bare.pid] } : measured, options);
    windows.push(window);
    out(`${fmt.int(window.requestsPerSecond)} req/s, p99 ${fmt.ms(window.latencyMs.p99)} ms${window.non2xx ? `, ${window.non2xx} non-2xx` : ''}${window.errors ? `, ${window.errors} errors` : ''}`);
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new BenchError(`the server exited during ${target.label.trim()} (code ${server.child.exitCode}, signal ${server.child.signalCode}); output:\n${server.tail()}`);
    }
  }

  // Distinct inputs last: no memo hit, new trace content on every request, the heap at its fullest.
  let distinct: WindowResult | null = null;
  if (knobs.BENCH_DISTINCT_DURATION > 0) {
    const compile = buildTargets(base, token, brain.manifest, ['compile'])[0]!;
    const template = JSON.parse(compile.body!) as Record<string, unknown>;
    let turn = 0;
    const target: Target = { ...compile, key: 'compile-distinct', route: 'compile', label: 'POST /compile, distinct inputs' };
    process.stdout.write(`[distinct] ${target.label} (${knobs.BENCH_DISTINCT_DURATION} s) … `);
    distinct = await measureWindow(plan.length, target, knobs, measured, {
      warmupSeconds: 0,
      seconds: knobs.BENCH_DISTINCT_DURATION,
      nextBody: () => JSON.stringify({ ...template, message: `${String(template['message'])} (turn ${++turn})` }),
    });
    windows.push(distinct);
    out(`${fmt.int(distinct.requestsPerSecond)} req/s, peak RSS ${distinct.serverPeakRssMB === null ? '—' : `${distinct.serverPeakRssMB.toFixed(1)} MB`}` +
      `${distinct.non2xx ? `, ${distinct.non2xx} non-2xx` : ''}${distinct.errors ? `, ${distinct.errors} errors` : ''}`);
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new BenchError(`the server exited during ${target.label} (code ${server.child.exitCode}, signal ${server.child.signalCode}); output:\n${server.tail()}`);
    }
  }

  // The mixed distinct-input load last of all: every route at once, nothing ever seen before.
  let mix: WindowResult | null = null;
  if (knobs.BENCH_MIX_DURATION > 0) {
    mix = await measureMix(plan.length + 1, { base, token, manifest: brain.manifest, knobs, measured });
    windows.push(mix);
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new BenchError(`the server exited during the mixed window (code ${server.child.exitCode}, signal ${server.child.signalCode}); output:\n${server.tail()}`);
    }
  }

  const peakRssMB = await rss.finalPeakMB();
  rss.stop();

  // BENCH_TRACE=postgres: the persona routes on both backends, in alternating windows of the same run.
  let backends: BackendComparison | null = null;
  if (knobs.BENCH_TRACE === 'postgres') {
    backends = await compareBackends({ knobs, brain: brain.manifest, token, serverEntry, nodeFlags, serverEnv, files: { pid: server.pid, port, commits }, acceptEncoding: encoding });
  }

  // WORKERS=N: the persona routes at a fixed minute on a server of N processes, beside the one above.
  let workers: WorkersComparison | null = null;
  if (knobs.BENCH_WORKERS > 1) {
    workers = await compareWorkers({ knobs, brain: brain.manifest, token, serverEntry, nodeFlags, serverEnv, windows, traceRoot, acceptEncoding: encoding });
  }

  const serverStop = await stopChild(server, 20_000);
  await stopChild(bare, 5_000);
  // Ready means warm: the first connect after each of BENCH_RESTARTS starts, alone on the machine.
  let firstConnects: FirstConnects | null = null;
  if (knobs.BENCH_RESTARTS > 0) {
    process.stdout.write(`first connect after ${knobs.BENCH_RESTARTS} starts … `);
    firstConnects = await measureFirstConnects({
      restarts: knobs.BENCH_RESTARTS,
      token,
      launch: async () => {
        const restartPort = await freePort();
        const started = spawnNode(serverEntry, [], { ...serverEnv, PORT: String(restartPort), TRACE_DIR: await mkdtemp(join(traceRoot!, 'restart-')) }, nodeFlags);
        return { base: `http://127.0.0.1:${restartPort}`, stop: async () => void (await stopChild(started, 20_000)) };
      },
    });
    out('done');
  }
  const traces = await dirUsage(traceDir);
  if (!keepTraces) await rm(traceRoot, { recursive: true, force: true });
  const cpuProfile = profileDir ? await summarizeProfile(profileDir, 20) : null;

  const at = (key: WindowKey, route: RouteKey) => windows.find((window) => window.key === key && (window.key === route || window.route === route));
  const routes = targets.map((target) => {
    const index = windows.findIndex((window) => window.key === target.key);
    const window = windows[index]!;
    const bareWindows = nearestBare(windows, index);
    const bareRps = bareWindows.reduce((sum, w) => sum + w.requestsPerSecond, 0) / bareWindows.length;
    return {
      key: target.key,
      label: target.label,
      method: target.method,
      path: new URL(target.url).pathname + new URL(target.url).search,
      requestsPerSecond: window.requestsPerSecond,
      bareRequestsPerSecond: bareRps,
      ratioToBare: window.requestsPerSecond / bareRps,
      latencyMs: window.latencyMs,
      status: window.status,
      non2xx: window.non2xx,
      errors: window.errors,
      timeouts: window.timeouts,
      serverCpuUsPerRequest: window.serverCpuUsPerRequest,
      serverPeakRssMB: window.serverPeakRssMB,
      bytesPerResponse: window.bytesPerResponse,
      preflight: preflight[target.key],
    };
  });

  // The targets' ratios, each between two windows of this run.
  const comparisons: Comparison[] = [];
  const informational: Array<Omit<Comparison, 'target' | 'direction' | 'verdict'>> = [];
  const info = (label: string, window: WindowResult, reference: WindowResult, ratio: number | null) => ({ label, window: window.index, reference: reference.index, ratio });
  for (const route of knobs.BENCH_ROUTES.filter((key) => key === 'mars' || key === 'venus')) {
    const fixed = at(route, route);
    if (!fixed) continue;
    const minute = at('minute', route);
    const floor = at('durable', route);
    for (const [name, window] of [['fixed minute', fixed], ['new minute', minute]] as const) {
      if (!floor || !window) continue;
      comparisons.push(
        compare(`${route}: ${name} / durable same-body, req/s`, window, floor, window.requestsPerSecond / floor.requestsPerSecond, TARGETS.durableRatio, 'at least'),
        compare(`${route}: ${name} / durable same-body, CPU µs per request`, window, floor, ratioOf(window.serverCpuUsPerRequest, floor.serverCpuUsPerRequest), TARGETS.durableCpu, 'at most'),
        compare(`${route}: ${name} / durable same-body, p99`, window, floor, window.latencyMs.p99 / floor.latencyMs.p99, TARGETS.durableP99, 'at most'),
      );
    }
    // Reported, not judged: the plain HTTP ceiling for the same bytes, and what a new minute costs over a fixed one.
    const same = at('same', route);
    if (same) {
      informational.push(
        info(`${route}: fixed minute / same-bytes bare (no lstats, no trace), req/s`, fixed, same, fixed.requestsPerSecond / same.requestsPerSecond),
        info(`${route}: fixed minute / same-bytes bare, CPU µs per request`, fixed, same, ratioOf(fixed.serverCpuUsPerRequest, same.serverCpuUsPerRequest)),
      );
    }
    if (minute) informational.push(info(`${route}: new minute / fixed minute, req/s`, minute, fixed, minute.requestsPerSecond / fixed.requestsPerSecond));
    const churn = at('churn', route);
    if (churn) comparisons.push(compare(`${route}: memory churn / steady, req/s`, churn, fixed, churn.requestsPerSecond / fixed.requestsPerSecond, TARGETS.churnRatio, 'at least'));
  }

  const verdicts = {
    cold: cold.listeningToFirst200Ms === null ? ('invalid' as Verdict) : verdict(cold.listeningToFirst200Ms <= TARGETS.coldMs),
    rss: peakRssMB === null ? ('n/a' as Verdict) : verdict(peakRssMB <= TARGETS.rssMB),
    rssDistinct:
      distinct?.serverPeakRssMB == null ? ('n/a' as Verdict) : verdict(distinct.serverPeakRssMB <= TARGETS.rssMB, distinct.non2xx === 0 && distinct.errors === 0),
    rssMix: mix?.serverPeakRssMB == null ? ('n/a' as Verdict) : verdict(mix.serverPeakRssMB <= TARGETS.rssMB, mix.non2xx === 0 && mix.errors === 0),
    firstConnect: firstConnects === null ? ('n/a' as Verdict) : verdict(FIRST_CONNECT_PERSONAS.every((persona) => p50Max(firstConnects!.firstMs[persona]).p50 <= TARGETS.firstConnectMs)),
    compiles: compile.compilesPerSecond === null ? ('n/a' as Verdict) : verdict(compile.compilesPerSecond >= TARGETS.compilesPerSecond),
  };

  out();
  const header = ['window', 'req/s', 'x bare', 'p50 ms', 'p97.5 ms', 'p99 ms', 'non-2xx', 'errors', 'CPU µs/req', 'bytes/resp'];
  const rows: string[][] = [header];
  for (const [index, window] of windows.entries()) {
    const bareWindows = window.key === 'bare' || window.key === 'same' || window.key === 'durable' ? [] : nearestBare(windows, index);
    const bareRps = bareWindows.length === 0 ? NaN : bareWindows.reduce((sum, w) => sum + w.requestsPerSecond, 0) / bareWindows.length;
    rows.push([
      window.key === 'bare' ? `  ${window.label}` : window.label,
      fmt.int(window.requestsPerSecond),
      Number.isFinite(bareRps) ? (window.requestsPerSecond / bareRps).toFixed(2) : '',
      fmt.ms(window.latencyMs.p50),
      fmt.ms(window.latencyMs.p97_5),
      fmt.ms(window.latencyMs.p99),
      String(window.non2xx),
      String(window.errors),
      window.serverCpuUsPerRequest === null ? '' : fmt.int(window.serverCpuUsPerRequest),
      fmtBytes(window.bytesPerResponse),
    ]);
  }
  printTable(rows);
  out();
  out(`targets (a ratio of two windows above; INVALID = a window answered non-2xx or errors):`);
  for (const comparison of comparisons) {
    out(`  ${comparison.label}: ${comparison.ratio === null ? '—' : comparison.ratio.toFixed(2)}  ${fmt.mark(comparison.verdict)} (${comparison.direction} ${comparison.target})`);
  }
  for (const line of informational) out(`  (reported) ${line.label}: ${line.ratio === null ? '—' : line.ratio.toFixed(2)}`);
  out(`  cold first request (listening → first 200): ${cold.listeningToFirst200Ms === null ? cold.note : `${fmt.ms(cold.listeningToFirst200Ms)} ms`}  ${fmt.mark(verdicts.cold)} (≤ ${TARGETS.coldMs} ms; spawn → listening ${fmt.ms(cold.spawnToListeningMs)} ms, first request ${fmt.ms(cold.firstRequestMs)} ms)`);
  if (firstConnects !== null) {
    const ready = p50Max(firstConnects.readyMs);
    const figures = FIRST_CONNECT_PERSONAS.map((persona) => ({ persona, ...p50Max(firstConnects!.firstMs[persona]) }));
    out(`  first connect after start (/readyz 200 → first GET /context/<persona>, ${firstConnects.restarts} starts): ` +
      `${figures.map(({ persona, p50, max }) => `${persona} p50 ${fmt.ms(p50)} ms, max ${fmt.ms(max)} ms`).join('; ')}  ${fmt.mark(verdicts.firstConnect)} (p50 ≤ ${TARGETS.firstConnectMs} ms; spawn → ready p50 ${fmt.int(ready.p50)} ms)`);
  }
  out(`  peak RSS (VmHWM) over the run: ${peakRssMB === null ? 'not available (no /proc)' : `${peakRssMB.toFixed(1)} MB`}  ${fmt.mark(verdicts.rss)} (≤ ${TARGETS.rssMB} MB; server: ${startEnv}node ${[...nodeFlags, start.entry].join(' ')}${knobs.BENCH_NODE_OPTIONS === undefined ? ', as npm start' : `, NODE_OPTIONS=${JSON.stringify(knobs.BENCH_NODE_OPTIONS)}`})`);
  if (distinct) {
    out(`  peak RSS during ${knobs.BENCH_DISTINCT_DURATION} s of distinct POST /compile inputs: ${distinct.serverPeakRssMB === null ? 'not available (no /proc)' : `${distinct.serverPeakRssMB.toFixed(1)} MB`}  ` +
      `${fmt.mark(verdicts.rssDistinct)} (≤ ${TARGETS.rssMB} MB; ${fmt.int(distinct.requests)} compiles, each a new message)`);
  }
  if (mix) {
    out(`  peak RSS during ${knobs.BENCH_MIX_DURATION} s of mixed distinct inputs: ${mix.serverPeakRssMB === null ? 'not available (no /proc)' : `${mix.serverPeakRssMB.toFixed(1)} MB`}  ` +
      `${fmt.mark(verdicts.rssMix)} (≤ ${TARGETS.rssMB} MB; ${fmt.int(mix.requests)} requests from ${knobs.BENCH_MIX_CONNECTIONS} clients: 70 % compile, 10 % each mars, venus, topic)`);
  }
  out(`  in-process compiles/s (distinct inputs): ${compile.compilesPerSecond === null ? compile.note : fmt.int(compile.compilesPerSecond)}  ${fmt.mark(verdicts.compiles)} (≥ ${TARGETS.compilesPerSecond.toLocaleString('en-US')})`);
  out(`traces written: ${traces.files} files, ${(traces.bytes / 1e6).toFixed(1)} MB; server stopped in ${serverStop.ms} ms (exit ${serverStop.code ?? serverStop.signal}); ${server.logLines()} warn/error log lines`);
  if (workers) printWorkers(workers);
  if (backends) printComparison(backends);
  const warnings: string[] = [];
  const delivered = windows.filter((w) => w.key !== 'bare' && w.key !== 'same' && w.key !== 'durable').reduce((sum, w) => sum + w.requests - w.non2xx, 0);
  if (delivered > 0 && traces.files === 0) {
    warnings.push(`${delivered.toLocaleString('en-US')} responses were 2xx but the trace store holds no files: durable tracing is not on in this build, so these figures leave out its cost`);
  }
  if (serverStop.code !== 0) warnings.push(`the server did not exit cleanly on SIGTERM (${serverStop.code ?? serverStop.signal})`);
  if (workers && workers.processes < workers.workers + 1) {
    warnings.push(`WORKERS=${workers.workers} ran ${workers.processes} process(es): this build does not start workers`);
  }
  for (const warning of warnings) out(`WARNING: ${warning}`);
  if (profileDir) {
    if (!cpuProfile) out(`cpu profile: none written under ${profileDir}`);
    else {
      out(`cpu profile of the server, whole run: ${fmt.int(cpuProfile.busyMs)} ms busy of ${fmt.int(cpuProfile.totalMs)} ms; self time, % of busy: ${cpuProfile.path}`);
      for (const entry of cpuProfile.self) out(`  ${entry.percent.toFixed(1).padStart(5)} %  ${entry.fn}`);
    }
  }

  const elapsedSeconds = (performance.now() - runStarted) / 1000;
  const report = {
    schemaVersion: 3,
    startedAt: startedAt.toISOString(),
    elapsedSeconds,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, totalMemMB: Math.round(totalmem() / 2 ** 20), platform: platform(), release: release(), node: process.version, loadAverage: loadAtStart },
    git: gitInfo(),
    settings: {
      connections: knobs.BENCH_CONNECTIONS,
      pipelining: 1,
      warmupSeconds: knobs.BENCH_WARMUP,
      measureSeconds: knobs.BENCH_DURATION,
      compileSeconds: knobs.BENCH_COMPILE_DURATION,
      routes: knobs.BENCH_ROUTES,
      distinctSeconds: knobs.BENCH_DISTINCT_DURATION,
      mix: { seconds: knobs.BENCH_MIX_DURATION, connections: knobs.BENCH_MIX_CONNECTIONS },
      churn: knobs.BENCH_CHURN === '1',
      workers: knobs.BENCH_WORKERS,
      acceptEncoding: encoding ?? null,
      server: { ...serverEnv, CONTEXT_COMPILER_TOKENS: '[bench token]', TRACE_DIR: '[temp dir]', nodeFlags, entry: start.entry, asNpmStart: knobs.BENCH_NODE_OPTIONS === undefined },
      trace: knobs.BENCH_TRACE,
    },
    brain: { dir: brain.dir, generated: brain.generated, ms: brainMs, manifest: brain.manifest },
    targets: TARGETS,
    cold,
    firstConnects,
    routes,
    comparisons,
    informational,
    durable,
    windows,
    peakRssMB,
    distinctCompile: distinct,
    mixedDistinct: mix,
    compile,
    verdicts,
    traces: { ...traces, kept: keepTraces ? traceDir : null },
    traceBackends: backends,
    workers,
    warnings,
    serverStop: { ...serverStop, logLines: server.logLines() },
    cpuProfile,
  };
  await mkdir(knobs.BENCH_OUT, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const json = `${JSON.stringify(report, null, 2)}\n`;
  await writeFile(join(knobs.BENCH_OUT, `bench-${stamp}.json`), json);
  await writeFile(join(knobs.BENCH_OUT, 'latest.json'), json);
  out(`wrote ${join(knobs.BENCH_OUT, `bench-${stamp}.json`)} and latest.json; whole run ${elapsedSeconds.toFixed(0)} s`);
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof BenchError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  for (const child of children) child.kill('SIGKILL');
  if (churning.brainDir) await restoreChurn(churning.brainDir).catch(() => undefined);
  if (traceRoot && !keepTraces) await rm(traceRoot, { recursive: true, force: true });
  process.exitCode = 1;
} finally {
  if (cluster) await destroyCluster(cluster);
}
