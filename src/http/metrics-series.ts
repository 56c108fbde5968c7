import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStats } from '../cache-area.js';
import type { TraceObservers, TraceStoreStats } from '../io/trace/index.js';

/**
 * Every Prometheus series the service exports, with its name, help, labels and buckets
 * (docs/operations.md, Metrics, lists them): `Metrics`, the series observed on the request
 * path, and those read when scraped. The metrics plugin (`metrics.ts`) puts them in one
 * registry per app and observes each request.
 */

const REQUEST_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** A compile or a brain read from the stat-keyed cache takes microseconds; a cold read of a large brain, milliseconds. */
const STEP_BUCKETS_SECONDS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const BATCH_BUCKETS_EVENTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export type TraceBackend = TraceStoreStats['backend'];

export interface Metrics {
  readonly registry: Registry;
  /** `cc_http_requests_total`: every request, by route pattern, method and status. */
  readonly requests: Counter<'route' | 'method' | 'status'>;
  readonly requestDuration: Histogram<'route' | 'method' | 'status'>;
  readonly compileFailures: Counter<'route' | 'code'>;
  /** Time a compile job spent reading its sources through the brain, by route. */
  readonly readDuration: Histogram<'route'>;
  /** Time spent in the compiler, by route. */
  readonly compileDuration: Histogram<'route'>;
  /** PII redacted from delivered prompts, by kind (a prompt delivered twice counts twice). */
  readonly redactions: Counter<'kind'>;
  readonly traceWriteDuration: Histogram<'result'>;
  readonly traceCommits: Counter;
  /** One observation per group commit: how long the batch took to become durable (or fail), and how many events it held. */
  readonly traceBatchDuration: Histogram<'backend' | 'result'>;
  readonly traceBatchEvents: Histogram<'backend'>;
  readonly connectionsShed: Counter<'reason'>;
  /** Requests refused while the replica was overloaded, by the threshold it was over (`src/http/pressure.ts`). */
  readonly requestsShed: Counter<'reason'>;
  /** Refreshes that caught up a call which connected on a fallback session, by its baseline (`static`, `stale`). */
  readonly refreshCatchUps: Counter<'baseline'>;
  /** The callbacks a trace store of `backend` reports its writes through, into the trace series above. */
  traceObservers(backend: TraceBackend): Required<TraceObservers>;
  /** Reads the cache set's areas (entries, bytes, hits, misses) at every scrape. */
  collectCaches(stats: () => readonly CacheStats[]): void;
  /** Reads the trace store's counters (failures, rejected appends) at every scrape. */
  collectTraces(stats: () => TraceStoreStats): void;
  /** Runs `/readyz`'s checks at every scrape: `cc_ready{check}` is 1 for each that passes, 0 otherwise. */
  collectReadiness(checks: () => ReadonlyArray<{ name: string; check(): Promise<unknown> }>): void;
  /** Reads of a run that found its hash chain broken. */
  readonly chainBreaks: Counter<never>;
  /** The Prometheus text exposition of every series: of every worker under `WORKERS=N` (`src/cluster-metrics.ts`). */
  render(): Promise<string>;
  /** The `Content-Type` of `render()`. */
  readonly contentType: string;
}

export interface MetricsOptions {
  /** Register prom-client's default process metrics (default true). */
  defaultMetrics?: boolean;
  /** This app is a worker of a cluster: a scrape answers with every worker's series, aggregated by the primary. */
  clusterWorker?: boolean;
}

/** `cc_ready{check}`: `/readyz`'s checks, run at every scrape; 1 for each that passes, 0 otherwise. */
export function readinessGauge(registers: Registry[], checks: () => ReadonlyArray<{ name: string; check(): Promise<unknown> }>): void {
  new Gauge({
    name: 'cc_ready',
    help: 'What /readyz answers, check by check (brain, traces, load): 1 when it passes, 0 when the replica is not ready for it.',
    labelNames: ['check'] as const,
    registers,
    async collect() {
      this.reset();
      await Promise.all(
        checks().map(async ({ name, check }) => {
          const ok = await check().then(
            () => 1,
            () => 0,
          );
          this.set({ check: name }, ok);
        }),
      );
    },
  });
}

/** The series of requests and compiles, observed on the request path. */
export function requestSeries(registers: Registry[]) {
  return {
    requests: new Counter({
      name: 'cc_http_requests_total',
      help: 'HTTP requests by route, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      registers,
    }),
    requestDuration: new Histogram({
      name: 'cc_http_request_duration_seconds',
      help: 'HTTP request latency by route, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: REQUEST_BUCKETS_SECONDS,
      registers,
    }),
    compileFailures: new Counter({
      name: 'cc_compile_failures_total',
      help: 'Compiles that delivered no prompt, by route and error code.',
      labelNames: ['route', 'code'] as const,
      registers,
    }),
    readDuration: new Histogram({
      name: 'cc_compile_read_duration_seconds',
      help: "Time a compile spent reading its sources from the brain (stat-revalidated cache included), by route.",
      labelNames: ['route'] as const,
      buckets: STEP_BUCKETS_SECONDS,
      registers,
    }),
    compileDuration: new Histogram({
      name: 'cc_compile_duration_seconds',
      help: 'Time spent in the compiler, by route (a result shared within the minute takes next to none).',
      labelNames: ['route'] as const,
      buckets: STEP_BUCKETS_SECONDS,
      registers,
    }),
    redactions: new Counter({
      name: 'cc_redactions_total',
      help: 'PII redacted from delivered prompts, by kind (email, phone); a prompt delivered twice counts twice.',
      labelNames: ['kind'] as const,
      registers,
    }),
    connectionsShed: new Counter({
      name: 'cc_http_connections_shed_total',
      help: 'Connections closed at MAX_CONNECTIONS: evicted (waiting without a request, to admit a newcomer) or refused (every one busy).',
      labelNames: ['reason'] as const,
      registers,
    }),
    refreshCatchUps: new Counter({
      name: 'cc_refresh_catch_ups_total',
      help: 'Refreshes that caught up a call which connected on a fallback session while the service was out, by the session it had (baseline: static or stale).',
      labelNames: ['baseline'] as const,
      registers,
    }),
    requestsShed: new Counter({
      name: 'cc_http_requests_shed_total',
      help: 'Requests refused with 503 CC_OVERLOADED while the replica was over a load threshold, by threshold (eventLoopDelay, eventLoopUtilization, heapUsedBytes).',
      labelNames: ['reason'] as const,
      registers,
    }),
  };
}

