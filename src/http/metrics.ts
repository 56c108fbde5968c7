/**
 * A small Prometheus registry: counters and histograms with labels, rendered in the text
 * exposition format. Kept in-house because the service needs four series and no default
 * process collectors; every observation is a Map lookup and a few additions.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */

type Labels = Record<string, string>;

const DEFAULT_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((name) => `${name}="${escapeLabel(labels[name]!)}"`)
    .join(',');
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

export class Counter {
  private readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [key, value] of this.values) lines.push(`${this.name}${key ? `{${key}}` : ''} ${value}`);
    return lines.join('\n');
  }
}

interface HistogramSeries {
  buckets: number[];
  sum: number;
  count: number;
}

export class Histogram {
  private readonly series = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[] = DEFAULT_BUCKETS_SECONDS,
  ) {}

  observe(labels: Labels, value: number): void {
    const key = labelKey(labels);
    let series = this.series.get(key);
    if (!series) {
      series = { buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    for (let i = 0; i < this.bounds.length; i++) if (value <= this.bounds[i]!) series.buckets[i]!++;
    series.sum += value;
    series.count++;
  }

  count(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.count ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [key, series] of this.series) {
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
  readonly requests: Counter;
  readonly requestDuration: Histogram;
  readonly compileFailures: Counter;
  readonly traceWriteDuration: Histogram;
  render(): string;
}

export function createMetrics(): Metrics {
  const requests = new Counter('cc_http_requests_total', 'HTTP requests by route, method and status.');
  const requestDuration = new Histogram('cc_http_request_duration_seconds', 'HTTP request latency by route, method and status.');
  const compileFailures = new Counter('cc_compile_failures_total', 'Compiles that delivered no prompt, by route and error code.');
  const traceWriteDuration = new Histogram('cc_trace_write_duration_seconds', 'Time for a trace event to become durable.');
  const all = [requests, requestDuration, compileFailures, traceWriteDuration];
  return {
    requests,
    requestDuration,
    compileFailures,
    traceWriteDuration,
    render: () => `${all.map((metric) => metric.render()).join('\n')}\n`,
  };
}
