import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';
import { CONTROLS, measurements, type Measurement } from '../helpers/complexity-probe.js';
import { ROWS } from './complexity-table.js';

/**
 * Issue 27: every parser of brain or caller text takes adversarial input (runs of spaces,
 * digits, `@`, dots, dashes, nesting, unclosed markers…) in linear time. Each row of
 * test/security/complexity-table.ts is measured with each payload family at n and 8n chars in
 * a child process, and the growth (the cost of one call at 8n over one call at n) must stay
 * near linear: a ratio, never an absolute time. Linear is 8 and quadratic 64; the bound is 48.
 * Two controls, a linear and a quadratic scan, are measured alike and must land on either side
 * of it. A measurement on the wrong side of the bound (a row or the linear control over it, the
 * quadratic control under it) is taken again, best of three: noise does not repeat three times,
 * whichever way it pushed (once in a whole suite run the quadratic control measured 47.6×,
 * against 61–67× in ten runs of the probe alone, quiet and beside two CPU hogs). A measurement
 * that never finishes (exponential backtracking) is killed after a stall and fails its row.
 *
 * The cost is the probe's CPU time (process.cpuUsage), not the clock's: on a machine busy with
 * other work a batch waits for a core, and the wait — up to 50–100× on two shared cores — lands
 * on whichever size it happens to; CPU time does not count it. (An operation count would be
 * exact, but most rows are regular expressions and builtins that cannot report one.)
 *
 * n is 512 chars, so that 8n, even doubled, repeated and in two-byte chars, stays under V8's
 * large-object size (an object over 128 KiB): each such object costs a fixed ~1 ms or more to
 * allocate and collect, a step the first time 8n crosses it and n does not, which made linear
 * rows (the block diff, topic excerpts) measure 50–100× at n = 4096. Measured on two busy cores:
 * every row at most about 16×, the controls 8× and 65×, and a quadratic `<!--…-->` pattern
 * planted in stripHtmlComments 54–63×, as at n = 4096.
 *
 * Each batch is about half a millisecond of CPU, best of three: the 818 measurements cost 8–9 s
 * of CPU, against 18 s at 1 ms and best of five, with the same spread (three runs beside two
 * CPU hogs: rows at most 18×, the controls 8× and 61–67×).
 */

const N = 512;
const MAX_GROWTH = 48;
const STALL_MS = 60_000;
const PROBE = join(PROJECT_ROOT, 'test/helpers/complexity-probe.ts');

interface Result {
  growth?: number;
  stalled?: boolean;
}

/** Runs the probe from `from` (or over `only`), collecting growths; resolves with the index it stalled at, if any. */
function probe(results: Map<number, Result>, from: number, only?: number[]): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', PROBE, String(N), String(from), ...(only ? [only.join(',')] : [])], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let current: number | undefined;
    let stalled: number | undefined;
    let stderr = '';
    let timer = setTimeout(stall, STALL_MS);
    function stall() {
      stalled = current;
      child.kill('SIGKILL');
    }
    child.stderr.on('data', (chunk) => (stderr += chunk));
    createInterface({ input: child.stdout }).on('line', (line) => {
      clearTimeout(timer);
      timer = setTimeout(stall, STALL_MS);
      const message = JSON.parse(line) as { start?: number; index?: number; growth?: number };
      if (message.start !== undefined) current = message.start;
      if (message.index !== undefined) results.set(message.index, { growth: message.growth! });
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (stalled !== undefined) resolve(stalled);
      else if (code === 0) resolve(undefined);
      else reject(new Error(`complexity probe exited ${code}: ${stderr}`));
    });
  });
}

const all = measurements();
const results = new Map<number, Result>();

beforeAll(async () => {
  for (let from = 0; from < all.length; ) {
    const stalled = await probe(results, from);
    if (stalled === undefined) break;
    results.set(stalled, { stalled: true });
    from = stalled + 1;
  }
  // Best of three for a measurement on the wrong side of the bound: the quadratic control keeps its
  // largest growth, every other measurement its smallest.
  const quadratic = all.find((m) => m.row === CONTROLS[1]!.name)!.index;
  const wrongSide = (index: number) => {
    const growth = results.get(index)?.growth;
    if (growth === undefined) return false; // stalled: its row fails as it is
    return index === quadratic ? growth <= MAX_GROWTH : growth > MAX_GROWTH;
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    const retake = all.map((m) => m.index).filter(wrongSide);
    if (retake.length === 0) break;
    const again = new Map<number, Result>();
    await probe(again, 0, retake);
    for (const [index, result] of again) {
      const before = results.get(index)!.growth!;
      results.set(index, { growth: index === quadratic ? Math.max(result.growth!, before) : Math.min(result.growth!, before) });
    }
  }
}, 900_000);

describe('parsers of brain and caller text grow linearly with adversarial input (issue 27)', () => {
  it('measures every row with every payload family', () => {
    expect(all.filter((m) => !results.has(m.index)).map(describeMeasurement)).toEqual([]);
  });

  it('tells quadratic growth from linear, so every row below can fail', () => {
    const growthOf = (name: string) => results.get(all.find((m) => m.row === name)!.index)?.growth;
    expect(growthOf(CONTROLS[0]!.name)).toBeLessThanOrEqual(MAX_GROWTH);
    expect(growthOf(CONTROLS[1]!.name)).toBeGreaterThan(MAX_GROWTH);
  });

  it.each(ROWS.map((row) => [row.name]))('%s', (name) => {
    const problems = all
      .filter((m) => m.row === name)
      .flatMap((m) => {
        const result = results.get(m.index);
        if (result?.stalled) return [`${describeMeasurement(m)}: no answer within ${STALL_MS / 1000} s (killed)`];
        if (result?.growth !== undefined && result.growth > MAX_GROWTH) return [`${describeMeasurement(m)}: ${result.growth.toFixed(1)}× from ${N} to ${8 * N} chars`];
        return [];
      });
    expect(problems).toEqual([]);
  });
});

function describeMeasurement(m: Measurement): string {
  return `${m.row}, shape ${m.shape}, ${m.family}`;
}