/** The trace series: the store's writes (reported through `TraceObservers`) and the broken chains reads of a run find. */
export function traceSeries(registers: Registry[]) {
  return {
    traceWriteDuration: new Histogram({
      name: 'cc_trace_write_duration_seconds',
      help: 'Time for a trace event to become durable.',
      labelNames: ['result'] as const,
      buckets: REQUEST_BUCKETS_SECONDS,
      registers,
    }),
    traceCommits: new Counter({
      name: 'cc_trace_commits_total',
      help: 'Durable commits of the trace store: an fsync of a trace file, or a committed transaction. Group commit makes them far fewer than trace events.',
      registers,
    }),
    traceBatchDuration: new Histogram({
      name: 'cc_trace_batch_duration_seconds',
      help: 'Time for one group-commit batch to become durable (one write and fsync, or one transaction), by backend and result.',
      labelNames: ['backend', 'result'] as const,
      buckets: REQUEST_BUCKETS_SECONDS,
      registers,
    }),
    traceBatchEvents: new Histogram({
      name: 'cc_trace_batch_events',
      help: 'Trace events per group-commit batch, by backend.',
      labelNames: ['backend'] as const,
      buckets: BATCH_BUCKETS_EVENTS,
      registers,
    }),
    chainBreaks: new Counter({
      name: 'cc_trace_chain_breaks_total',
      help: 'Reads of a run (GET /runs/:runId/trace, the viewer) that found its hash chain broken: an event altered, forged, inserted, removed or reordered, or a trace file missing or cut.',
      registers,
    }),
  };
}

/** The cache set's areas (entries, bytes, hits, misses), read at every scrape. */
export function cacheSeries(registers: Registry[], stats: () => readonly CacheStats[]): void {
  const read = scrapeOnce(stats);
  const series = (name: string, help: string, pick: (area: CacheStats) => number, type: 'counter' | 'gauge') => {
    const collect = function (this: Counter<'area'> | Gauge<'area'>) {
      this.reset();
      for (const area of read()) {
        if (type === 'gauge') (this as Gauge<'area'>).set({ area: area.area }, pick(area));
        else (this as Counter<'area'>).inc({ area: area.area }, pick(area));
      }
    };
    if (type === 'gauge') new Gauge({ name, help, labelNames: ['area'] as const, registers, collect });
    else new Counter({ name, help, labelNames: ['area'] as const, registers, collect });
  };
  series('cc_cache_hits_total', 'Lookups in the cache set that found a value, by area.', (area) => area.hits, 'counter');
  series('cc_cache_misses_total', 'Lookups in the cache set that found nothing (the value was derived afresh), by area.', (area) => area.misses, 'counter');
  series('cc_cache_entries', 'Entries held in the cache set, by area.', (area) => area.entries, 'gauge');
  series('cc_cache_bytes', 'Estimated bytes held in the cache set, by area.', (area) => area.bytes, 'gauge');
  series('cc_cache_max_bytes', 'The bound of each area of the cache set, in estimated bytes.', (area) => area.maxBytes, 'gauge');
}

/** The trace store's failures and appends by result, read at every scrape. */
export function traceStoreSeries(registers: Registry[], stats: () => TraceStoreStats): void {
  new Counter({
    name: 'cc_trace_failures_total',
    help: 'Times the trace store went from working to failing (appends then answer 503 until it recovers), by backend.',
    labelNames: ['backend'] as const,
    registers,
    collect() {
      const now = stats();
      this.reset();
      this.inc({ backend: now.backend }, now.failures);
    },
  });
  new Counter({
    name: 'cc_trace_appends_total',
    help: 'Trace events by result: durable, or rejected (the caller got a 503 and no prompt), by backend.',
    labelNames: ['backend', 'result'] as const,
    registers,
    collect() {
      const now = stats();
      this.reset();
      this.inc({ backend: now.backend, result: 'durable' }, now.appends);
      this.inc({ backend: now.backend, result: 'rejected' }, now.rejected);
    },
  });
}

/** `stats`, read once per scrape however many series ask for it (the series of one scrape are collected together). */
function scrapeOnce<T>(stats: () => T): () => T {
  let value: T | undefined;
  let pending = false;
  return () => {
    if (!pending) {
      value = stats();
      pending = true;
      queueMicrotask(() => {
        pending = false;
      });
    }
    return value!;
  };
}
