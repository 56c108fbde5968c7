import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from '../../src/config.js';
import { BenchError } from './processes.js';

/**
 * The performance targets (2-core machine, 10,000-page brain, durable traces on). Every one is a
 * ratio between windows of the same run, or a bound on this run's own figure.
 */
export const TARGETS = {
  /**
   * Mars and venus, at one fixed minute and with a new minute on every request, each answer
   * (the full one, and the lean connect answer of `?view=session`) against the durable
   * same-body route for its own body (the same bytes after the same `lstat`s and a
   * hash-chained event of the same size appended with group commit): req/s ratio at least…
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
  /** `GET /runs?requestId=` with its matching runs in evicted files: the files backend's median at most this multiple of PostgreSQL's. */
  runsByRequestRatio: 2,
} as const;

/** How often the churn window's writer appends a line to today's memory file. */
export const CHURN_INTERVAL_MS = 100;

/** A knob in seconds, a fraction allowed (the smoke run measures its compiler for a quarter of a second). */
const secondsKnob = (min: number, max: number, fallback: number) => z.coerce.number().min(min).max(max).default(fallback);

const KnobsSchema = z.object({
  BENCH_DURATION: secondsKnob(0.1, 600, 10),
  BENCH_WARMUP: secondsKnob(0, 600, 5),
  /** A count of answers that ends each measured window instead of BENCH_DURATION (0: by time); the smoke run's. */
  BENCH_REQUESTS: z.coerce.number().int().min(0).max(10_000_000).default(0),
  BENCH_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(32),
  BENCH_COMPILE_DURATION: secondsKnob(0.1, 120, 5),
  /** Seconds of POST /compile with a new message on every request (0 skips it); peak RSS is judged over it too. */
  BENCH_DISTINCT_DURATION: secondsKnob(0, 600, 20),
  /**
   * Seconds of the mixed distinct-input load (bench/mix.ts: 70 % POST /compile, 10 % each of
   * mars at a new minute, venus in a randomly cased zone, a topic with a new name) from
   * BENCH_MIX_CONNECTIONS clients (0 skips it); peak RSS is judged over it.
   */
  BENCH_MIX_DURATION: secondsKnob(0, 600, 20),
  BENCH_MIX_CONNECTIONS: z.coerce.number().int().min(1).max(1024).default(16),
  BENCH_ROUTES: z
    .string()
    .default('mars,venus,topic,compile')
    .transform((text) => text.split(',').map((part) => part.trim()).filter(Boolean))
    .pipe(z.array(z.enum(['mars', 'venus', 'topic', 'compile'])).min(1)),
  BENCH_SEED: z.string().min(1).default('context-compiler-bench'),
  /** The brain's size as a share of the full 10,000 pages (the smoke run's is small). */
  BENCH_SCALE: z.coerce.number().gt(0).max(1).default(1),
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
  /** Runs of one request id for the `GET /runs?requestId=` row (`bench/runs-by-request.ts`), among 6× as many others; `0` skips it. */
  BENCH_RUNS_MATCHING: z.coerce.number().int().min(0).max(100_000).default(2000),
  /**
   * An `Accept-Encoding` the persona windows send (e.g. `gzip` or `br`); the same-bytes bare
   * route then answers the same compressed bytes. Unset: no header, as the voice server's
   * undici client sends none by default.
   */
  BENCH_ACCEPT_ENCODING: z.string().regex(/^[a-z, ;=.0-9]+$/).optional(),
});
export type Knobs = z.infer<typeof KnobsSchema>;
export type RouteKey = Knobs['BENCH_ROUTES'][number];

/**
 * `BENCH_SMOKE=1`: every window and row once, as short as it can be, on a small brain in a
 * temporary directory — a check that the harness runs end to end, not a measurement. A
 * window is 40 answers, not a time: each keeps both cores busy (at a second each, the smoke
 * run's 26 windows were most of its 54 s of CPU, and the suite runs it), and a window of a
 * count ends with answers in it however busy the machine is. Any knob set explicitly still wins.
 */
const SMOKE: Record<string, string> = {
  BENCH_REQUESTS: '40',
  BENCH_DURATION: '0.25',
  BENCH_WARMUP: '0',
  BENCH_CONNECTIONS: '4',
  BENCH_COMPILE_DURATION: '0.25',
  BENCH_DISTINCT_DURATION: '0.25',
  BENCH_MIX_DURATION: '0.25',
  BENCH_MIX_CONNECTIONS: '4',
  BENCH_SCALE: '0.02',
  BENCH_BRAIN: join(tmpdir(), 'cc-bench-smoke-brain'),
  BENCH_OUT: join(tmpdir(), 'cc-bench-smoke-out'),
  BENCH_WORKERS: '0',
  BENCH_RESTARTS: '1',
  BENCH_RUNS_MATCHING: '20',
};

/** How long a measured window lasts: a time, or a count of answers. */
export type Span = { seconds: number } | { requests: number };

/** A measured window's span: `seconds`, or BENCH_REQUESTS answers when set (at least one per connection). */
export function windowSpan(knobs: Knobs, seconds: number, connections = knobs.BENCH_CONNECTIONS): Span {
  return knobs.BENCH_REQUESTS > 0 ? { requests: Math.max(knobs.BENCH_REQUESTS, connections) } : { seconds };
}

/** A span as the report says it: `10 s`, or `40 answers`. */
export function describeSpan(span: Span): string {
  return 'requests' in span ? `${span.requests} answers` : `${span.seconds} s`;
}

/** The `BENCH_*` settings from the environment, or a `BenchError` naming each bad one. */
export function parseKnobs(env: NodeJS.ProcessEnv): Knobs {
  const given = Object.fromEntries(Object.entries(env).filter(([key, value]) => key.startsWith('BENCH_') && (value !== '' || key === 'BENCH_NODE_OPTIONS')));
  const parsed = KnobsSchema.safeParse(given['BENCH_SMOKE'] === '1' ? { ...SMOKE, ...given } : given);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${String(issue.path[0])}: ${issue.message}`);
    throw new BenchError(`invalid benchmark settings\n  ${lines.join('\n  ')}`);
  }
  return parsed.data;
}
