import { fmt, out } from '../lib/format.js';
import { describeSpan, windowSpan } from '../lib/knobs.js';
import { assertRunning } from '../lib/processes.js';
import { buildTargets, localDayStartMs, type Target } from '../lib/requests.js';
import type { Bench } from '../lib/servers.js';
import { measureWindow, type WindowResult } from '../lib/window.js';
import { mixedRequests } from '../mix.js';

/** POST /compile whose message differs on every request: no memo hit, new trace content on every request, the heap at its fullest. */
export async function measureDistinct(bench: Bench, index: number): Promise<WindowResult | null> {
  const { knobs } = bench;
  if (knobs.BENCH_DISTINCT_DURATION === 0) return null;
  const compile = buildTargets(bench.server.base, bench.token, bench.brain.manifest, ['compile'])[0]!;
  const template = JSON.parse(compile.body!) as Record<string, unknown>;
  let turn = 0;
  const target: Target = { ...compile, key: 'compile-distinct', route: 'compile', label: 'POST /compile, distinct inputs' };
  process.stdout.write(`[distinct] ${target.label} (${describeSpan(windowSpan(knobs, knobs.BENCH_DISTINCT_DURATION))}) … `);
  const distinct = await measureWindow(index, target, knobs, bench.server.measured, {
    warmupSeconds: 0,
    seconds: knobs.BENCH_DISTINCT_DURATION,
    nextBody: () => JSON.stringify({ ...template, message: `${String(template['message'])} (turn ${++turn})` }),
  });
  out(fmt.memory(distinct));
  assertRunning(bench.server.spawned, target.label);
  return distinct;
}

/** The mixed distinct-input window (bench/mix.ts), every route at once and nothing ever seen before, with its own client count and no warm-up. */
export async function measureMix(bench: Bench, index: number): Promise<WindowResult | null> {
  const { knobs, brain } = bench;
  if (knobs.BENCH_MIX_DURATION === 0) return null;
  const compile = buildTargets(bench.server.base, bench.token, brain.manifest, ['compile'])[0]!;
  const dayStart = localDayStartMs(brain.manifest.endDate, brain.manifest.timezone);
  const target: Target = { ...compile, key: 'mix', label: 'mixed distinct inputs' };
  process.stdout.write(`[mix] ${target.label} (${describeSpan(windowSpan(knobs, knobs.BENCH_MIX_DURATION, knobs.BENCH_MIX_CONNECTIONS))}, ${knobs.BENCH_MIX_CONNECTIONS} clients) … `);
  const result = await measureWindow(index, target, knobs, bench.server.measured, {
    warmupSeconds: 0,
    seconds: knobs.BENCH_MIX_DURATION,
    connections: knobs.BENCH_MIX_CONNECTIONS,
    nextRequest: mixedRequests({
      token: bench.token,
      compileBody: JSON.parse(compile.body!) as Record<string, unknown>,
      // A new minute every time, counting back from the brain's last local day.
      minuteAt: (i) => new Date(dayStart + 1439 * 60_000 - i * 60_000).toISOString().replace('.000Z', 'Z'),
      topicId: brain.manifest.topics.typical,
      seed: knobs.BENCH_SEED,
    }),
  });
  out(fmt.memory(result));
  assertRunning(bench.server.spawned, 'the mixed window');
  return result;
}
