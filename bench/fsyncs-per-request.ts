/**
 * `node --import tsx bench/fsyncs-per-request.ts [requests] [clients]`: starts the app
 * on port 0 with a temp trace dir and the example brain, sends `requests` POST /compile over
 * HTTP from `clients` concurrent keep-alive connections, and prints what the trace store did
 * for them: fsyncs per request and the batch sizes group commit reached. A measurement
 * for docs/traces.md, not a test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { loadConfig } from '../src/config.js';
import type { FileTraceStoreStats } from '../src/io/trace/index.js';
import { driveCompiles, newPool, turnPayload } from './compile-load.js';

const requests = Number(process.argv[2] ?? 5000);
const clients = Number(process.argv[3] ?? 32);

const dir = await mkdtemp(join(tmpdir(), 'cc-fsyncs-'));
const config = loadConfig({ TRACE_DIR: join(dir, 'traces'), RATE_LIMIT_MAX: '100000000', LOG_LEVEL: 'warn' });
const app = await buildApp(config, { logger: createLogger(config) });
try {
  const origin = await app.listen({ port: 0, host: '127.0.0.1' });
  const pool = newPool(origin, clients);
  await driveCompiles(pool, { concurrency: clients, total: clients * 2, payload: (i) => turnPayload(`warm-${i}`) }).done;
  const before = app.traces.stats() as FileTraceStoreStats;
  const began = performance.now();
  const load = driveCompiles(pool, { concurrency: clients, total: requests, payload: (i) => turnPayload(`run-${i}`) });
  await load.done;
  const seconds = (performance.now() - began) / 1000;
  const after = app.traces.stats() as FileTraceStoreStats;
  await pool.close();
  const ok = load.outcomes.filter((outcome) => outcome.status === 200).length;
  const appends = after.appends - before.appends;
  const fsyncs = after.fsyncs - before.fsyncs;
  const batches = after.batches - before.batches;
  process.stdout.write(
    `${JSON.stringify(
      {
        requests,
        clients,
        ok,
        appends,
        fsyncs,
        fsyncsPerRequest: Number((fsyncs / appends).toFixed(4)),
        meanBatch: Number((appends / batches).toFixed(1)),
        largestBatch: after.largestBatch,
        requestsPerSecond: Math.round(requests / seconds),
        bytesPerRequest: Math.round((after.bytes - before.bytes) / appends),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await app.close();
  await rm(dir, { recursive: true, force: true });
}
