import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FirstConnects } from '../first-connect.js';
import type { Cold } from '../scenarios/cold.js';
import type { BackendComparison } from '../scenarios/backends.js';
import { firstConnectVerdict, printFirstConnects } from '../scenarios/first-connect.js';
import type { DurableWork, Preflight } from '../scenarios/preflight.js';
import { printRunsByRequest, runsByRequestVerdict, type RunsByRequest } from '../scenarios/runs-by-request.js';
import type { WorkersComparison } from '../scenarios/workers.js';
import { printBackends } from '../scenarios/backends.js';
import { printWorkers } from '../scenarios/workers.js';
import { fmt, out, verdict } from './format.js';
import { describeSpan, TARGETS, windowSpan } from './knobs.js';
import { gitInfo, machineInfo } from './machine.js';
import type { ProfileSummary } from './profile.js';
import { judgeWindows, printJudged, printWindows, routeSummaries, rssVerdict, runWarnings } from './judge.js';
import { startEnvText, type Bench } from './servers.js';
import type { WindowResult } from './window.js';

/** Everything a run measured, as the orchestrator gathered it. */
export interface RunResults {
  startedAt: Date;
  elapsedSeconds: number;
  loadAtStart: number[];
  brainMs: number;
  compile: { compilesPerSecond: number | null; note?: string };
  cold: Cold;
  preflight: Preflight;
  windows: WindowResult[];
  distinct: WindowResult | null;
  mix: WindowResult | null;
  peakRssMB: number | null;
  backends: BackendComparison | null;
  workers: WorkersComparison | null;
  firstConnects: FirstConnects | null;
  runsByRequest: RunsByRequest | null;
  traces: { files: number; bytes: number };
  serverStop: { code: number | null; signal: NodeJS.Signals | null; ms: number };
  cpuProfile: ProfileSummary | null;
}

