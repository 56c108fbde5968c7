/**
 * What revalidating a cached brain read costs (a script, not a test): process CPU (the
 * event loop and libuv's threads) per set of the reads a `/context/mars` request makes
 * from the cache — SOUL.md, three daily memory files, the heartbeat, two persona files
 * that are missing, and the `memory/` listing — with the stats on the event loop (`sync`)
 * and through the thread pool (`async`), each round run twice.
 *
 *   node --import tsx bench/revalidation-bench.ts [brain=bench/brain] [rounds=20000]
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createBrain, type RevalidationMode } from '../src/io/brain.js';

const root = process.argv[2] ?? 'bench/brain';
const rounds = Number(process.argv[3] ?? 20_000);
const days = (await readdir(join(root, 'memory'))).filter((name) => /^\d{4}-\d{2}-\d{2}\.md$/.test(name)).sort().slice(-3);
const paths = ['SOUL.md', ...days.map((name) => `memory/${name}`), 'memory/heartbeat-state.json', 'personas/mars.md', 'personas/tools.json'];
const log = { warn: (_obj: object, msg: string) => console.warn(msg) };

async function cpuPerSet(revalidate: RevalidationMode): Promise<number> {
  const brain = createBrain(root, log, { revalidate });
  const set = () => Promise.all([...paths.map((path) => brain.read(path)), brain.list('memory')]);
  await set();
  // Past the tick within which a fresh read is not trusted, so every later read is a cached one.
  await new Promise((resolve) => setTimeout(resolve, 50));
  for (let i = 0; i < 1000; i++) await set();
  const before = process.cpuUsage();
  for (let i = 0; i < rounds; i++) await set();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / rounds;
}

console.log(`${paths.length} cached reads and one listing of ${root}, ${rounds} rounds each, process CPU per set:`);
for (const mode of ['sync', 'async', 'sync', 'async'] as const) console.log(`  ${mode.padEnd(5)} ${(await cpuPerSet(mode)).toFixed(1)} µs`);
