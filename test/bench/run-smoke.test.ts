/**
 * `BENCH_SMOKE=1 npm run bench` runs every scenario of the bench end to end (the harness, not
 * the service's speed): each window answers only 2xx and the report holds every row and
 * target. Nothing here reads a figure's size, only that it is there.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';
import { findServerBinaries } from '../../bench/postgres-cluster.js';
import { buildDist } from '../helpers/build.js';

interface Report {
  windows: Array<{ key: string; route: string | null; view: string | null; requests: number; non2xx: number; errors: number }>;
  comparisons: Array<{ label: string; ratio: number | null }>;
  informational: Array<{ label: string }>;
  routes: Array<{ key: string; preflight: { status: number } }>;
  durable: Record<string, { paths: string[]; eventBytes: number }>;
  firstConnects: { restarts: number; firstMs: Record<string, number[]> } | null;
  runsByRequest: { matchingRuns: number; files: { runs: number }; postgres: { runs: number } | string; ratio: number | null } | null;
  verdicts: Record<string, string>;
  warnings: string[];
}

let dir: string;
let report: Report;
let stdout: string;

beforeAll(async () => {
  await buildDist();
  dir = await mkdtemp(join(tmpdir(), 'cc-bench-smoke-'));
  const run = await promisify(execFile)(process.execPath, ['dist/bench/run.js'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', TMPDIR: tmpdir(), BENCH_SMOKE: '1', BENCH_BRAIN: join(dir, 'brain'), BENCH_OUT: join(dir, 'out') },
    // A guard against a hang, not a speed limit: on a busy 2-core machine the build and this run together took 80–190 s.
    timeout: 420_000,
    maxBuffer: 1 << 22,
  });
  stdout = run.stdout;
  report = JSON.parse(await readFile(join(dir, 'out/latest.json'), 'utf8')) as Report;
}, 600_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('BENCH_SMOKE=1 npm run bench', () => {
  it('measures every window in the documented order, each answered with 2xx only', () => {
    // First: a persona whose preflight was not a 200 gets no same-bytes or durable windows, and the
    // list below would only say they are missing; this names the status and the problem.
    expect(report.routes.map((route) => [route.key, route.preflight.status]), JSON.stringify(report.routes.map((route) => route.preflight))).toEqual([['mars', 200], ['venus', 200], ['topic', 200], ['compile', 200]]);
    expect(report.windows.map((w) => `${w.route && w.route !== w.key ? `${w.key}:${w.route}` : w.key}${w.view === null ? '' : `?view=${w.view}`}`)).toEqual([
      'bare',
      'mars', 'same:mars', 'durable:mars', 'mars?view=session', 'same:mars?view=session', 'durable:mars?view=session',
      'minute:mars', 'minute:mars?view=session', 'churn:mars', 'bare',
      'venus', 'same:venus', 'durable:venus', 'venus?view=session', 'same:venus?view=session', 'durable:venus?view=session',
      'minute:venus', 'minute:venus?view=session', 'bare',
      'topic', 'bare',
      'compile', 'bare',
      'compile-distinct:compile',
      'mix',
    ]);
    for (const window of report.windows) {
      expect(window.requests, window.key).toBeGreaterThan(0);
      expect([window.non2xx, window.errors], window.key).toEqual([0, 0]);
    }
    expect(Object.keys(report.durable).sort()).toEqual(['mars', 'mars-session', 'venus', 'venus-session']);
  });

  it('judges every target: the durable ratios of each persona\'s full and lean answers at a fixed and a new minute, churn, and the rows below the table', () => {
    const judged = ['req/s', 'CPU µs per request', 'p99'];
    const durable = (name: string) => [
      ...judged.map((figure) => `${name}: fixed minute / durable same-body, ${figure}`),
      ...judged.map((figure) => `${name}: new minute / durable same-body, ${figure}`),
    ];
    expect(report.comparisons.map((c) => c.label)).toEqual([
      ...['mars', 'venus'].flatMap((route) => [...durable(route), ...(route === 'mars' ? ['mars: memory churn / steady, req/s'] : []), ...durable(`${route} ?view=session`)]),
    ]);
    expect(report.comparisons.every((c) => c.ratio !== null && Number.isFinite(c.ratio))).toBe(true);
    expect(report.informational).toHaveLength(12);
    expect(Object.keys(report.verdicts).sort()).toEqual(['cold', 'compiles', 'firstConnect', 'rss', 'rssDistinct', 'rssMix', 'runsByRequest']);
    expect(report.firstConnects?.restarts).toBe(1);
    expect(stdout).toMatch(/^targets \(a ratio of two windows above/m);
    expect(report.warnings).toEqual([]);
  });

  it('queries GET /runs?requestId= on both trace backends and reports their ratio', () => {
    expect(report.runsByRequest?.matchingRuns).toBe(20);
    expect(report.runsByRequest?.files.runs).toBe(20);
    if (findServerBinaries()) {
      expect(report.runsByRequest?.postgres).toMatchObject({ runs: 20 });
      expect(report.runsByRequest?.ratio).toBeGreaterThan(0);
      expect(report.verdicts['runsByRequest']).toMatch(/^(pass|fail)$/);
      expect(stdout).toMatch(/^ {2}GET \/runs\?requestId= \(20 matching runs in evicted files, 160 events\), files \/ PostgreSQL, median ms: /m);
    }
  });
});
