import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { FIRST_CONNECT_PERSONAS, measureFirstConnects, p50Max, type FirstConnects } from '../first-connect.js';
import { fmt, out, verdict, type Verdict } from '../lib/format.js';
import { TARGETS } from '../lib/knobs.js';
import { stopChild } from '../lib/processes.js';
import { spawnLikeServer, type Bench } from '../lib/servers.js';

/** Ready means warm: the first connect after each of BENCH_RESTARTS starts, alone on the machine (once the main server has stopped). */
export async function firstConnects(bench: Bench): Promise<FirstConnects | null> {
  if (bench.knobs.BENCH_RESTARTS === 0) return null;
  process.stdout.write(`first connect after ${bench.knobs.BENCH_RESTARTS} starts … `);
  const result = await measureFirstConnects({
    restarts: bench.knobs.BENCH_RESTARTS,
    token: bench.token,
    launch: async () => {
      const { spawned, base } = await spawnLikeServer(bench, { TRACE_DIR: await mkdtemp(join(bench.traceRoot, 'restart-')) });
      return { base, stop: async () => void (await stopChild(spawned, 20_000)) };
    },
  });
  out('done');
  return result;
}

export function firstConnectVerdict(connects: FirstConnects | null): Verdict {
  return connects === null ? 'n/a' : verdict(FIRST_CONNECT_PERSONAS.every((persona) => p50Max(connects.firstMs[persona]).p50 <= TARGETS.firstConnectMs));
}

export function printFirstConnects(connects: FirstConnects, judged: Verdict): void {
  const ready = p50Max(connects.readyMs);
  const figures = FIRST_CONNECT_PERSONAS.map((persona) => ({ persona, ...p50Max(connects.firstMs[persona]) }));
  out(`  first connect after start (/readyz 200 → first GET /context/<persona>, ${connects.restarts} starts): ` +
    `${figures.map(({ persona, p50, max }) => `${persona} p50 ${fmt.ms(p50)} ms, max ${fmt.ms(max)} ms`).join('; ')}  ${fmt.mark(judged)} (p50 ≤ ${TARGETS.firstConnectMs} ms; spawn → ready p50 ${fmt.int(ready.p50)} ms${connects.shed > 0 ? `; ${connects.shed} shed by a busy machine and asked again` : ''})`);
}
