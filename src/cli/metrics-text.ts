/**
 * The samples of the named series in a Prometheus text exposition (`GET /metrics`), read in
 * one pass over the text, each character looked at a bounded number of times: no regular
 * expression, no backtracking, whatever the service (or something in its place) answers.
 * Other series, comments and lines that do not parse are skipped.
 *
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of `names` in `text`, in the order they appear. */
export function samplesOf(text: string, names: ReadonlySet<string>): Sample[] {
  const samples: Sample[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const sample = text.charCodeAt(start) === 0x23 /* # */ ? null : sampleOf(text, start, end, names);
    if (sample !== null) samples.push(sample);
    start = end + 1;
  }
  return samples;
}

/** One sample line, `name{label="value",...} number [timestamp]`; null when it is not one of `names` or does not parse. */
function sampleOf(text: string, start: number, end: number, names: ReadonlySet<string>): Sample | null {
  let i = start;
  while (i < end && text[i] !== '{' && text[i] !== ' ') i++;
  const name = text.slice(start, i);
  if (!names.has(name)) return null;
  const labels: Record<string, string> = {};
  if (text[i] === '{') {
    i++;
    while (i < end && text[i] !== '}') {
      const equals = text.indexOf('=', i);
      if (equals === -1 || equals >= end || text[equals + 1] !== '"') return null;
      const key = text.slice(i, equals).trim();
      let value = '';
      i = equals + 2;
      while (i < end && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < end) {
          const escaped = text[i + 1];
          value += escaped === 'n' ? '\n' : escaped;
          i += 2;
        } else value += text[i++];
      }
      if (i >= end) return null;
      labels[key] = value;
      i++;
      if (text[i] === ',') i++;
    }
    if (i >= end) return null;
    i++;
  }
  while (i < end && text[i] === ' ') i++;
  let valueEnd = i;
  while (valueEnd < end && text[valueEnd] !== ' ' && text[valueEnd] !== '\r') valueEnd++;
  const raw = text.slice(i, valueEnd);
  const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
  return raw.length === 0 || Number.isNaN(value) ? null : { name, labels, value };
}
