/**
 * Child process of test/security/complexity.test.ts: times the measurements of the
 * complexity table (every row, shape and payload family) at n and 8n chars, from measurement
 * `from` on (or only the ones listed), and prints one JSON line as each starts and ends, so
 * the parent can name the one that never finished and go on after it.
 */
import { FAMILIES, ROWS } from '../security/complexity-table.js';

export interface Measurement {
  index: number;
  row: string;
  shape: number;
  family: string;
}

/** Every measurement of the table, in order. */
export function measurements(): Measurement[] {
  const out: Measurement[] = [];
  for (const row of ROWS) {
    row.shapes.forEach((_, shape) => {
      for (const family of Object.keys(FAMILIES)) out.push({ index: out.length, row: row.name, shape, family });
    });
  }
  return out;
}

let sink = 0;

function batch(run: (text: string) => unknown, text: string, runs: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) sink += run(text) === undefined ? 0 : 1;
  return Number(process.hrtime.bigint() - start);
}

/**
 * Both sizes timed in alternation, best of five batches each: the engine's state (regexp
 * tiers, the heap) then shifts under both alike, and a batch at n lasts about 2 ms or more.
 */
function growth(run: (text: string) => unknown, small: string, large: string): { runs: number; smallNs: number; largeNs: number } {
  batch(run, large, 1);
  let runs = 1;
  while (runs < 100_000 && batch(run, small, runs) < 2e6) runs *= 2;
  let smallNs = Infinity;
  let largeNs = Infinity;
  for (let round = 0; round < 5; round++) {
    smallNs = Math.min(smallNs, batch(run, small, runs));
    largeNs = Math.min(largeNs, batch(run, large, runs));
  }
  return { runs, smallNs, largeNs };
}

if (process.argv[1]?.endsWith('complexity-probe.ts')) {
  const n = Number(process.argv[2]);
  const from = Number(process.argv[3] ?? 0);
  const only = process.argv[4] === undefined ? undefined : new Set(process.argv[4].split(',').map(Number));
  for (const measurement of measurements()) {
    if (measurement.index < from || (only !== undefined && !only.has(measurement.index))) continue;
    const row = ROWS.find((candidate) => candidate.name === measurement.row)!;
    const shape = row.shapes[measurement.shape]!;
    const payload = FAMILIES[measurement.family]!;
    process.stdout.write(`${JSON.stringify({ start: measurement.index })}\n`);
    const measured = growth(row.run, shape(payload(n)), shape(payload(8 * n)));
    process.stdout.write(`${JSON.stringify({ index: measurement.index, ...measured, growth: measured.largeNs / measured.smallNs })}\n`);
  }
  process.stdout.write(`${JSON.stringify({ done: sink >= 0 })}\n`);
}