/** Prints the table, the targets with their verdicts and the warnings, and writes `bench-<timestamp>.json` and `latest.json`. */
export async function report(bench: Bench, r: RunResults): Promise<void> {
  const { knobs } = bench;
  const { comparisons, informational } = judgeWindows(r.windows, knobs.BENCH_ROUTES);
  const verdicts = {
    cold: r.cold.listeningToFirst200Ms === null ? 'invalid' : verdict(r.cold.listeningToFirst200Ms <= TARGETS.coldMs),
    rss: r.peakRssMB === null ? 'n/a' : verdict(r.peakRssMB <= TARGETS.rssMB),
    rssDistinct: rssVerdict(r.distinct),
    rssMix: rssVerdict(r.mix),
    firstConnect: firstConnectVerdict(r.firstConnects),
    compiles: r.compile.compilesPerSecond === null ? 'n/a' : verdict(r.compile.compilesPerSecond >= TARGETS.compilesPerSecond),
    runsByRequest: runsByRequestVerdict(r.runsByRequest),
  } as const;
  const startEnv = startEnvText(bench);
  const { cold, distinct, mix } = r;
  out();
  printWindows(r.windows);
  out();
  printJudged(comparisons, informational);
  out(`  cold first request (listening → first 200): ${cold.listeningToFirst200Ms === null ? cold.note : `${fmt.ms(cold.listeningToFirst200Ms)} ms`}  ${fmt.mark(verdicts.cold)} (≤ ${TARGETS.coldMs} ms; spawn → listening ${fmt.ms(cold.spawnToListeningMs)} ms, first request ${fmt.ms(cold.firstRequestMs)} ms)`);
  if (r.firstConnects !== null) printFirstConnects(r.firstConnects, verdicts.firstConnect);
  out(`  peak RSS (VmHWM) over the run: ${r.peakRssMB === null ? 'not available (no /proc)' : `${r.peakRssMB.toFixed(1)} MB`}  ${fmt.mark(verdicts.rss)} (≤ ${TARGETS.rssMB} MB; server: ${startEnv}node ${[...bench.nodeFlags, bench.start.entry].join(' ')}${knobs.BENCH_NODE_OPTIONS === undefined ? ', as npm start' : `, NODE_OPTIONS=${JSON.stringify(knobs.BENCH_NODE_OPTIONS)}`})`);
  if (distinct) {
    out(`  peak RSS during ${describeSpan(windowSpan(knobs, knobs.BENCH_DISTINCT_DURATION))} of distinct POST /compile inputs: ${distinct.serverPeakRssMB === null ? 'not available (no /proc)' : `${distinct.serverPeakRssMB.toFixed(1)} MB`}  ` +
      `${fmt.mark(verdicts.rssDistinct)} (≤ ${TARGETS.rssMB} MB; ${fmt.int(distinct.requests)} compiles, each a new message)`);
  }
  if (mix) {
    out(`  peak RSS during ${describeSpan(windowSpan(knobs, knobs.BENCH_MIX_DURATION, knobs.BENCH_MIX_CONNECTIONS))} of mixed distinct inputs: ${mix.serverPeakRssMB === null ? 'not available (no /proc)' : `${mix.serverPeakRssMB.toFixed(1)} MB`}  ` +
      `${fmt.mark(verdicts.rssMix)} (≤ ${TARGETS.rssMB} MB; ${fmt.int(mix.requests)} requests from ${knobs.BENCH_MIX_CONNECTIONS} clients: 70 % compile, 10 % each mars, venus, topic)`);
  }
  out(`  in-process compiles/s (distinct inputs): ${r.compile.compilesPerSecond === null ? r.compile.note : fmt.int(r.compile.compilesPerSecond)}  ${fmt.mark(verdicts.compiles)} (≥ ${TARGETS.compilesPerSecond.toLocaleString('en-US')})`);
  if (r.runsByRequest) printRunsByRequest(r.runsByRequest, verdicts.runsByRequest);
  out(`traces written: ${r.traces.files} files, ${(r.traces.bytes / 1e6).toFixed(1)} MB; server stopped in ${r.serverStop.ms} ms (exit ${r.serverStop.code ?? r.serverStop.signal}); ${bench.server.spawned.logLines()} warn/error log lines`);
  if (r.workers) printWorkers(r.workers);
  if (r.backends) printBackends(r.backends);
  const warnings = runWarnings(r.windows, r.traces.files, r.serverStop.code, r.serverStop.signal, r.workers);
  for (const warning of warnings) out(`WARNING: ${warning}`);
  const { profileDir } = bench.server;
  if (profileDir) {
    if (!r.cpuProfile) out(`cpu profile: none written under ${profileDir}`);
    else {
      out(`cpu profile of the server, whole run: ${fmt.int(r.cpuProfile.busyMs)} ms busy of ${fmt.int(r.cpuProfile.totalMs)} ms; self time, % of busy: ${r.cpuProfile.path}`);
      for (const entry of r.cpuProfile.self) out(`  ${entry.percent.toFixed(1).padStart(5)} %  ${entry.fn}`);
    }
  }

  const json = {
    schemaVersion: 3,
    startedAt: r.startedAt.toISOString(),
    elapsedSeconds: r.elapsedSeconds,
    machine: machineInfo(r.loadAtStart),
    git: gitInfo(),
    settings: {
      connections: knobs.BENCH_CONNECTIONS,
      pipelining: 1,
      warmupSeconds: knobs.BENCH_WARMUP,
      measureSeconds: knobs.BENCH_DURATION,
      compileSeconds: knobs.BENCH_COMPILE_DURATION,
      routes: knobs.BENCH_ROUTES,
      distinctSeconds: knobs.BENCH_DISTINCT_DURATION,
      mix: { seconds: knobs.BENCH_MIX_DURATION, connections: knobs.BENCH_MIX_CONNECTIONS },
      churn: knobs.BENCH_CHURN === '1',
      workers: knobs.BENCH_WORKERS,
      acceptEncoding: bench.encoding ?? null,
      server: { ...bench.serverEnv, CONTEXT_COMPILER_TOKENS: '[bench token]', TRACE_DIR: '[temp dir]', nodeFlags: bench.nodeFlags, entry: bench.start.entry, asNpmStart: knobs.BENCH_NODE_OPTIONS === undefined },
      trace: knobs.BENCH_TRACE,
      runsMatching: knobs.BENCH_RUNS_MATCHING,
    },
    brain: { dir: bench.brain.dir, generated: bench.brain.generated, ms: r.brainMs, manifest: bench.brain.manifest },
    targets: TARGETS,
    cold,
    firstConnects: r.firstConnects,
    routes: routeSummaries(r.windows, bench.targets, r.preflight.answers),
    comparisons,
    informational,
    durable: r.preflight.work satisfies Partial<Record<string, DurableWork>>,
    windows: r.windows,
    peakRssMB: r.peakRssMB,
    distinctCompile: distinct,
    mixedDistinct: mix,
    compile: r.compile,
    runsByRequest: r.runsByRequest,
    verdicts,
    traces: { ...r.traces, kept: knobs.BENCH_KEEP_TRACES === '1' ? bench.traceDir : null },
    traceBackends: r.backends,
    workers: r.workers,
    warnings,
    serverStop: { ...r.serverStop, logLines: bench.server.spawned.logLines() },
    cpuProfile: r.cpuProfile,
  };
  await mkdir(knobs.BENCH_OUT, { recursive: true });
  const stamp = r.startedAt.toISOString().replace(/[:.]/g, '-');
  const text = `${JSON.stringify(json, null, 2)}\n`;
  await writeFile(join(knobs.BENCH_OUT, `bench-${stamp}.json`), text);
  await writeFile(join(knobs.BENCH_OUT, 'latest.json'), text);
  out(`wrote ${join(knobs.BENCH_OUT, `bench-${stamp}.json`)} and latest.json; whole run ${r.elapsedSeconds.toFixed(0)} s`);
}
