import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import request from 'supertest';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir, TEST_TOKEN } from './helpers/app.js';
import { turnPayload } from '../bench/compile-load.js';
import { drip, parseRawResponses, rawConnection } from './helpers/security-server.js';
import { SERVER_ENTRY, spawnCommand, startServer, untilReady, type ServerProcess } from './helpers/server-process.js';

/**
 * Polls `condition` every 10 ms, for what no process writes a line about (a socket's bytes);
 * fails the test after `timeoutMs`: a hang bound, not a speed, so generous for a busy machine.
 */
async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Resolves once `condition` holds on the process's output, checked at each chunk the process
 * writes: no clock, so a busy machine only makes it later, never fails it. Rejects, with the
 * output, if the process closes first; a process that neither writes it nor exits is a hang,
 * the test's own timeout's to catch.
 */
function untilOutput(watched: Pick<ServerProcess, 'child' | 'output'>, condition: () => boolean, what: string): Promise<void> {
  const { child } = watched;
  return new Promise((resolve, reject) => {
    const stop = () => {
      child.stdout.off('data', check);
      child.stderr.off('data', check);
      child.off('close', closed);
    };
    const check = () => {
      if (!condition()) return false;
      stop();
      resolve();
      return true;
    };
    const closed = () => {
      if (check()) return;
      stop();
      reject(new Error(`the process closed (exit ${String(child.exitCode ?? child.signalCode)}) before ${what}: ${JSON.stringify(watched.output())}`));
    };
    // The process's own listeners, added at spawn, have appended each chunk to output() before these run.
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.on('close', closed);
    if (!check() && child.stdout.closed && child.stderr.closed && (child.exitCode !== null || child.signalCode !== null)) closed();
  });
}

