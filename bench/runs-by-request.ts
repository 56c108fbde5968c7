/**
 * Measures `GET /runs?requestId=` when 2,000 runs match, on both trace backends (a script,
 * not a test): the same events written to a trace directory and to a throwaway PostgreSQL
 * cluster — 2,000 runs holding an event of one request id (each run then continued by
 * another request), followed by 12,000 other runs, so that on files the matching runs sit in
 * evicted parts of the index, as after a day of traffic or a restart. Each store is then
 * opened fresh, as the service opens it at start, warmed by one listing, and the query
 * timed seven times on each in turn (the medians, and their ratio, which should be within 2×).
 *
 *   node --import tsx bench/runs-by-request.ts [matching=2000] [others=12000]
 *
 * Needs the PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin); without them it
 * measures the files backend alone.
 */
import * as fsp from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createFileTraceStore, createPostgresTraceStore, type TraceFs, type TraceStore } from '../src/io/trace/index.js';
import { deliveredEvent } from '../test/helpers/trace-events.js';
import { createCluster, createDatabase, destroyCluster, findServerBinaries, type ClusterInfo } from './postgres-cluster.js';

const matching = Number(process.argv[2] ?? 2000);
const others = Number(process.argv[3] ?? 12_000);
const RETENTION_MS = 7 * 86_400_000;
const REQUEST_ID = 'req-shared-0001';
const log = pino({ level: 'silent' });

/** Every event, oldest first: a matching run's event of the shared request and its next one, then the other runs. */
function* events(start: number) {
  const total = 2 * matching + others;
  let n = 0;
  const at = () => new Date(start + n++ * 100).toISOString();
  for (let i = 0; i < matching; i++) yield { event: deliveredEvent(`run-${i}`, { at: at(), requestId: REQUEST_ID }), newRun: true };
  for (let i = 0; i < matching; i++) yield { event: deliveredEvent(`run-${i}`, { at: at(), requestId: `req-next-${i}` }), newRun: false };
  for (let i = 0; i < others; i++) yield { event: deliveredEvent(`other-${i}`, { at: at(), requestId: `req-other-${i}` }), newRun: true };
  if (n !== total) throw new Error('miscounted');
}

async function fill(store: TraceStore, start: number): Promise<void> {
  const queue = events(start);
  const client = async () => {
    for (let next = queue.next(); !next.done; next = queue.next()) await store.append(next.value.event, { newRun: next.value.newRun });
  };
  await Promise.all(Array.from({ length: 32 }, client));
}

const QUERY = { requestId: REQUEST_ID, limit: 20 };

/** One query on each store in turn, seven rounds (the load of the machine falls on both alike): each store's median. */
async function medians(stores: TraceStore[]): Promise<Array<{ ms: number; runs: number; more: boolean }>> {
  const warm = await Promise.all(stores.map((store) => store.listRuns(QUERY)));
  const times: number[][] = stores.map(() => []);
  for (let round = 0; round < 7; round++) {
    for (const [i, store] of stores.entries()) {
      const started = performance.now();
      await store.listRuns(QUERY);
      times[i]!.push(performance.now() - started);
    }
  }
  return stores.map((_, i) => ({ ms: Number(times[i]!.sort((a, b) => a - b)[3]!.toFixed(1)), runs: warm[i]!.runs.length, more: warm[i]!.nextCursor !== null }));
}

const start = Date.now() - 3_600_000;
const dir = await mkdtemp(join(tmpdir(), 'cc-runs-by-request-'));
let cluster: ClusterInfo | null = null;
try {
  const writer = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS, rotateBytes: 4 * 1024 * 1024 });
  await fill(writer, start);
  await writer.close();
  // Two hours on, as the next day's process finds them: every file sealed (older than rotateMs + 60 s), the events within retention.
  let opened = 0;
  const fs: TraceFs = { ...fsp, open: ((...args: Parameters<typeof fsp.open>) => (opened++, fsp.open(...args))) as TraceFs['open'] };
  const files = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS, now: () => Date.now() + 2 * 3_600_000, fs });
  const warmStarted = performance.now();
  await files.listRuns({ limit: 1 });
  const indexMs = Number((performance.now() - warmStarted).toFixed(1));
  const stores: TraceStore[] = [files];
  const bin = process.env.SKIP_PG ? null : findServerBinaries();
  if (bin) {
    cluster = await createCluster(bin);
    const url = await createDatabase(cluster.url, 'cc_bench');
    const writerPg = createPostgresTraceStore(url, log, { retentionMs: RETENTION_MS });
    await fill(writerPg, start);
    await writerPg.close();
    stores.push(createPostgresTraceStore(url, log, { retentionMs: RETENTION_MS }));
  }
  const openedBefore = opened;
  const [onFiles, onPostgres = null] = await medians(stores);
  // Eight queries: the warm one and seven timed.
  const filesOpenedPerQuery = (opened - openedBefore) / 8;
  const stats = files.stats();
  for (const store of stores) await store.close();
  process.stdout.write(
    `${JSON.stringify(
      {
        matchingRuns: matching,
        events: 2 * matching + others,
        files: { ...onFiles!, filesOpenedPerQuery, indexedEvents: stats.indexedEvents, indexBytes: stats.indexBytes, firstListingMs: indexMs },
        postgres: onPostgres ?? 'skipped: no PostgreSQL server binaries',
        filesOverPostgres: onPostgres ? Number((onFiles!.ms / onPostgres.ms).toFixed(2)) : null,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  if (cluster) await destroyCluster(cluster);
  if (process.env.KEEP_DIR) process.stdout.write(`kept ${dir}\n`); else await rm(dir, { recursive: true, force: true });
}
