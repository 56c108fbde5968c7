import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's Prometheus series, rendered by `GET /metrics`. */
    metrics: Metrics;
  }
}

/**
 * A small Prometheus registry: counters and histograms with labels, rendered in the text
 * exposition format. Kept in-house because the service needs five series and no default
 * process collectors. Label names are declared once per metric, so an observation is a
 * few Map lookups by label value; a series' label text is built once, when it first appears.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */

const DEFAULT_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** The series of one metric, found by label values in declaration order. */
class SeriesIndex<L extends string, S> {
  private readonly root = new Map<string, unknown>();
  /** Every series with its label text (`a="1",b="2"`, names sorted), in order of first appearance. */
  readonly all: Array<{ key: string; series: S }> = [];
  private readonly sortedNames: readonly L[];

  constructor(
    private readonly names: readonly L[],
    private readonly create: () => S,
  ) {
    this.sortedNames = [...names].sort();
  }

  find(labels: Readonly<Record<L, string>>): S | undefined {
    let node: unknown = this.root;
    for (const name of this.names) {
      node = (node as Map<string, unknown>).get(labels[name]);
      if (node === undefined) return undefined;
    }
    return this.names.length === 0 ? (this.root.get('') as S | undefined) : (node as S);
  }

  get(labels: Readonly<Record<L, string>>): S {
    const known = this.find(labels);
    if (known !== undefined) return known;
    const series = this.create();
    const last = this.names.length - 1;
    let node = this.root;
    for (let i = 0; i < last; i++) {
      const value = labels[this.names[i]!];
      let next = node.get(value) as Map<string, unknown> | undefined;
      if (!next) node.set(value, (next = new Map()));
      node = next;
    }
    node.set(last < 0 ? '' : labels[this.names[last]!], series);
    const key = this.sortedNames.map((name) => `${name}="${escapeLabel(String(labels[name]))}"`).join(',');
    this.all.push({ key, series });
    return series;
  }
}

export class Counter<L extends string = never> {
  private readonly index: SeriesIndex<L, { value: number }>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[] = [],
  ) {
    this.index = new SeriesIndex(labelNames, () => ({ value: 0 }));
  }

  inc(labels: Readonly<Record<L, string>> = {} as Record<L, string>, by = 1): void {
    this.index.get(labels).value += by;
  }

  get(labels: Readonly<Record<L, string>> = {} as Record<L, string>): number {
    return this.index.find(labels)?.value ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { key, series } of this.index.all) lines.push(`${this.name}${key ? `{${key}}` : ''} ${series.value}`);
    return lines.join('\n');
  }
}

interface HistogramSeries {
  buckets: number[];
  sum: number;
  count: number;
}

export class Histogram<L extends string = never> {
  private readonly index: SeriesIndex<L, HistogramSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[] = [],
    readonly bounds: readonly number[] = DEFAULT_BUCKETS_SECONDS,
  ) {
    this.index = new SeriesIndex(labelNames, () => ({ buckets: new Array<number>(bounds.length).fill(0), sum: 0, count: 0 }));
  }

  observe(labels: Readonly<Record<L, string>>, value: number): void {
    const series = this.index.get(labels);
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) if (value <= bounds[i]!) series.buckets[i]!++;
    series.sum += value;
    series.count++;
  }

  count(labels: Readonly<Record<L, string>> = {} as Record<L, string>): number {
    return this.index.find(labels)?.count ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const { key, series } of this.index.all) {
      const prefix = key ? `${key},` : '';
      this.bounds.forEach((bound, i) => lines.push(`${this.name}_bucket{${prefix}le="${bound}"} ${series.buckets[i]}`));
      lines.push(`${this.name}_bucket{${prefix}le="+Inf"} ${series.count}`);
      const suffix = key ? `{${key}}` : '';
      lines.push(`${this.name}_sum${suffix} ${series.sum}`, `${this.name}_count${suffix} ${series.count}`);
    }
    return lines.join('\n');
  }
}

export interface Metrics {
  readonly requests: Counter<'route' | 'method' | 'status'>;
  readonly requestDuration: Histogram<'route' | 'method' | 'status'>;
  readonly compileFailures: Counter<'route' | 'code'>;
  readonly traceWriteDuration: Histogram<'result'>;
  readonly traceCommits: Counter;
  readonly connectionsShed: Counter<'reason'>;
  render(): string;
}

export function createMetrics(): Metrics {
  const requests = new Counter('cc_http_requests_total', 'HTTP requests by route, method and status.', ['route', 'method', 'status']);
  const requestDuration = new Histogram('cc_http_request_duration_seconds', 'HTTP request latency by route, method and status.', ['route', 'method', 'status']);
  const compileFailures = new Counter('cc_compile_failures_total', 'Compiles that delivered no prompt, by route and error code.', ['route', 'code']);
  const traceWriteDuration = new Histogram('cc_trace_write_duration_seconds', 'Time for a trace event to become durable.', ['result']);
  const traceCommits = new Counter(
    'cc_trace_commits_total',
    'Durable commits of the trace store: an fsync of a trace file, or a committed transaction. Group commit makes them far fewer than trace events.',
  );
  const connectionsShed = new Counter(
    'cc_http_connections_shed_total',
    'Connections closed at MAX_CONNECTIONS: evicted (waiting without a request, to admit a newcomer) or refused (every one busy).',
    ['reason'],
  );
  const all = [requests, requestDuration, compileFailures, traceWriteDuration, traceCommits, connectionsShed];
  return {
    requests,
    requestDuration,
    compileFailures,
    traceWriteDuration,
    traceCommits,
    connectionsShed,
    render: () => `${all.map((metric) => metric.render()).join('\n')}\n`,
  };
}

/**
 * `app.metrics`, and one `onResponse` hook for every request: its count and latency by
 * route, method and status, and the one log line per request (route, status, ms, runId).
 */
export const metricsPlugin = fp(
  async function metricsPlugin(app: FastifyInstance) {
    const metrics = createMetrics();
    app.decorate('metrics', metrics);
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
        request.log.info({ method: request.method, route, status: reply.statusCode, ms: Math.round(ms * 100) / 100, ...(runId ? { runId } : {}) }, 'request');
      }
      done();
    });
  },
  { name: 'metrics' },
);
