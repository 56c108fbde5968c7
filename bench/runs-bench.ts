/**
 * Measures `GET /runs` on a large trace directory (a script, not a test): writes a trace
 * directory of persona and worker runs once (≈5 KB an event, so 18,000 events are ≈90 MB),
 * then opens it with a fresh files store, as the service does at start (its index holds the
 * newest 8 MiB of events, the older ones are evicted), and times listings: the first page,
 * a worker that has no runs (alone, and four at once), and a run found by an old request id.
 *
 *   node --import tsx bench/runs-bench.ts [dir=<os tmpdir>/cc-runs-bench] [events=18000]
 *
 * The directory is kept and reused by later runs (delete it to write a new one).
 */
import { randomBytes } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createFileTraceStore, type ListRunsQuery } from '../src/io/trace/index.js';
import { deliveredEvent, failedEvent } from '../test/helpers/trace-events.js';

const dir = process.argv[2] ?? join(tmpdir(), 'cc-runs-bench');
const total = Number(process.argv[3] ?? 18_000);
const RETENTION_MS = 7 * 86_400_000;
const log = pino({ level: 'silent' });

/** The request id of event `i`: what a log line would name. */
const requestIdOf = (i: number) => `req-${i}`;

async function bytesIn(path: string): Promise<{ files: number; bytes: number }> {
  const names = await readdir(path).catch(() => [] as string[]);
  let bytes = 0;
  for (const name of names) bytes += (await stat(join(path, name))).size;
  return { files: names.length, bytes };
}

async function write(): Promise<void> {
  // Spread over the last six hours, oldest first, as a day of traffic would have written them:
  // the store's clock follows the events, so its files are named (and sealed) by those times.
  const start = Date.now() - 6 * 3_600_000;
  const step = (6 * 3_600_000) / total;
  let clock = start;
  const store = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS, rotateBytes: 4 * 1024 * 1024, now: () => clock });
  let next = 0;
  const client = async () => {
    for (let i = next++; i < total; i = next++) {
      clock = Math.max(clock, start + i * step);
      const at = new Date(start + i * step).toISOString();
      const correlation = { requestId: requestIdOf(i), traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` };
      const persona = i % 4 < 2;
      const event =
        i % 50 === 49
          ? failedEvent(`run-${i}`, { at, ...correlation })
          : persona
            ? deliveredEvent(`run-${i}`, { at, ...correlation, subject: { kind: 'persona', id: i % 2 === 0 ? 'mars' : 'venus' }, volatile: `### live\n${`run ${i} live context line. `.repeat(100)}\n` })
            : deliveredEvent(`run-${i}`, {
                at,
                ...correlation,
                route: 'POST /compile',
                subject: { kind: 'worker', id: i % 4 === 2 ? 'scribe' : 'courier' },
                request: { worker: 'scribe', phase: 'start', role: 'reviewer', engine: 'gpt-4.1' },
                volatile: `### task\n${`run ${i} task line. `.repeat(120)}\n`,
              });
      await store.append(event, { newRun: true });
    }
  };
  await Promise.all(Array.from({ length: 32 }, client));
  await store.close();
}

async function timed<T>(what: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await what();
  return { ms: Number((performance.now() - started).toFixed(1)), value };
}

if ((await bytesIn(dir)).files === 0) await write();
const size = await bytesIn(dir);
const store = createFileTraceStore(dir, log, { retentionMs: RETENTION_MS });
const list = (query: ListRunsQuery) => store.listRuns(query);
const first = await timed(() => list({ limit: 20 }));
const none = await timed(() => list({ worker: 'nobody' }));
const noneAgain = await timed(() => list({ worker: 'nobody' }));
const fourAtOnce = await timed(() => Promise.all(['nobody', 'nobody-2', 'nobody-3', 'nobody-4'].map((worker) => list({ worker }))));
// An early event: its file was evicted from the in-memory index.
const byRequest = await timed(() => list({ requestId: requestIdOf(7) } as ListRunsQuery));
const workerPage = await timed(() => list({ worker: 'scribe', limit: 20 }));
process.stdout.write(
  `${JSON.stringify(
    {
      dir,
      files: size.files,
      megabytes: Number((size.bytes / 1e6).toFixed(1)),
      indexedEvents: store.stats().indexedEvents,
      firstPageMs: first.ms,
      workerWithoutRunsMs: none.ms,
      workerWithoutRunsAgainMs: noneAgain.ms,
      fourWorkersWithoutRunsAtOnceMs: fourAtOnce.ms,
      byOldRequestIdMs: byRequest.ms,
      byOldRequestIdFound: byRequest.value.runs.map((run) => run.runId),
      workerPageMs: workerPage.ms,
      workerPageRuns: workerPage.value.runs.length,
      answers: { workerWithoutRuns: none.value },
    },
    null,
    2,
  )}\n`,
);
await store.close();
