import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { clusterMetricsOf } from '../cluster-metrics.js';
import { cacheSeries, readinessGauge, requestSeries, traceSeries, traceStoreSeries, type Metrics, type MetricsOptions } from './metrics-series.js';

export type { Metrics, MetricsOptions, TraceBackend } from './metrics-series.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's Prometheus registry and series, rendered by `GET /metrics`. */
    metrics: Metrics;
  }
  interface FastifyReply {
    /** The problem `code` this reply carries (set by `sendProblem`), for the request's log line; null otherwise. */
    problemCode: string | null;
  }
}

/**
 * The service's Prometheus series, on `prom-client`: its default process metrics (CPU,
 * memory, heap, event-loop lag, GC, handles, file descriptors) and ours, in one registry per
 * app — never prom-client's global one, so a test can build several apps side by side and
 * each counts only its own requests. Each series is declared in `metrics-series.ts`;
 * docs/operations.md (Metrics) lists them.
 *
 * Observations on the request path are one counter increment and one histogram
 * observation; whatever can be read when scraped (the cache set, the trace store's
 * counters) is read then, in `collect`, and costs nothing per request.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const trace = traceSeries(registers);
  return {
    registry,
    ...requestSeries(registers),
    ...trace,
    traceObservers: (backend) => ({
      observeWrite: (seconds, ok) => trace.traceWriteDuration.observe({ result: ok ? 'ok' : 'error' }, seconds),
      observeCommit: () => trace.traceCommits.inc(),
      observeBatch: (events, seconds, ok) => {
        trace.traceBatchDuration.observe({ backend, result: ok ? 'ok' : 'error' }, seconds);
        trace.traceBatchEvents.observe({ backend }, events);
      },
    }),
    collectReadiness: (checks) => readinessGauge(registers, checks),
    collectCaches: (stats) => cacheSeries(registers, stats),
    collectTraces: (stats) => traceStoreSeries(registers, stats),
    render: options.clusterWorker === true ? clusterMetricsOf(registry) : () => registry.metrics(),
    contentType: registry.contentType,
  };
}
/**
 * `app.metrics`, and one `onResponse` hook for every request: its count and latency by
 * route, method and status, and the one log line per request: route, status, ms, runId, the
 * caller's `traceparent` when valid, and the problem `code` of a 4xx or 5xx (the request id is
 * bound to every line of the request as `requestId`).
 */
export const metricsPlugin = fp(
  async function metricsPlugin(app: FastifyInstance, options: MetricsOptions) {
    const metrics = createMetrics(options);
    app.decorate('metrics', metrics);
    app.decorateReply('problemCode', null);
    const { requests, requestDuration } = metrics;
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeUrl ?? request.routeOptions.url ?? 'unmatched';
      const ms = reply.elapsedTime;
      const labels = { route, method: request.method, status: String(reply.statusCode) };
      requests.inc(labels);
      requestDuration.observe(labels, ms / 1000);
      // The object is only built when the line is written (at LOG_LEVEL=warn it is not); the logger is always pino's.
      if ((request.log as Logger).isLevelEnabled('info')) {
        const runId = reply.getHeader('x-run-id');
        const line: Record<string, unknown> = { method: request.method, route, status: reply.statusCode, ms: Math.round(ms * 100) / 100 };
        if (runId) line['runId'] = runId;
        if (request.traceparent !== null) line['traceparent'] = request.traceparent;
        if (reply.problemCode !== null) line['code'] = reply.problemCode;
        request.log.info(line, 'request');
      }
      done();
    });
  },
  { name: 'metrics' },
);
