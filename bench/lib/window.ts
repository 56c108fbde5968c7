import autocannon from 'autocannon';
import type { MixRequest } from '../mix.js';
import { windowSpan, type Knobs, type RouteKey, type Span } from './knobs.js';
import { running } from './processes.js';
import { treeCpuMs, type RssSampler } from './proc-stats.js';
import type { Target } from './requests.js';

export interface Latency {
  p50: number;
  p97_5: number;
  p99: number;
  max: number;
  mean: number;
}

/** One measured window: a row of the table. */
export interface WindowResult {
  index: number;
  key: Target['key'];
  route: RouteKey | null;
  /** `session` for a window of the lean connect answer (or of its body, bare side); null for the full answer. */
  view: 'session' | null;
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

/** The server a window's CPU, RSS and commits are read from. */
export interface MeasuredServer {
  /** The processes whose CPU time counts (a `WORKERS=N` server: its primary and workers). */
  pids: () => readonly number[];
  rss?: RssSampler;
  commits?: () => Promise<number | null>;
}

export interface WindowOptions {
  warmupSeconds?: number;
  seconds?: number;
  /** A new body for every request (instead of `target.body`). */
  nextBody?: () => string;
  /** A new path and query for every request (instead of the target URL's). */
  nextPath?: () => string;
  /** A whole new request (method, path, headers, body) every time: the mixed window. */
  nextRequest?: () => MixRequest;
  /** Clients of this window (default BENCH_CONNECTIONS). */
  connections?: number;
  /** Runs for the whole window (warm-up included), e.g. the churn writer; the returned function stops it. */
  during?: () => () => Promise<void>;
}

function percentiles(values: number[]): Latency {
  if (values.length === 0) return { p50: NaN, p97_5: NaN, p99: NaN, max: NaN, mean: NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  let sum = 0;
  for (const value of sorted) sum += value;
  return { p50: at(0.5), p97_5: at(0.975), p99: at(0.99), max: sorted[sorted.length - 1]!, mean: sum / sorted.length };
}

type Varying = Pick<WindowOptions, 'nextBody' | 'nextPath' | 'nextRequest'>;

/** autocannon on `target` for a span, pipelining 1. */
async function load(target: Target, span: Span, connections: number, { nextBody, nextPath, nextRequest }: Varying, onResponse?: (status: number, ms: number, bytes: number) => void) {
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
    // autocannon stops at its first sample after the duration, or after the last answer: a window
    // under a second, or one of a count of answers, samples often enough not to wait out a second.
    ...('requests' in span ? { amount: span.requests, sampleInt: 50 } : { duration: span.seconds, sampleInt: Math.min(1000, span.seconds * 1000) }),
    timeout: 10,
  });
  running.load = instance;
  if (onResponse) instance.on('response', (_client, status, bytes, ms) => onResponse(status, ms, bytes));
  try {
    return await instance;
  } finally {
    running.load = undefined;
  }
}

/** A warm-up (discarded) and a measured run of `target`: its req/s, latencies, and the server's CPU, RSS and commits over it. */
export async function measureWindow(index: number, target: Target, knobs: Knobs, server: MeasuredServer, options: WindowOptions = {}): Promise<WindowResult> {
  const warmup = options.warmupSeconds ?? knobs.BENCH_WARMUP;
  const varying: Varying = {
    ...(options.nextBody ? { nextBody: options.nextBody } : {}),
    ...(options.nextPath ? { nextPath: options.nextPath } : {}),
    ...(options.nextRequest ? { nextRequest: options.nextRequest } : {}),
  };
  const stop = options.during?.();
  try {
    const connections = options.connections ?? knobs.BENCH_CONNECTIONS;
    if (warmup > 0) await load(target, { seconds: warmup }, connections, varying);
    const latencies: number[] = [];
    const status: Record<string, number> = {};
    let bytes = 0;
    server.rss?.startWindow();
    const commitsBefore = (await server.commits?.()) ?? null;
    const pids = server.pids();
    const cpuBefore = await treeCpuMs(pids);
    const result = await load(target, windowSpan(knobs, options.seconds ?? knobs.BENCH_DURATION, connections), connections, varying, (code, ms, size) => {
      latencies.push(ms);
      bytes += size;
      status[code] = (status[code] ?? 0) + 1;
    });
    const cpuAfter = await treeCpuMs(pids);
    const commitsAfter = (await server.commits?.()) ?? null;
    const requests = latencies.length;
    return {
      index,
      key: target.key,
      route: target.route ?? (target.key === 'bare' ? null : (target.key as RouteKey)),
      view: target.view ?? null,
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
      serverPeakRssMB: (await server.rss?.windowPeakMB()) ?? null,
      bytesPerResponse: requests > 0 ? bytes / requests : 0,
      commitsPerRequest: commitsBefore !== null && commitsAfter !== null && requests > 0 ? (commitsAfter - commitsBefore) / requests : null,
    };
  } finally {
    await stop?.();
  }
}
