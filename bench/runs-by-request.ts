/**
 * Measures `GET /runs?requestId=` when 2,000 runs match, on both trace backends (a script,
 * not a test): the same events written to a trace directory and to a throwaway PostgreSQL
 * cluster — 2,000 runs holding an event of one request id (each run then continued by
 * another request), followed by 12,000 other runs, so that on files the matching runs sit in
 * evicted parts of the index, as after a day of traffic or a restart. Each store is then
 * opened fresh, as the service opens it at start, warmed by one listing, and the query
 * timed seven times on each in turn (the medians, and their ratio, which should be within 2×).
 * The files store uses the service's cache set: its first query by request id reads the
 * evicted files (`firstQueryMs`) and remembers their lines (`trace.evictedLines`), the next
 * ones read none.
 *
 *   node --import tsx bench/runs-by-request.ts [matching=2000] [others=12000]
 *
 * or, from another script, `await runsByRequest({ matching, others })`. Needs the PostgreSQL
 * server binaries (/usr/lib/postgresql/<version>/bin); without them, or with `SKIP_PG=1`
 * (`postgres: false`), it measures the files backend alone.
 */
import * as fsp from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { createCaches } from '../src/caches.js';
import { createFileTraceStore, createPostgresTraceStore, type TraceFs, type TraceStore } from '../src/io/trace/index.js';
import { deliveredEvent } from '../test/helpers/trace-events.js';
import { createCluster, createDatabase, destroyCluster, findServerBinaries, type ClusterInfo } from './postgres-cluster.js';

const RETENTION_MS = 7 * 86_400_000;
const REQUEST_ID = 'req-shared-0001';
const log = pino({ level: 'silent' });

export interface RunsByRequestOptions {
  /** Runs holding an event of the shared request id (2,000). */
  matching?: number;
  /** Other runs written after them (12,000). */
  others?: number;
  /** Measure PostgreSQL too, when its server binaries are found (true). */
  postgres?: boolean;
}

/** One store's figure: the median of seven queries, and what the page held. */
export interface QueryFigure {
  ms: number;
  runs: number;
  more: boolean;
}

export interface RunsByRequestResult {
  matchingRuns: number;
  events: number;
  files: QueryFigure & {
    filesOpenedPerQuery: number;
    indexedEvents: number;
    indexBytes: number;
    firstListingMs: number;
    /** The first query by request id: it reads the evicted files and fills `trace.evictedLines`. */
    firstQueryMs: number;
    /** What the `trace.evictedLines` area holds after the queries. */
    evictedLinesBytes: number;
  };
  /** Null when PostgreSQL was not measured. */
  postgres: QueryFigure | null;
  /** files ms / PostgreSQL ms; null without PostgreSQL. */
  ratio: number | null;
}

/** Every event, oldest first: a matching run's event of the shared request and its next one, then the other runs. */
function* events(start: number, matching: number, others: number) {
  const total = 2 * matching + others;
  let n = 0;
  const at = () => new Date(start + n++ * 100).toISOString();
  for (let i = 0; i < matching; i++) yield { event: deliveredEvent(`run-${i}`, { at: at(), requestId: REQUEST_ID }), newRun: true };
  for (let i = 0; i < matching; i++) yield { event: deliveredEvent(`run-${i}`, { at: at(), requestId: `req-next-${i}` }), newRun: false };
  for (let i = 0; i < others; i++) yield { event: deliveredEvent(`other-${i}`, { at: at(), requestId: `req-other-${i}` }), newRun: true };
  if (n !== total) throw new Error('miscounted');
}

async function fill(store: TraceStore, start: number, matching: number, others: number): Promise<void> {
  const queue = events(start, matching, others);
  const client = async () => {
    for (let next = queue.next(); !next.done; next = queue.next()) await store.append(next.value.event, { newRun: next.value.newRun });
  };
  await Promise.all(Array.from({ length: 32 }, client));
}

const QUERY = { requestId: REQUEST_ID, limit: 20 };

/** One query on each store in turn, seven rounds (the load of the machine falls on both alike): each store's median. */
async function medians(stores: TraceStore[]): Promise<QueryFigure[]> {
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

/** Writes the events to a fresh trace directory (and PostgreSQL cluster), measures, and removes them (`keepDir` keeps the directory). */
export async function runsByRequest({ matching = 2000, others = 12_000, postgres = true }: RunsByRequestOptions = {}, keepDir = false): Promise<RunsByRequestResult & { dir?: string }> {
  const start = Date.now() - 3_600_000;
  const dir = await mkdtemp(join(tmpdir(), 'cc-runs-by-request-'));
  let cluster: ClusterInfo | null = null;
  try {
    const writer = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS, rotateBytes: 4 * 1024 * 1024 });
    await fill(writer, start, matching, others);
    await writer.close();
    // Two hours on, as the next day's process finds them: every file sealed (older than rotateMs + 60 s), the events within retention.
    let opened = 0;
    const fs: TraceFs = { ...fsp, open: ((...args: Parameters<typeof fsp.open>) => (opened++, fsp.open(...args))) as TraceFs['open'] };
    // The service's cache set, as `buildApp` makes it.
    const caches = createCaches();
    const files = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS, now: () => Date.now() + 2 * 3_600_000, fs, memo: caches.trace });
    const warmStarted = performance.now();
    await files.listRuns({ limit: 1 });
    const firstListingMs = Number((performance.now() - warmStarted).toFixed(1));
    const firstStarted = performance.now();
    await files.listRuns(QUERY);
    const firstQueryMs = Number((performance.now() - firstStarted).toFixed(1));
    const stores: TraceStore[] = [files];
    const bin = postgres ? findServerBinaries() : null;
    if (bin) {
      cluster = await createCluster(bin);
      const url = await createDatabase(cluster.url, 'cc_bench');
      const writerPg = createPostgresTraceStore(url, log, { retentionMs: RETENTION_MS });
      await fill(writerPg, start, matching, others);
      await writerPg.close();
      stores.push(createPostgresTraceStore(url, log, { retentionMs: RETENTION_MS }));
    }
    const openedBefore = opened;
    const [onFiles, onPostgres = null] = await medians(stores);
    // Eight queries: the warm one and seven timed.
    const filesOpenedPerQuery = (opened - openedBefore) / 8;
    const stats = files.stats();
    const evictedLinesBytes = caches.stats().find((area) => area.area === 'trace.evictedLines')!.bytes;
    for (const store of stores) await store.close();
    return {
      matchingRuns: matching,
      events: 2 * matching + others,
      files: { ...onFiles!, filesOpenedPerQuery, indexedEvents: stats.indexedEvents, indexBytes: stats.indexBytes, firstListingMs, firstQueryMs, evictedLinesBytes },
      postgres: onPostgres,
      ratio: onPostgres ? Number((onFiles!.ms / onPostgres.ms).toFixed(2)) : null,
      ...(keepDir ? { dir } : {}),
    };
  } finally {
    if (cluster) await destroyCluster(cluster);
    if (!keepDir) await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const result = await runsByRequest(
    { matching: Number(process.argv[2] ?? 2000), others: Number(process.argv[3] ?? 12_000), postgres: !process.env.SKIP_PG },
    Boolean(process.env.KEEP_DIR),
  );
  process.stdout.write(`${JSON.stringify({ ...result, postgres: result.postgres ?? 'skipped: no PostgreSQL server binaries, or SKIP_PG' }, null, 2)}\n`);
}
