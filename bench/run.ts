/**
 * `npm run bench`: the service measured as the voice server uses it, every target a ratio
 * between windows of one run (docs/benchmark.md). This file only orders the scenarios
 * (`bench/scenarios/`, one per group of windows or rows) over the harness (`bench/lib/`:
 * processes, /proc sampling, load windows, the report).
 */
import { rm } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureBrain } from './generate-brain.js';
import { fmt, out } from './lib/format.js';
import { describeSpan, parseKnobs, windowSpan } from './lib/knobs.js';
import { dirUsage } from './lib/machine.js';
import { BenchError, cleanUp, cleanUpOnExit, stopChild } from './lib/processes.js';
import { summarizeProfile } from './lib/profile.js';
import { checkBuilt, startServers } from './lib/servers.js';
import { report } from './lib/report.js';
import { compareBackends } from './scenarios/backends.js';
import { restoreChurn } from './scenarios/churn.js';
import { measureCold } from './scenarios/cold.js';
import { measureCompiles } from './scenarios/compiler.js';
import { measureDistinct, measureMix } from './scenarios/distinct.js';
import { firstConnects } from './scenarios/first-connect.js';
import { preflight as runPreflight } from './scenarios/preflight.js';
import { measureRouteWindows } from './scenarios/route-windows.js';
import { measureRunsByRequest } from './scenarios/runs-by-request.js';
import { compareWorkers } from './scenarios/workers.js';

async function main(): Promise<void> {
  cleanUpOnExit();
  const knobs = parseKnobs(process.env);
  const runStarted = performance.now();
  const startedAt = new Date();
  const loadAtStart = loadavg();
  await checkBuilt(knobs);

  out(`context-compiler bench — ${cpus().length} CPUs, node ${process.version}, ${knobs.BENCH_CONNECTIONS} connections, ` +
    `${knobs.BENCH_WARMUP} s warm-up + ${describeSpan(windowSpan(knobs, knobs.BENCH_DURATION))} measured per window; load average ${loadAtStart.map((n) => n.toFixed(2)).join(' ')}`);
  // First, while the machine is idle and this process is fresh.
  process.stdout.write(`in-process compiler (${knobs.BENCH_COMPILE_DURATION} s) … `);
  const compile = await measureCompiles(knobs.BENCH_COMPILE_DURATION * 1000);
  out(compile.compilesPerSecond === null ? compile.note : `${fmt.int(compile.compilesPerSecond)} compiles/s`);

  const brainStarted = performance.now();
  const brain = await ensureBrain(resolve(knobs.BENCH_BRAIN), { seed: knobs.BENCH_SEED, scale: knobs.BENCH_SCALE }).catch((error: Error) => {
    throw new BenchError(`brain: ${error.message}`, { cause: error });
  });
  const brainMs = performance.now() - brainStarted;
  out(`brain: ${brain.manifest.totalFiles.toLocaleString('en-US')} files, ${(brain.manifest.totalBytes / 1e6).toFixed(1)} MB at ${brain.dir} ` +
    `(${brain.generated ? 'generated' : 'reused'} in ${Math.round(brainMs)} ms)`);
  await restoreChurn(brain.dir);

  const bench = await startServers(knobs, brain);
  const cold = await measureCold(bench);
  const preflight = await runPreflight(bench);
  const windows = await measureRouteWindows(bench, preflight);
  // Distinct inputs last: no memo hit, new trace content on every request, the heap at its fullest.
  const distinct = await measureDistinct(bench, windows.length);
  if (distinct) windows.push(distinct);
  const mix = await measureMix(bench, windows.length);
  if (mix) windows.push(mix);
  const peakRssMB = await bench.server.rss.finalPeakMB();
  bench.server.rss.stop();

  const backends = knobs.BENCH_TRACE === 'postgres' ? await compareBackends(bench) : null;
  const workers = knobs.BENCH_WORKERS > 1 ? await compareWorkers(bench, windows) : null;
  const serverStop = await stopChild(bench.server.spawned, 20_000);
  await stopChild(bench.bare.spawned, 5_000);
  // Alone on the machine from here: the starts, then the trace store's query.
  const connects = await firstConnects(bench);
  const runsByRequest = await measureRunsByRequest(knobs.BENCH_RUNS_MATCHING);
  const traces = await dirUsage(bench.traceDir);
  if (knobs.BENCH_KEEP_TRACES !== '1') await rm(bench.traceRoot, { recursive: true, force: true });
  const cpuProfile = bench.server.profileDir ? await summarizeProfile(bench.server.profileDir, 20) : null;

  await report(bench, {
    startedAt,
    elapsedSeconds: (performance.now() - runStarted) / 1000,
    loadAtStart,
    brainMs,
    compile,
    cold,
    preflight,
    windows,
    distinct,
    mix,
    peakRssMB,
    backends,
    workers,
    firstConnects: connects,
    runsByRequest,
    traces,
    serverStop,
    cpuProfile,
  });
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof BenchError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
