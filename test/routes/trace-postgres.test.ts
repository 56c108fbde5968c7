import { createHash } from 'node:crypto';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { driveCompiles, newPool, turnPayload, type CompileOutcome } from '../../bench/compile-load.js';
import { createCluster, createDatabase, destroyCluster, dropDatabase, startCluster, stopCluster, type ClusterInfo } from '../helpers/postgres.js';
import { startServer, untilReady, type ServerProcess } from '../helpers/server-process.js';
import { postgresCluster } from '../helpers/trace-backends.js';
import { HEAVY_TEST_MS, LOAD_BOUND_MS } from '../helpers/bounds.js';

/**
 * The service on the PostgreSQL trace backend, as an operator runs it: replicas sharing one
 * database, a replica killed under load, the database stopped and started under load.
 */

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const cluster = postgresCluster();
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface TraceEvent {
  status: number;
  outcome: string;
  promptSha256?: string;
  inputSha256?: string | null;
  systemPrompt: string | null;
  verified: boolean | null;
  error?: { code: string };
}

async function database(clusterUrl: string): Promise<string> {
  const url = await createDatabase(clusterUrl);
  cleanups.push(() => dropDatabase(clusterUrl, url));
  return url;
}

function server(env: Record<string, string>): ServerProcess {
  const started = startServer(env);
  cleanups.push(async () => {
    if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill('SIGKILL');
    await started.exited;
  });
  return started;
}

/**
 * Load shedding by event-loop delay is off: these tests count every answer as traced or as the
 * database's 503, and a replica sharing two busy cores with the load it is given and another
 * test file would otherwise also shed some (503 CC_OVERLOADED), which is not what they test.
 */
async function serviceEnv(url: string): Promise<Record<string, string>> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    BRAIN_ROOT: await copyExampleBrain(),
    TRACE_DATABASE_URL: url,
    RATE_LIMIT_MAX: '1000000',
    PRESSURE_MAX_EVENT_LOOP_DELAY: '0',
    LOG_LEVEL: 'info',
  };
}

/** Reads every run's trace through `pool` (8 at a time): what is missing, and what does not match its answer. */
async function checkTraces(pool: Pool, outcomes: CompileOutcome[]) {
  const missing: string[] = [];
  const wrong: Array<{ outcome: CompileOutcome; events: TraceEvent[] }> = [];
  const queue = [...outcomes];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let outcome = queue.shift(); outcome; outcome = queue.shift()) {
        const response = await pool.request({ method: 'GET', path: `/runs/${outcome.runId}/trace` });
        if (response.statusCode !== 200) {
          await response.body.dump();
          missing.push(outcome.runId);
          continue;
        }
        const events = ((await response.body.json()) as { events: TraceEvent[] }).events;
        const [event] = events;
        const good =
          events.length === 1 &&
          event !== undefined &&
          (outcome.status === 200
            ? event.outcome === 'delivered' &&
              event.verified === true &&
              event.promptSha256 === outcome.promptSha256 &&
              event.inputSha256 === outcome.inputSha256 &&
              sha256(event.systemPrompt ?? '') === outcome.promptSha256
            : event.outcome === 'failed' && event.status === outcome.status && event.error?.code === outcome.code);
        if (!good) wrong.push({ outcome, events });
      }
    }),
  );
  return { missing, wrong };
}

const title = (name: string) => (cluster.skipped ? `${name} (SKIPPED: ${cluster.skipped})` : name);