function stopAfterTest(server: ServerProcess): void {
  onTestFinished(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
}

/** The shutdown log line is written once the server is refusing new requests. */
const shuttingDown = (server: ServerProcess) => () => /"msg":"shutting down"/.test(server.output().stdout);

describe('server process', () => {
  it('exits non-zero naming PORT when PORT is not a port', async () => {
    const server = startServer({ PORT: 'notaport' });
    expect(await server.exited).not.toBe(0);
    expect(server.output().stderr).toContain('PORT');
  });

  it('refuses to bind a public address without tokens', async () => {
    const server = startServer({ HOST: '0.0.0.0', PORT: '0' });
    expect(await server.exited).not.toBe(0);
    expect(server.output().stderr).toContain('CONTEXT_COMPILER_TOKENS');
  });

  it('exits 78 naming the tokens file when it holds only comments, instead of starting without authentication', async () => {
    const file = join(await tempDir(), 'tokens');
    await writeFile(file, '# voice server token goes here\n\n# chat host\n');
    const server = startServer({ PORT: '0', CONTEXT_COMPILER_TOKENS_FILE: file });
    expect(await server.exited).toBe(78);
    expect(server.output().stderr).toContain(`CONTEXT_COMPILER_TOKENS_FILE: ${file} holds no token`);
  });

  it('refuses to start (exit 78, naming it) when TRACE_SIGNING_KEY_FILE holds no key', async () => {
    const file = join(await tempDir(), 'trace-key');
    await writeFile(file, '\n');
    const server = startServer({ PORT: '0', TRACE_SIGNING_KEY_FILE: file });
    expect(await server.exited).toBe(78);
    expect(server.output().stderr).toContain(`TRACE_SIGNING_KEY_FILE: ${file} holds no key`);
  });

  // One start for what every start does (each costs about 1.5 s of CPU): the start-up line, JSON
  // lines on a pipe, the probes, and a clean exit on SIGTERM.
  it('states its effective configuration in one start-up line without a secret, logs JSON lines to a pipe, serves the probes and exits 0 on SIGTERM', async () => {
    const dir = await tempDir();
    const other = 'second-token-0123456789';
    const signingKey = 'k'.repeat(40);
    const server = startServer({ PORT: '0', TRACE_DIR: join(dir, 'traces'), CONTEXT_COMPILER_TOKENS: `${TEST_TOKEN},${other}`, TRACE_SIGNING_KEY: signingKey, RATE_LIMIT_MAX: '900', PRESSURE_MAX_EVENT_LOOP_DELAY: '250ms' });
    stopAfterTest(server);
    const port = await server.listening();
    expect(server.output().stdout.split('\n')[0]).toMatch(/^\{"level":30,/);
    await untilOutput(server, () => /"msg":"started"/.test(server.output().stdout), 'the start-up line');
    const lines = server.output().stdout.split('\n').filter((line) => line.includes('"msg":"started"'));
    expect(lines).toHaveLength(1);
    const started = JSON.parse(lines[0]!);
    expect(started).toMatchObject({
      level: 30,
      brainRoot: expect.stringMatching(/examples\/brain$/),
      brainRevalidate: 'auto',
      traces: { backend: 'files', dir: join(dir, 'traces'), retentionMs: 7 * 86_400_000, signed: true },
      auth: 'on',
      tokenCount: 2,
      limits: { rateLimitMax: 900, rateLimitWindowMs: 60_000, bodyLimit: 262_144, promptLimitChars: 48_000, maxConnections: 768, listenBacklog: 4096 },
      timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000, shutdownGraceMs: 10_000 },
      pressure: { maxEventLoopDelayMs: 250, maxEventLoopUtilization: 0, maxHeapUsedBytes: 'auto', sampleIntervalMs: 1000 },
    });
    await request(`http://127.0.0.1:${port}`).get('/healthz').expect(200);
    // Ready once warm: each persona compiled once.
    await untilReady(port);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    for (const secret of [TEST_TOKEN, other, signingKey]) expect(server.output().stdout).not.toContain(secret);
  });

  it('names the trace database by host and name only: never its user, password or parameters', async () => {
    // Nothing listens on port 1: the service starts anyway and connects when it first traces.
    const url = 'postgres://cc_writer:s3cret-pa55word@127.0.0.1:1/cc_traces?sslmode=disable&password=also-s3cret';
    const server = startServer({ PORT: '0', TRACE_DATABASE_URL: url });
    stopAfterTest(server);
    await server.listening();
    await untilOutput(server, () => /"msg":"started"/.test(server.output().stdout), 'the start-up line');
    const started = JSON.parse(server.output().stdout.split('\n').find((line) => line.includes('"msg":"started"'))!);
    expect(started).toMatchObject({ traces: { backend: 'postgres', databaseHost: '127.0.0.1', databasePort: 1, database: 'cc_traces' }, auth: 'off', tokenCount: 0 });
    for (const secret of ['cc_writer', 's3cret', 'sslmode', url]) expect(server.output().stdout).not.toContain(secret);
  });

  it('logs pretty lines in a terminal (JSON lines on a pipe: the start-up line test above)', async () => {
    // `script` gives the server a pseudo-terminal for stdout, as a developer's shell does; the
    // server runs in the terminal's own session, so it is stopped by the pid it wrote.
    const pidFile = join(await tempDir(), 'pid');
    const command = `echo $$ > "${pidFile}" && exec "${process.execPath}" "${SERVER_ENTRY}"`;
    const run = spawnCommand('script', ['-qfec', `sh -c '${command}'`, '/dev/null'], { PORT: '0', TRACE_DIR: join(await tempDir(), 'traces') });
    let pid = 0;
    onTestFinished(async () => {
      if (pid > 0 && run.child.exitCode === null) process.kill(pid, 'SIGTERM');
      else run.child.kill('SIGKILL');
      await run.exited;
    });
    await untilOutput(run, () => /started/.test(run.output().stdout), 'the start-up line in the terminal');
    pid = Number(await readFile(pidFile, 'utf8'));
    const text = run.output().stdout;
    expect(text).toMatch(/INFO.*started/);
    expect(text).not.toContain('"level":30');
  });
});

describe('WORKERS=N', () => {
  /** The pids of the processes that logged they listen: the workers. */
  const listeners = (server: ServerProcess) => [...server.output().stdout.matchAll(/"pid":(\d+)[^\n]*"msg":"Server listening/g)].map((match) => Number(match[1]));
  /** The pids of the workers the primary forked, in order, listening or not. */
  const forked = (server: ServerProcess) => [...server.output().stdout.matchAll(/"worker":(\d+)[^\n]*"msg":"forked a worker"/g)].map((match) => Number(match[1]));

  // Three worker starts, one after another: every wait is on a line the primary or a worker writes,
  // so the timeout only catches a hang, and is generous because a worker start on a busy machine can
  // take tens of seconds. A worker replaced is part of the same run (each start costs about 3 s of
  // CPU; a process of its own for it cost three starts more).
  it('serves one port from two worker processes, each tracing to its own files, replaces a worker that dies while the other serves, and exits 0 on SIGTERM once the live ones have closed', { timeout: 300_000 }, async () => {
    const traces = join(await tempDir(), 'traces');
    const server = startServer({ PORT: '0', WORKERS: '2', TRACE_DIR: traces, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    stopAfterTest(server);
    const port = await server.listening();
    await untilOutput(server, () => listeners(server).length === 2, 'both workers listening');
    const workers = listeners(server);
    expect(new Set(workers).size).toBe(2);
    expect(workers).not.toContain(server.child.pid);
    expect(forked(server).sort()).toEqual([...workers].sort());
    // Each request on a new connection: the primary hands connections to the workers in turn.
    const runIds: string[] = [];
    for (let i = 0; i < 8; i++) {
      const answer = await request(`http://127.0.0.1:${port}`).get('/context/mars?now=2026-11-30T17:05:00Z').auth(TEST_TOKEN, { type: 'bearer' }).expect(200);
      runIds.push(answer.body.runId as string);
    }
    // trace-<time>-<host>-<pid>-<random>-<seq>.jsonl: one writer per worker.
    const writers = new Set((await readdir(traces)).map((name) => /-(\d+)-[0-9a-f]{8}-\d{6}\.jsonl$/.exec(name)?.[1]).filter((pid) => pid !== undefined));
    expect([...writers].map(Number).sort()).toEqual([...workers].sort());
    // Any worker answers for a run another traced.
    for (const runId of runIds.slice(0, 4)) {
      await request(`http://127.0.0.1:${port}`).get(`/runs/${runId}/trace`).auth(TEST_TOKEN, { type: 'bearer' }).expect(200);
    }
    // A worker that dies is replaced, and the other keeps serving meanwhile.
    process.kill(workers[0]!, 'SIGKILL');
    await untilOutput(server, () => /"msg":"worker exited; starting another"/.test(server.output().stdout), 'the primary to notice');
    for (let i = 0; i < 4; i++) await request(`http://127.0.0.1:${port}`).get('/healthz').expect(200);
    await untilOutput(server, () => listeners(server).length === 3, 'a new worker listening');
    // The third worker forked is the replacement now listening.
    expect(forked(server).slice(2)).toEqual([listeners(server).at(-1)]);
    // What counts at SIGTERM is how the live workers close, not the one that died before.
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output().stdout.match(/"msg":"shutting down"/g)).toHaveLength(2);
  });

  // Two worker starts, then four cut short: the timeout only catches a hang.
  it('regression: exits 1, not 0, when workers keep dying right after they start and the others then close cleanly', { timeout: 420_000 }, async () => {
    const server = startServer({ PORT: '0', WORKERS: '2', TRACE_DIR: join(await tempDir(), 'traces'), CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    stopAfterTest(server);
    await server.listening();
    await untilOutput(server, () => listeners(server).length === 2, 'both workers listening');
    // Five exits in a row, each within seconds of its start: the newest worker is killed once it
    // listens, then each replacement as soon as it is forked (before it listens, or just after on
    // a quick machine: either counts). A start cut short costs a fraction of the 1.5-2 s of CPU a
    // whole one does.
    process.kill(listeners(server).at(-1)!, 'SIGKILL');
    for (let killed = 1; killed < 5; killed++) {
      await untilOutput(server, () => forked(server).length === 2 + killed, 'a replacement worker forked');
      process.kill(forked(server).at(-1)!, 'SIGKILL');
    }
    // The surviving first worker closes cleanly (exit 0); the primary still reports the failure.
    expect(await server.exited).toBe(1);
    expect(server.output().stdout).toContain('workers keep exiting right after they start; stopping');
  });
});

describe('shutdown with a slow client (issue 12)', () => {
  it('exits 0 at once on SIGTERM while a client trickles its headers, instead of waiting out SHUTDOWN_GRACE', { timeout: 120_000 }, async () => {
    const server = startServer({ PORT: '0', TRACE_DIR: join(await tempDir(), 'traces'), CONTEXT_COMPILER_TOKENS: TEST_TOKEN, SHUTDOWN_GRACE: '15s' });
    stopAfterTest(server);
    const port = await server.listening();
    const connection = await rawConnection(port);
    const head = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Drip: ';
    connection.socket.write(head);
    const dripping = drip(connection, 'a', 100, 30_000);
    await until(() => connection.socket.bytesWritten >= head.length + 3, 'a few dripped bytes');

    const started = performance.now();
    server.child.kill('SIGTERM');
    const code = await server.exited;
    const ms = performance.now() - started;
    console.info(`SIGTERM with a client trickling its headers: exit ${code} after ${Math.round(ms)} ms (SHUTDOWN_GRACE 15 s)`);
    expect(code).toBe(0);
    // It did not wait out SHUTDOWN_GRACE for the trickling client (a grace spent is logged, as in the test below).
    expect(server.output().stdout).not.toMatch(/"msg":"closed connections still in flight after SHUTDOWN_GRACE"/);
    expect((await dripping).closedByServer).toBe(true);
  });

  it('finishes and traces a compile in flight at SIGTERM, and answers a request that arrives afterwards with a 503 problem and Retry-After', { timeout: 120_000 }, async () => {
    const env = { PORT: '0', TRACE_DIR: join(await tempDir(), 'traces'), CONTEXT_COMPILER_TOKENS: TEST_TOKEN, SHUTDOWN_GRACE: '15s' };
    const server = startServer(env);
    stopAfterTest(server);
    const port = await server.listening();
    const runId = 'in-flight-at-sigterm';
    const body = JSON.stringify(turnPayload(runId));
    const connection = await rawConnection(port);
    // "100 Continue" proves the server has the request (headers read, handler started) before SIGTERM;
    // the body, sent only after the server says it is shutting down, holds it in flight meanwhile.
    connection.socket.write(
      `POST /compile HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await until(() => connection.received().startsWith('HTTP/1.1 100 Continue'), '100 Continue');
    server.child.kill('SIGTERM');
    await untilOutput(server, shuttingDown(server), 'the shutdown log line');
    // The body completes the compile; a second request pipelined behind it arrives during shutdown.
    connection.socket.write(`${body}GET /context/venus HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_TOKEN}\r\n\r\n`);
    await until(() => parseRawResponses(connection.received()).length === 3, 'both answers');
    const [, compiled, late] = parseRawResponses(connection.received());
    expect(await server.exited).toBe(0);

    expect(compiled!.status).toBe(200);
    expect(JSON.parse(compiled!.body)).toMatchObject({ runId });
    expect(late!.status).toBe(503);
    expect(late!.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(Number(late!.headers['retry-after'])).toBeGreaterThan(0);
    expect(late!.headers['connection']).toBe('close');
    expect(JSON.parse(late!.body)).toMatchObject({ status: 503, code: 'CC_SHUTTING_DOWN', instance: '/context/venus' });
    await connection.closed;

    const again = startServer(env);
    stopAfterTest(again);
    const trace = await request(`http://127.0.0.1:${await again.listening()}`).get(`/runs/${runId}/trace`).auth(TEST_TOKEN, { type: 'bearer' }).expect(200);
    const { events } = trace.body as { events: Array<{ outcome: string; verified: boolean | null; promptSha256: string }> };
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ outcome: 'delivered', verified: true, promptSha256: JSON.parse(compiled!.body).promptSha256 });
  });

  it('closes a request still uploading when SHUTDOWN_GRACE ends and exits 0: that request was never answered, so nothing answered is untraced', { timeout: 120_000 }, async () => {
    // Load shedding off and the warm-up done first: a busy runner would otherwise shed the upload with a 503 at once,
    // and the server would have nothing in flight to wait for.
    const server = startServer({ PORT: '0', TRACE_DIR: join(await tempDir(), 'traces'), CONTEXT_COMPILER_TOKENS: TEST_TOKEN, SHUTDOWN_GRACE: '1s', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' });
    stopAfterTest(server);
    const port = await server.listening();
    await untilReady(port);
    const connection = await rawConnection(port);
    connection.socket.write(
      `POST /compile HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n{',
    );
    await until(() => connection.received().startsWith('HTTP/1.1 100 Continue'), '100 Continue');
    const started = performance.now();
    server.child.kill('SIGTERM');
    const code = await server.exited;
    const ms = performance.now() - started;
    console.info(`SIGTERM with an upload that never ends: exit ${code} after ${Math.round(ms)} ms (SHUTDOWN_GRACE 1 s)`);
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(900);
    await connection.closed;
    expect(server.output().stdout).toMatch(/"msg":"closed connections still in flight after SHUTDOWN_GRACE"/);
  });
});
