import type { Metric } from 'prom-client';

/** One sample line of the text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (\\S+)(?: (-?\\d+))?$`);
const SUFFIXES: Record<Family['type'], string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

function unescape(value: string): string {
  return value.replace(/\\(["\\n])/g, (_match, char: string) => (char === 'n' ? '\n' : char));
}

/** As Prometheus reads a value (Go's ParseFloat): NaN and infinities in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  if (/^\+?inf$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(text)) return Number.NEGATIVE_INFINITY;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`not a sample value: ${line}`);
  return Number(text);
}

/**
 * A strict reader of the Prometheus text format 0.0.4 (what prom-client writes): every line is
 * a HELP, a TYPE or a sample of the family declared just before it; names and label syntax
 * follow the format; a family is declared once; histogram buckets are cumulative and end in
 * `+Inf` equal to `_count`. Throws on the first line that breaks a rule.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */
export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  let current: Family | undefined;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const help = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
    if (help) {
      if (families.has(help[1]!)) throw new Error(`family declared twice: ${help[1]}`);
      current = { name: help[1]!, help: help[2]!, type: 'untyped', samples: [] };
      families.set(current.name, current);
      continue;
    }
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      if (current === undefined || current.name !== type[1] || current.samples.length > 0) throw new Error(`TYPE out of place: ${line}`);
      current.type = type[2] as Family['type'];
      continue;
    }
    if (line.startsWith('#')) throw new Error(`unknown comment line: ${line}`);
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    if (!current) throw new Error(`sample before any family: ${line}`);
    const name = sample[1]!;
    if (!SUFFIXES[current.type].some((suffix) => name === `${current!.name}${suffix}`)) throw new Error(`sample ${name} outside its family ${current.name}`);
    const labels: Record<string, string> = {};
    for (const pair of (sample[2] ?? '').matchAll(new RegExp(LABEL, 'g'))) {
      if (pair[1]! in labels) throw new Error(`label repeated: ${line}`);
      labels[pair[1]!] = unescape(pair[2]!);
    }
    current.samples.push({ name, labels, value: parseValue(sample[sample.length - 2]!, line) });
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: Family): void {
  const series = new Map<string, Sample[]>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    series.set(key, [...(series.get(key) ?? []), sample]);
  }
  for (const samples of series.values()) {
    const buckets = samples.filter((sample) => sample.name.endsWith('_bucket'));
    const count = samples.find((sample) => sample.name.endsWith('_count'));
    for (let i = 1; i < buckets.length; i++) {
      if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${family.name}: buckets are not cumulative`);
    }
    const last = buckets[buckets.length - 1];
    if (last?.labels['le'] !== '+Inf' || last.value !== count?.value) throw new Error(`${family.name}: the +Inf bucket does not equal _count`);
  }
}

/** The value of the sample named `name` (the family name, or with a suffix) with exactly these labels; 0 when absent. */
export function sampleOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name !== name) continue;
      const keys = Object.keys(sample.labels);
      if (keys.length === Object.keys(labels).length && keys.every((key) => sample.labels[key] === labels[key])) return sample.value;
    }
  }
  return 0;
}

/** A counter's or gauge's current value for these labels (0 when the series does not exist yet). */
export async function valueOf(metric: Metric<string>, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metric.get();
  const keys = Object.keys(labels);
  const found = values.find(
    (value) => Object.keys(value.labels).length === keys.length && keys.every((key) => String(value.labels[key]) === labels[key]),
  );
  return found?.value ?? 0;
}
