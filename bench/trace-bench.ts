/**
 * Measures the trace store alone (a script, not a test): concurrent appenders, each
 * appending a persona-sized event (≈8 KB of stable segments repeated by every call, ≈2.5 KB
 * of volatile live context) for a fixed time. Prints appends/s, commits (fsyncs, or
 * transactions) and process CPU per append; then, as its floor, the same clients appending
 * lines of the same mean size to the bench's durable log (`bench/durable-log.ts`: group
 * commit and a hash chain, nothing else) for as long, and the ratio of the two CPU figures
 * (the store's less what making each event cost).
 *
 *   node --import tsx bench/trace-bench.ts [seconds=5] [clients=32] [parent dir=os tmpdir]
 *   node --import tsx bench/trace-bench.ts 5 32 --postgres     (a throwaway local cluster)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createFileTraceStore, createPostgresTraceStore, type TraceStore } from '../src/io/trace/index.js';
import { createCluster, createDatabase, destroyCluster, findServerBinaries, type ClusterInfo } from '../test/helpers/postgres.js';
import { deliveredEvent } from '../test/helpers/trace-events.js';
import { createDurableLog } from './durable-log.js';

const args = process.argv.slice(2).filter((arg) => arg !== '--postgres');
const postgres = process.argv.includes('--postgres');
const seconds = Number(args[0] ?? 5);
const clients = Number(args[1] ?? 32);
const dir = await mkdtemp(join(args[2] ?? tmpdir(), 'cc-trace-bench-'));
let cluster: ClusterInfo | null = null;
if (postgres) {
  const bin = findServerBinaries();
  if (!bin) throw new Error('--postgres needs the PostgreSQL server binaries (apt-get install postgresql)');
  cluster = await createCluster(bin);
}

const stable = Array.from({ length: 8 }, (_, i) => `### block ${i}\n${'stable persona text. '.repeat(48)}\n`);
const store: TraceStore = cluster
  ? createPostgresTraceStore(await createDatabase(cluster.url), pino({ level: 'silent' }), { retentionMs: 86_400_000 })
  : createFileTraceStore(join(dir, 'traces'), pino({ level: 'silent' }), { retentionMs: 86_400_000 });
const latencies: number[] = [];
let stop = false;
let next = 0;

async function client(): Promise<void> {
  while (!stop) {
    const runId = `bench-${next++}`;
    const event = deliveredEvent(runId, { stable, volatile: `### live\n${`${runId} live context line. `.repeat(100)}\n` });
    const started = performance.now();
    await store.append(event);
    latencies.push(performance.now() - started);
  }
}

const startedAt = performance.now();
const cpuBefore = process.cpuUsage();
setTimeout(() => (stop = true), seconds * 1000);
await Promise.all(Array.from({ length: clients }, () => client()));
const elapsed = (performance.now() - startedAt) / 1000;
await store.close();
const cpu = process.cpuUsage(cpuBefore);
const stats = store.stats();
const cpuUsPerAppend = Math.round((cpu.user + cpu.system) / stats.appends);
// What making an event costs, counted in the store's figure and not in the floor's.
const making = process.cpuUsage();
for (let i = 0; i < 1000; i++) deliveredEvent(`made-${i}`, { stable, volatile: `### live\n${`made-${i} live context line. `.repeat(100)}\n` });
const madeUs = process.cpuUsage(making);
const cpuUsPerEventMade = Math.round((madeUs.user + madeUs.system) / 1000);
const floor = 'bytes' in stats ? await durableFloor(Math.round(Number(stats.bytes) / stats.appends)) : null;

/** The durable log's figures for `bytes`-byte lines, `clients` appenders, `seconds` long. */
async function durableFloor(bytes: number): Promise<{ bytes: number; appendsPerSecond: number; cpuUsPerAppend: number; meanBatch: number }> {
  const log = await createDurableLog(await mkdtemp(join(dir, 'floor-')));
  let done = false;
  const began = performance.now();
  const before = process.cpuUsage();
  setTimeout(() => (done = true), seconds * 1000);
  await Promise.all(Array.from({ length: clients }, async () => { while (!done) await log.append(bytes); }));
  const took = (performance.now() - began) / 1000;
  const used = process.cpuUsage(before);
  await log.close();
  const { appends, batches } = log.stats;
  return { bytes, appendsPerSecond: Math.round(appends / took), cpuUsPerAppend: Math.round((used.user + used.system) / appends), meanBatch: Number((appends / batches).toFixed(1)) };
}
latencies.sort((a, b) => a - b);
const percentile = (p: number) => Number(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(2));
process.stdout.write(
  `${JSON.stringify(
    {
      clients,
      seconds: Number(elapsed.toFixed(2)),
      appendsPerSecond: Math.round(stats.appends / elapsed),
      backend: stats.backend,
      commitsPerAppend: Number((stats.commits / stats.appends).toFixed(4)),
      meanBatch: Number((stats.appends / stats.batches).toFixed(1)),
      ...('bytes' in stats ? { bytesPerAppend: Math.round(Number(stats.bytes) / stats.appends) } : {}),
      appendP50Ms: percentile(0.5),
      appendP99Ms: percentile(0.99),
      // User + system CPU of the whole process (event construction included), per append.
      cpuUsPerAppend,
      cpuUsPerEventMade,
      ...(floor === null ? {} : { floor, cpuOverFloor: Number(((cpuUsPerAppend - cpuUsPerEventMade) / floor.cpuUsPerAppend).toFixed(2)) }),
      stats,
    },
    null,
    2,
  )}\n`,
);
await rm(dir, { recursive: true, force: true });
if (cluster) await destroyCluster(cluster);
