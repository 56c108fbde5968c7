import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fmt, out, printTable } from '../lib/format.js';
import type { RouteKey } from '../lib/knobs.js';
import { BenchError, stopChild } from '../lib/processes.js';
import { createRssSampler, processTree } from '../lib/proc-stats.js';
import { buildTargets, send } from '../lib/requests.js';
import { startLikeServer, type Bench } from '../lib/servers.js';
import { measureWindow, type WindowResult } from '../lib/window.js';

export interface WorkersComparison {
  workers: number;
  /** Processes found serving (the primary and its workers); 1 when the build ignores WORKERS. */
  processes: number;
  peakRssMB: number | null;
  routes: Array<{ key: RouteKey; label: string; one: WindowResult; many: WindowResult; ratio: number }>;
}

/**
 * Starts a second server exactly like the first but with `WORKERS=N` and its own trace
 * directory, and measures each persona route at a fixed minute on it; the one-process figure
 * is that route's window in the main table.
 */
export async function compareWorkers(bench: Bench, windows: readonly WindowResult[]): Promise<WorkersComparison> {
  const { knobs, token, brain, encoding } = bench;
  const workers = knobs.BENCH_WORKERS;
  process.stdout.write(`WORKERS=${workers}: starting … `);
  const server = await startLikeServer(bench, { WORKERS: String(workers), TRACE_DIR: join(bench.traceRoot, `traces-workers-${workers}`) });
  const personas = knobs.BENCH_ROUTES.filter((key) => key === 'mars' || key === 'venus');
  const targets = buildTargets(server.base, token, brain.manifest, personas, encoding);
  // Every worker answers before the load starts (connections are spread over the processes).
  for (let i = 0; i < 4 * workers; i++) for (const target of targets) await send(target);
  let pids: number[] = await processTree(server.spawned.pid);
  const deadline = performance.now() + 10_000;
  while (pids.length < workers + 1 && performance.now() < deadline) {
    await sleep(100);
    pids = await processTree(server.spawned.pid);
  }
  out(`${pids.length} process(es)`);
  const rss = createRssSampler(() => pids);
  const routes: WorkersComparison['routes'] = [];
  for (const [i, target] of targets.entries()) {
    const key = target.key as RouteKey;
    process.stdout.write(`[WORKERS=${workers}] ${target.label} … `);
    const many = await measureWindow(i, { ...target, key: 'workers', route: key, label: `${target.label}, WORKERS=${workers}` }, knobs, { pids: () => pids, rss });
    out(`${fmt.int(many.requestsPerSecond)} req/s, p99 ${fmt.ms(many.latencyMs.p99)} ms`);
    const one = windows.find((window) => window.key === key)!;
    routes.push({ key, label: target.label, one, many, ratio: many.requestsPerSecond / one.requestsPerSecond });
    if (server.spawned.child.exitCode !== null) throw new BenchError(`the WORKERS=${workers} server exited; output:\n${server.spawned.tail()}`);
  }
  const peakRssMB = await rss.finalPeakMB();
  rss.stop();
  await stopChild(server.spawned, 20_000);
  return { workers, processes: pids.length, peakRssMB, routes };
}

export function printWorkers(comparison: WorkersComparison): void {
  out();
  out(`persona routes at a fixed minute, WORKERS=1 (the windows above) and WORKERS=${comparison.workers} (${comparison.processes} processes, peak RSS of the largest ${comparison.peakRssMB === null ? '—' : `${comparison.peakRssMB.toFixed(1)} MB`}):`);
  const rows = [['route', '1: req/s', 'p99 ms', 'CPU µs/req', `${comparison.workers}: req/s`, 'p99 ms', 'CPU µs/req', 'ratio']];
  for (const { label, one, many, ratio } of comparison.routes) {
    rows.push([
      label,
      fmt.int(one.requestsPerSecond),
      fmt.ms(one.latencyMs.p99),
      fmt.int(one.serverCpuUsPerRequest),
      fmt.int(many.requestsPerSecond),
      fmt.ms(many.latencyMs.p99),
      fmt.int(many.serverCpuUsPerRequest),
      ratio.toFixed(2),
    ]);
  }
  printTable(rows);
}
