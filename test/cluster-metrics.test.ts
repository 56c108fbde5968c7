import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import request from 'supertest';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { TEST_TOKEN } from './helpers/app.js';
import { parseExposition, sampleOf, type Family } from './helpers/metrics.js';
import { startServer, type ServerProcess } from './helpers/server-process.js';

/** Polls `condition` every 10 ms; fails the test after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Two workers on port 0, shared by the tests of this file (starting them costs seconds of CPU); killed after them. */
interface TwoWorkers {
  server: ServerProcess;
  port: number;
  pids: number[];
  traces: string;
}

async function twoWorkers(): Promise<TwoWorkers> {
  // Removed with the run's temporary directory (tempDir's are removed after each test, and these outlive one).
  const traces = join(await mkdtemp(join(tmpdir(), 'cc-cluster-')), 'traces');
  // Shedding by event-loop delay off: a fresh worker's sample on a busy runner would shed the requests this test counts.
  const server = startServer({ PORT: '0', WORKERS: '2', TRACE_DIR: traces, CONTEXT_COMPILER_TOKENS: TEST_TOKEN, PRESSURE_MAX_EVENT_LOOP_DELAY: '0' });
  const port = await server.listening(60_000);
  const listeners = () => [...server.output().stdout.matchAll(/"pid":(\d+)[^\n]*"msg":"Server listening/g)].map((match) => Number(match[1]));
  await until(() => listeners().length === 2, 'both workers listening', 60_000);
  return { server, port, pids: listeners(), traces };
}

async function scrape(port: number, timeoutMs = 20_000): Promise<Map<string, Family>> {
  const answer = await request(`http://127.0.0.1:${port}`).get('/metrics').auth(TEST_TOKEN, { type: 'bearer' }).timeout({ response: timeoutMs }).expect(200);
  return parseExposition(answer.text);
}

/**
 * A scrape sent on `connections` connections at once: the first 200 that answers, the others
 * then aborted. The primary hands a connection to a worker and waits for it to take it before it
 * hands that worker another, so a stopped worker takes at most one of them and a running one
 * answers the rest. A hang bound, not a speed: every connection unanswered after 60 s fails.
 */
async function firstScrape(port: number, connections: number): Promise<Map<string, Family>> {
  const done = new AbortController();
  const signal = AbortSignal.any([done.signal, AbortSignal.timeout(60_000)]);
  try {
    return await Promise.any(
      Array.from({ length: connections }, async () => {
        const { statusCode, body } = await undiciRequest(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` }, signal });
        const text = await body.text();
        if (statusCode !== 200) throw new Error(`/metrics answered ${statusCode}: ${text}`);
        return parseExposition(text);
      }),
    );
  } finally {
    done.abort();
  }
}

/** The `worker` label values of a family's samples. */
function workersOf(families: Map<string, Family>, name: string): string[] {
  return [...new Set(families.get(name)?.samples.map((sample) => sample.labels['worker'] ?? '-') ?? [])].sort();
}

describe('WORKERS=N: one scrape for every worker', () => {
  let cluster: TwoWorkers;
  beforeAll(async () => {
    cluster = await twoWorkers();
  }, 90_000);
  afterAll(async () => {
    for (const pid of cluster?.pids ?? []) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Already gone.
      }
    }
    const { server } = cluster ?? {};
    if (server === undefined) return;
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });

  it('answers /metrics with the sum of both workers’ counters and histograms, each worker’s gauges under a worker label, behind the same token', { timeout: 60_000 }, async () => {
    const { port, pids, traces } = cluster;
    // Each request on a new connection: the primary hands connections to the workers in turn.
    const sent = 10;
    for (let i = 0; i < sent; i++) {
      await request(`http://127.0.0.1:${port}`).get('/context/mars?now=2026-11-30T17:05:00Z').auth(TEST_TOKEN, { type: 'bearer' }).expect(200);
    }
    // Both workers served some: each traced to its own files (trace-<time>-<host>-<pid>-<random>-<seq>.jsonl).
    const writers = new Set((await readdir(traces)).map((name) => /-(\d+)-[0-9a-f]{8}-\d{6}\.jsonl$/.exec(name)?.[1]).filter((pid) => pid !== undefined));
    expect([...writers].map(Number).sort()).toEqual([...pids].sort());

    await request(`http://127.0.0.1:${port}`).get('/metrics').expect(401);
    const families = await scrape(port);
    const served = { route: '/context/:persona', method: 'GET', status: '200' };
    // One worker's scrape would count only the requests it served (fewer than all, since both served).
    expect(sampleOf(families, 'cc_http_requests_total', served)).toBe(sent);
    expect(sampleOf(families, 'cc_http_request_duration_seconds_count', served)).toBe(sent);
    expect(sampleOf(families, 'cc_http_request_duration_seconds_bucket', { ...served, le: '+Inf' })).toBe(sent);
    expect(sampleOf(families, 'cc_trace_appends_total', { backend: 'files', result: 'durable' })).toBe(sent);
    expect(sampleOf(families, 'cc_compile_read_duration_seconds_count', { route: 'GET /context/mars' })).toBe(sent);
    // The refused scrape counted once, on whichever worker took it.
    expect(sampleOf(families, 'cc_http_requests_total', { route: '/metrics', method: 'GET', status: '401' })).toBe(1);
    expect(sampleOf(families, 'cc_metrics_worker_answered', { worker: '1' })).toBe(1);
    expect(sampleOf(families, 'cc_metrics_worker_answered', { worker: '2' })).toBe(1);
    // Gauges are each worker's own: a sum of heaps or of readiness would mislead.
    expect(workersOf(families, 'nodejs_heap_size_used_bytes')).toEqual(['1', '2']);
    expect(workersOf(families, 'process_start_time_seconds')).toEqual(['1', '2']);
    expect(sampleOf(families, 'cc_ready', { check: 'brain', worker: '1' })).toBe(1);
    expect(sampleOf(families, 'cc_ready', { check: 'brain', worker: '2' })).toBe(1);
    // Counters carry no worker label: summed.
    expect(workersOf(families, 'cc_http_requests_total')).toEqual(['-']);
  });

  it('leaves out a worker that does not answer in time, says which, and still answers the scrape', { timeout: 90_000 }, async () => {
    const { port, pids } = cluster;
    // A stopped process answers nothing, however long it is given.
    process.kill(pids[0]!, 'SIGSTOP');
    // A connection the primary hands to the stopped worker is never answered: the running worker answers another.
    const families = await firstScrape(port, 3);
    const answered = families.get('cc_metrics_worker_answered')!.samples.map((sample) => sample.value).sort();
    expect(answered).toEqual([0, 1]);
    expect(workersOf(families, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
    process.kill(pids[0]!, 'SIGCONT');
  });
});