describe.skipIf(cluster.skipped !== null)(title('the service on PostgreSQL traces'), () => {
  it('answers, traces and lists through the same routes as on files, and /readyz checks the database', async () => {
    const url = await database(cluster.url!);
    const { app } = await buildTestApp({ TRACE_DATABASE_URL: url, BRAIN_ROOT: await copyExampleBrain() });
    expect(app.traces.backend).toBe('postgres');
    const ready = await app.inject('/readyz');
    expect(ready.json()).toMatchObject({ status: 'ready', checks: expect.arrayContaining([{ name: 'traces', ok: true }]) });
    const compiled = await app.inject({ method: 'POST', url: '/compile', payload: turnPayload('pg-run-1') });
    expect(compiled.statusCode).toBe(200);
    const failed = await app.inject({ method: 'POST', url: '/compile', payload: turnPayload('pg-run-2', { worker: 'ghost' }) });
    expect(failed.statusCode).toBe(404);
    const trace = await app.inject('/runs/pg-run-1/trace?verify=sources');
    expect(trace.statusCode).toBe(200);
    const [event] = trace.json().events;
    expect(event).toMatchObject({ verified: true, chain: 'linked', promptSha256: compiled.json().promptSha256 });
    expect(event.sources.every((source: { changed: boolean }) => source.changed === false)).toBe(true);
    expect((await app.inject('/runs?outcome=failed')).json().runs.map((run: { runId: string }) => run.runId)).toEqual(['pg-run-2']);
    expect((await app.inject('/runs/no-such-run/trace')).statusCode).toBe(404);
    const metrics = (await app.inject('/metrics')).body;
    expect(metrics).toMatch(/^cc_trace_commits_total [1-9]\d*$/m);
    // Both deliveries (the compile and the failed one) went through group commit on this backend.
    expect(metrics).toMatch(/^cc_trace_batch_events_sum\{backend="postgres"\} 2$/m);
    expect(metrics).toMatch(/^cc_trace_batch_duration_seconds_count\{backend="postgres",result="ok"\} [12]$/m);
    expect(metrics).toMatch(/^cc_trace_appends_total\{backend="postgres",result="durable"\} 2$/m);
  });

  it('two replicas on one database: a SIGKILL of one under concurrent load loses no acknowledged run, and the other reads all of them', async () => {
    const env = await serviceEnv(await database(cluster.url!));
    const first = server(env);
    const second = server(env);
    const [firstPort, secondPort] = await Promise.all([first.listening(), second.listening()]);
    const toFirst = newPool(`http://127.0.0.1:${firstPort}`, 32);
    const toSecond = newPool(`http://127.0.0.1:${secondPort}`, 16);
    cleanups.push(async () => {
      await toFirst.destroy();
      await toSecond.close();
    });
    // Every 10th request names a worker that does not exist: failures must survive too.
    const payload = (prefix: string) => (i: number) => turnPayload(`${prefix}-${i}`, i % 10 === 9 ? { worker: 'ghost' } : {});
    const onFirst = driveCompiles(toFirst, { concurrency: 32, total: 2000, payload: payload('a') });
    const onSecond = driveCompiles(toSecond, { concurrency: 16, total: 300, payload: payload('b') });
    const deadline = Date.now() + LOAD_BOUND_MS;
    while (onFirst.outcomes.length < 300 && Date.now() < deadline && first.child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 2));
    const inFlight = onFirst.inFlight();
    first.child.kill('SIGKILL');
    onFirst.stop();
    // The exit is reported when node has reaped the child, which on a busy machine can come after the drive settles.
    await Promise.all([onFirst.done, onSecond.done, first.exited]);
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(inFlight).toBeGreaterThan(0);

    const answered = [...onFirst.outcomes, ...onSecond.outcomes].filter((outcome) => outcome.status !== 0);
    expect(answered.every((outcome) => outcome.status === 200 || outcome.status === 404)).toBe(true);
    expect(onFirst.outcomes.filter((outcome) => outcome.status === 200).length).toBeGreaterThan(150);
    expect(onSecond.outcomes.filter((outcome) => outcome.status === 200).length).toBeGreaterThan(200);
    const { missing, wrong } = await checkTraces(toSecond, answered);
    expect(missing).toEqual([]);
    expect(wrong).toEqual([]);
    // The survivor lists the dead replica's runs, and keeps tracing.
    const listed = await toSecond.request({ method: 'GET', path: '/runs?limit=100' });
    expect(((await listed.body.json()) as { runs: unknown[] }).runs).toHaveLength(100);
    const after = await toSecond.request({ method: 'POST', path: '/compile', headers: { 'content-type': 'application/json' }, body: JSON.stringify(turnPayload('after-kill')) });
    expect(after.statusCode).toBe(200);
    await after.body.dump();
  }, HEAVY_TEST_MS);
});

