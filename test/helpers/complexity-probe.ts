/**
 * Child process of test/security/complexity.test.ts: measures the CPU time of the measurements of the
 * complexity table (every row, shape and payload family) at n and 8n chars, from measurement
 * `from` on (or only the ones listed), and prints one JSON line as each starts and ends, so
 * the parent can name the one that never finished and go on after it.
 */
import { FAMILIES, ROWS, type ComplexityRow } from '../security/complexity-table.js';

export interface Measurement {
  index: number;
  row: string;
  shape: number;
  family: string;
  /** One of the CONTROLS, not a parser of the table. */
  control?: true;
}

/**
 * Scans whose growth is known, measured like every row, so the test shows the probe tells
 * them apart: a quadratic one must measure over the bound and a linear one under it.
 */
export const CONTROLS: ComplexityRow[] = [
  {
    name: 'control: linear scan',
    shapes: [(payload) => payload],
    run: (text) => {
      let sum = 0;
      for (let i = 0; i < text.length; i++) sum += text.charCodeAt(i);
      return sum;
    },
  },
  {
    name: 'control: quadratic scan',
    // The length of the run of equal chars from every position, counted char by char: each
    // count runs to the end of a run of spaces. A quarter of the payload keeps a call at 8n short.
    shapes: [(payload) => payload.slice(0, payload.length >> 2)],
    run: (text) => {
      let sum = 0;
      for (let i = 0; i < text.length; i++) {
        let j = i;
        while (j < text.length && text.charCodeAt(j) === text.charCodeAt(i)) j++;
        sum += j - i;
      }
      return sum;
    },
  },
];

/** Every measurement of the table, in order, then the controls' (one payload family each). */
export function measurements(): Measurement[] {
  const out: Measurement[] = [];
  for (const row of ROWS) {
    row.shapes.forEach((_, shape) => {
      for (const family of Object.keys(FAMILIES)) out.push({ index: out.length, row: row.name, shape, family });
    });
  }
  for (const row of CONTROLS) out.push({ index: out.length, row: row.name, shape: 0, family: 'spaces', control: true });
  return out;
}

let sink = 0;

/** CPU microseconds the process spent on `runs` calls (user and system, every thread: the collector's work is the parser's too). */
function batch(run: (text: string) => unknown, text: string, runs: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) sink += run(text) === undefined ? 0 : 1;
  const spent = process.cpuUsage(start);
  return spent.user + spent.system;
}

/**
 * Both sizes timed in alternation, best of three batches each: the engine's state (regexp
 * tiers, the heap) then shifts under both alike. A batch at n takes about 0.5 ms of CPU or more,
 * and one at 8n makes an eighth as many calls, so it takes about as much when the parser is
 * linear (and 8× more when it is quadratic): the growth is the CPU time of one call at 8n over
 * that of one call at n.
 */
function growth(run: (text: string) => unknown, small: string, large: string): { runs: number; largeRuns: number; smallUs: number; largeUs: number; growth: number } {
  batch(run, large, 1);
  let runs = 1;
  // The shorter of two batches, so one preempted batch does not end the count at a handful of calls.
  while (runs < 100_000 && Math.min(batch(run, small, runs), batch(run, small, runs)) < 500) runs *= 2;
  const largeRuns = Math.max(1, runs >> 3);
  let smallUs = Infinity;
  let largeUs = Infinity;
  for (let round = 0; round < 3; round++) {
    smallUs = Math.min(smallUs, batch(run, small, runs));
    largeUs = Math.min(largeUs, batch(run, large, largeRuns));
  }
  return { runs, largeRuns, smallUs, largeUs, growth: largeUs / largeRuns / (smallUs / runs) };
}

if (process.argv[1]?.endsWith('complexity-probe.ts')) {
  const n = Number(process.argv[2]);
  const from = Number(process.argv[3] ?? 0);
  const only = process.argv[4] === undefined ? undefined : new Set(process.argv[4].split(',').map(Number));
  for (const measurement of measurements()) {
    if (measurement.index < from || (only !== undefined && !only.has(measurement.index))) continue;
    const row = [...ROWS, ...CONTROLS].find((candidate) => candidate.name === measurement.row)!;
    const shape = row.shapes[measurement.shape]!;
    const payload = FAMILIES[measurement.family]!;
    process.stdout.write(`${JSON.stringify({ start: measurement.index })}\n`);
    const measured = growth(row.run, shape(payload(n)), shape(payload(8 * n)));
    process.stdout.write(`${JSON.stringify({ index: measurement.index, ...measured })}\n`);
  }
  process.stdout.write(`${JSON.stringify({ done: sink >= 0 })}\n`);
}