describe.skipIf(cluster.skipped !== null)(title('the database stopped under load, and started again'), () => {
  let own: ClusterInfo | null = null;
  afterEach(async () => {
    if (own) await destroyCluster(own);
    own = null;
  });

  it('answers 503 and no untraced 200 while it is down, says why in /readyz, and recovers by itself when it is back', async () => {
    // Its own cluster: stopping the shared one would fail every other PostgreSQL suite running beside this one.
    own = await createCluster(cluster.bin!, { fsync: false });
    const env = await serviceEnv(await createDatabase(own.url));
    const service = server(env);
    const port = await service.listening();
    const origin = `http://127.0.0.1:${port}`;
    const pool = newPool(origin, 16);
    const probes = newPool(origin, 2);
    cleanups.push(async () => {
      await pool.close();
      await probes.close();
    });
    const ready = async () => {
      const response = await probes.request({ method: 'GET', path: '/readyz' });
      return { status: response.statusCode, body: (await response.body.json()) as { detail?: string } };
    };
    // Ready once warm: each persona compiled once after it listens.
    await untilReady(port);
    expect((await ready()).status).toBe(200);

    const load = driveCompiles(pool, { concurrency: 16, total: 1_000_000, payload: (i) => turnPayload(`outage-${i}`) });
    const count = (status: number) => load.outcomes.filter((outcome) => outcome.status === status).length;
    const until = async (condition: () => boolean | Promise<boolean>, what: string, ms = LOAD_BOUND_MS) => {
      const deadline = Date.now() + ms;
      while (!(await condition())) {
        if (Date.now() > deadline) {
          const statuses: Record<number, number> = {};
          for (const outcome of load.outcomes) statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
          const errors = load.outcomes.filter((outcome) => outcome.status === 0).map((outcome) => outcome.error);
          const { stdout, stderr } = service.output();
          const exit = `exit ${service.child.exitCode}, signal ${service.child.signalCode}`;
          throw new Error(
            `timed out waiting for ${what}: answers by status ${JSON.stringify(statuses)}, errors ${JSON.stringify(errors.slice(0, 3))};\n` +
              `the service (${exit}) last wrote to stderr:\n${stderr.slice(-2000)}\nand to stdout:\n${stdout.slice(-2000)}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    await until(() => count(200) >= 150, '150 answers before the outage');
    await stopCluster(own, 'fast');
    const beforeDown = load.outcomes.length;
    await until(() => load.outcomes.slice(beforeDown).filter((outcome) => outcome.status === 503).length >= 50, '503s while the database is down');
    const down = await ready();
    expect(down.status).toBe(503);
    expect(down.body.detail).toMatch(/traces: trace database is unavailable \(TRACE_DATABASE_URL\)/);
    expect(JSON.stringify(down.body)).not.toContain(own.password);

    await startCluster(own);
    await until(async () => (await ready()).status === 200, '/readyz 200 after the database is back');
    const afterUp = count(200);
    await until(() => count(200) >= afterUp + 100, '100 answers after recovery');
    load.stop();
    await load.done;

    const answers = load.outcomes;
    expect(answers.every((outcome) => outcome.status === 200 || outcome.status === 503)).toBe(true);
    const unavailable = answers.filter((outcome) => outcome.status === 503);
    expect(unavailable.length).toBeGreaterThanOrEqual(50);
    expect(new Set(unavailable.map((outcome) => outcome.code))).toEqual(new Set(['CC_TRACE_UNAVAILABLE']));

    // Every 200 was traced before it was sent, and reads back verified.
    const delivered = answers.filter((outcome) => outcome.status === 200);
    const reader = newPool(origin, 8);
    cleanups.push(() => reader.close());
    const { missing, wrong } = await checkTraces(reader, delivered);
    expect(missing).toEqual([]);
    expect(wrong).toEqual([]);
    // A 503 delivered nothing; if its commit was in doubt when the database went away, its
    // event may exist, but never reads back as a verified delivery.
    for (const outcome of unavailable.slice(0, 200)) {
      const response = await reader.request({ method: 'GET', path: `/runs/${outcome.runId}/trace` });
      if (response.statusCode === 404) {
        await response.body.dump();
        continue;
      }
      const events = ((await response.body.json()) as { events: TraceEvent[] }).events;
      expect(events.every((event) => event.verified !== true), outcome.runId).toBe(true);
    }
    const logs = service.output().stdout;
    expect(logs).toContain('trace store cannot make events durable');
    expect(logs).toContain('trace store recovered');
    expect(logs).not.toContain(own.password);
  }, HEAVY_TEST_MS);
});

describe('the service on PostgreSQL traces, in process, without a reachable database', () => {
  it('starts, answers /readyz 503 with the reason, compiles and trace reads 503 with no prompt, and logs no address or password', async () => {
    // Port 1 on loopback: nothing listens there, on any machine; no server binaries needed.
    const { app, rawLogs } = await buildTestApp({ TRACE_DATABASE_URL: 'postgres://traces:not-a-real-password@127.0.0.1:1/traces' });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toContain('traces: trace database is unavailable (TRACE_DATABASE_URL): connection refused (ECONNREFUSED)');
    const compiled = await app.inject({ method: 'POST', url: '/compile', payload: turnPayload('pg-down-1') });
    expect(compiled.statusCode).toBe(503);
    expect(compiled.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    expect(compiled.body).not.toContain('systemPrompt');
    const listed = await app.inject('/runs');
    const traced = await app.inject('/runs/pg-down-1/trace');
    expect([listed.statusCode, traced.statusCode]).toEqual([503, 503]);
    expect(traced.json()).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', detail: 'Traces cannot be read right now.' });
    expect(rawLogs()).toContain('trace store cannot make events durable');
    for (const leaked of ['not-a-real-password', '127.0.0.1:1']) {
      expect(compiled.body + ready.body + listed.body + traced.body + rawLogs(), leaked).not.toContain(leaked);
    }
  });
});
