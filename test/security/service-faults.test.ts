import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { CONNECTIONS_CHECK_INTERVAL_MS } from '../../src/app.js';
import { buildTestApp, copyExampleBrain, tempDir } from '../helpers/app.js';
import { expectProblem, PROBLEM_TYPE, turn } from '../helpers/security-harness.js';
import { drip, listenWith, parseRawResponse, rawConnection, startLimitedServer } from '../helpers/security-server.js';
import { valueOf } from '../helpers/metrics.js';

const SHORT = { HEADERS_TIMEOUT: '700ms', REQUEST_TIMEOUT: '700ms', KEEP_ALIVE_TIMEOUT: '700ms' };
const CHECK_MS = 100;
/** Far above requestMs + checkIntervalMs: only a server that never drops the client reaches it. */
const DEADLINE_MS = 6000;

describe('slow and misbehaving clients on a real listening server', () => {
  it('bounds every state of a connection by default: 10 s for a request head, 30 s for a request, 5 s idle, checked every second', async () => {
    const { app } = await listenWith({});
    expect(app.server.headersTimeout).toBe(10_000);
    expect(app.server.requestTimeout).toBe(30_000);
    expect(app.server.timeout).toBe(30_000);
    expect(app.server.keepAliveTimeout).toBe(5_000);
    expect(app.server.maxConnections).toBe(768);
    expect(CONNECTIONS_CHECK_INTERVAL_MS).toBe(1_000);
  });

  it('drops a client that trickles its headers byte by byte, with a 408 problem', async () => {
    const { port } = await listenWith(SHORT, CHECK_MS);
    const connection = await rawConnection(port);
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Drip: ');
    const result = await drip(connection, 'a', 50, DEADLINE_MS);
    expect(result.closedByServer).toBe(true);
    const response = parseRawResponse(connection.received());
    expect(response.status).toBe(408);
    expect(response.headers).toMatch(/content-type: application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 408, code: 'CC_REQUEST_TIMEOUT' });
  });

  it('drops a client that trickles its body, with a 408 problem, and never compiles it', async () => {
    const { app, port } = await listenWith({ ...SHORT, BRAIN_ROOT: await copyExampleBrain() }, CHECK_MS);
    const connection = await rawConnection(port);
    connection.socket.write('POST /compile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{');
    const result = await drip(connection, ' ', 50, DEADLINE_MS);
    expect(result.closedByServer).toBe(true);
    expect(parseRawResponse(connection.received())).toMatchObject({ status: 408, body: { code: 'CC_REQUEST_TIMEOUT' } });
    expect(app.traces.stats().appends).toBe(0);
  });

  it('closes a connection that sends nothing once HEADERS_TIMEOUT has passed', async () => {
    const { port } = await listenWith(SHORT, CHECK_MS);
    const connection = await rawConnection(port);
    await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS))]);
    expect(connection.isClosed()).toBe(true);
  });

  it('keeps answering other callers while slow clients drip', async () => {
    const { origin, port } = await listenWith(SHORT, CHECK_MS);
    const drips = await Promise.all(Array.from({ length: 8 }, () => rawConnection(port)));
    for (const connection of drips) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    const dripping = drips.map((connection) => drip(connection, 'X-A: b\r\n', 50, DEADLINE_MS));
    for (let i = 0; i < 5; i++) expect((await request(origin).get('/healthz')).status).toBe(200);
    for (const result of await Promise.all(dripping)) expect(result.closedByServer).toBe(true);
    expect((await request(origin).get('/healthz')).status).toBe(200);
  });

  it('answers oversized headers with a 431 problem and stays up', async () => {
    const { origin, port } = await listenWith(SHORT, CHECK_MS);
    for (const headers of [`X-Big: ${'a'.repeat(20_000)}\r\n`, Array.from({ length: 1000 }, (_, i) => `X-H${i}: ${'v'.repeat(20)}\r\n`).join('')]) {
      const connection = await rawConnection(port);
      connection.socket.write(`GET /healthz HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`);
      await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS))]);
      const response = parseRawResponse(connection.received());
      expect(response.status).toBe(431);
      expect(response.headers).toMatch(/content-type: application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 431, code: 'CC_HEADERS_TOO_LARGE' });
    }
    expect((await request(origin).get('/healthz')).status).toBe(200);
  });

  it('answers bytes that are not HTTP with a 400 problem and stays up', async () => {
    const { origin, port } = await listenWith(SHORT, CHECK_MS);
    for (const garbage of ['\u0000\u0001\u0002 hello\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n']) {
      const connection = await rawConnection(port);
      connection.socket.write(garbage);
      await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS))]);
      expect(parseRawResponse(connection.received()), JSON.stringify(garbage)).toMatchObject({ status: 400, body: { code: 'CC_BAD_REQUEST' } });
    }
    expect((await request(origin).get('/healthz')).status).toBe(200);
  });

  it('answers a chunked body over BODY_LIMIT with a 413 problem', async () => {
    const { port } = await listenWith({ ...SHORT, BODY_LIMIT: '4096' }, CHECK_MS);
    const connection = await rawConnection(port);
    connection.socket.write('POST /compile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = `{"message":"${'x'.repeat(2000)}`;
    for (let i = 0; i < 4 && !connection.isClosed(); i++) connection.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    await Promise.race([once408or413(connection.received), connection.closed, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS))]);
    expect(parseRawResponse(connection.received())).toMatchObject({ status: 413, body: { code: 'CC_BODY_TOO_LARGE' } });
  });
});

async function once408or413(received: () => string): Promise<void> {
  while (!/^HTTP\/1\.1 4\d\d[\s\S]*\r\n\r\n\{[\s\S]*\}$/.test(received())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('the connection cap (MAX_CONNECTIONS) on a real listening server', () => {
  const openSockets = (app: { connections: { stats(): { open: number } } }, count: number) => async () => {
    const deadline = Date.now() + DEADLINE_MS;
    while (app.connections.stats().open !== count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(app.connections.stats().open).toBe(count);
  };

  it('admits a newcomer at the cap by closing the oldest socket that never sent a request, before any idle keep-alive one', async () => {
    const { app, origin, port } = await listenWith({ MAX_CONNECTIONS: '4', HEADERS_TIMEOUT: '30s' });
    const served = await rawConnection(port);
    served.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until(() => parseRawResponse(served.received()).status === 200);
    const oldestSilent = await rawConnection(port);
    const newerSilent = await rawConnection(port);
    await openSockets(app, 3)();

    // The fourth socket reaches the cap: the oldest silent one makes room, not the keep-alive one.
    expect((await request(origin).get('/healthz')).status).toBe(200);
    await oldestSilent.closed;
    expect(served.isClosed()).toBe(false);
    expect(newerSilent.isClosed()).toBe(false);
    expect(await valueOf(app.metrics.connectionsShed, { reason: 'evicted' })).toBeGreaterThanOrEqual(1);
  });

  it('refuses a newcomer only when every socket has a request in flight', async () => {
    const { app, port } = await listenWith({ MAX_CONNECTIONS: '2', HEADERS_TIMEOUT: '30s', REQUEST_TIMEOUT: '30s' });
    const uploads = [];
    for (let i = 0; i < 2; i++) {
      const upload = await rawConnection(port);
      upload.socket.write('POST /compile HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n');
      await until(() => upload.received().startsWith('HTTP/1.1 100 Continue'));
      uploads.push(upload);
    }
    // The second request is counted in flight a tick after its 100 Continue may reach us.
    await until(() => app.connections.stats().inFlight === 2);
    expect(app.connections.stats()).toEqual({ open: 2, inFlight: 2 });
    const newcomer = await rawConnection(port);
    await Promise.race([newcomer.closed, new Promise((resolve) => setTimeout(resolve, DEADLINE_MS))]);
    expect(newcomer.isClosed()).toBe(true);
    expect(newcomer.received()).toBe('');
    expect(uploads.map((upload) => upload.isClosed())).toEqual([false, false]);
    expect(await valueOf(app.metrics.connectionsShed, { reason: 'refused' })).toBe(1);
  });
});

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('bodies, content types, URLs and methods', () => {
  const post = async (payload: string, contentType: string | undefined, env: Record<string, string> = {}) => {
    const { app } = await buildTestApp(env);
    return app.inject({ method: 'POST', url: '/compile', payload, headers: contentType === undefined ? {} : { 'content-type': contentType } });
  };

  it.each([
    ['truncated', '{"phase":"turn",'],
    ['trailing garbage', '{"phase":"turn"} x'],
    ['two documents', '{"a":1}{"b":2}'],
    ['single quotes', "{'phase':'turn'}"],
    ['NaN', '{"limit":NaN}'],
    ['a comment', '{"phase":"turn" /* hi */}'],
    ['a \\x escape', '{"a":"\\x41"}'],
    ['__proto__', '{"phase":"turn","__proto__":{"polluted":true}}'],
    ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}'],
    ['nested __proto__', '{"preferences":{"__proto__":{"polluted":true}}}'],
  ])('answers malformed JSON (%s) with a 400 CC_INVALID_JSON problem', async (_what, payload) => {
    const body = expectProblem(await post(payload, 'application/json'), [400]);
    expect(body).toMatchObject({ code: 'CC_INVALID_JSON', errors: [{ path: '/body' }] });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('answers an empty JSON body with a 400 problem', async () => {
    expect(expectProblem(await post('', 'application/json'), [400])['code']).toBe('CC_INVALID_JSON');
  });

  it('answers JSON nested 100,000 deep, within the body limit, with a 400 problem and no crash', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expectProblem(await post(deep, 'application/json'), [400]);
    expectProblem(await post(`{"phase":"turn","evidence":${deep}}`, 'application/json'), [400]);
    const objects = `${'{"a":'.repeat(40_000)}1${'}'.repeat(40_000)}`;
    expectProblem(await post(objects, 'application/json'), [400]);
  });

  it.each([
    'text/plain',
    'text/plain; charset=utf-8',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/json-patch+json',
    'application/jsonx',
    'application/octet-stream',
    undefined,
  ])('answers a body sent as %s with a 415 problem', async (contentType) => {
    const body = expectProblem(await post(JSON.stringify(turn()), contentType), [415]);
    expect(body['code']).toBe('CC_UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers a body over BODY_LIMIT with a 413 problem', async () => {
    const body = expectProblem(await post(JSON.stringify(turn({ message: 'x'.repeat(5000) })), 'application/json', { BODY_LIMIT: '4096' }), [413]);
    expect(body['code']).toBe('CC_BODY_TOO_LARGE');
  });

  it('answers an undecodable URL with a 400 problem, not Fastify’s own JSON', async () => {
    const { app } = await buildTestApp();
    for (const url of ['/runs/%ZZ/trace', '/runs/%E0%A4%A/trace', '/ui/%', '/runs/%C0%AF/trace']) {
      expectProblem(await app.inject(url), [400, 404], url);
    }
  });

  it('answers a path parameter longer than the router allows with a 400 problem', async () => {
    const { app } = await buildTestApp();
    const body = expectProblem(await app.inject(`/runs/${'a'.repeat(600)}/trace`), [400]);
    expect(body['code']).toBe('CC_UNSAFE_ID');
  });

  it('answers every other method on every served route with a 405 problem and an Allow header', async () => {
    const { app } = await buildTestApp();
    const byUrl = new Map<string, Set<string>>();
    for (const { method, url } of app.routeTable()) byUrl.set(url, (byUrl.get(url) ?? new Set()).add(method));
    expect(byUrl.size).toBeGreaterThanOrEqual(8);
    for (const [url, methods] of byUrl) {
      if (url.includes('*')) continue;
      const path = url.replace(/:[A-Za-z]+/g, 'x');
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
        if (methods.has(method)) continue;
        const response = await app.inject({ method, url: path });
        expectProblem(response, [405], `${method} ${path}`);
        expect(response.headers['allow'], `${method} ${path}`).toContain([...methods][0]);
      }
    }
  });
});

describe('trace store faults over HTTP (tracing.test.ts covers a file in place of TRACE_DIR)', () => {
  it('notices TRACE_DIR deleted before acknowledging anything, recreates it, traces the next compile there, and says so', async () => {
    const { app, config } = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain() });
    const before = await app.inject({ method: 'POST', url: '/compile', payload: turn({ runId: 'before-delete' }) });
    expect(before.statusCode).toBe(200);
    await rm(config.traceDir, { recursive: true, force: true });
    const next = await app.inject({ method: 'POST', url: '/compile', payload: turn({ runId: 'after-delete' }) });
    expect(next.statusCode).toBe(200);
    const trace = (await app.inject('/runs/after-delete/trace')).json();
    expect(trace.events.map((event: { verified: boolean; promptSha256: string }) => [event.verified, event.promptSha256])).toEqual([[true, next.json().promptSha256]]);
    expect(trace.chain.notes).toEqual([expect.stringContaining('was replaced or removed under its writer, which noticed')]);
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks).toContainEqual({ name: 'traces', ok: true, note: expect.stringContaining('the current trace file was removed under the writer') });
    expect((await app.inject('/runs/before-delete/trace')).statusCode).toBe(404);
  });

  it('answers 503 with no prompt once the disk is full, and every run it answered 200 is readable after a restart', async () => {
    const env = { TRACE_DIR: join(await tempDir('cc-full-'), 'traces'), BRAIN_ROOT: await copyExampleBrain(), RATE_LIMIT_MAX: '100000' };
    // 256 blocks of 512 bytes: a handful of 15 KB events fit, then writes fail with EFBIG.
    const full = await startLimitedServer(env, 256);
    const answered = new Map<string, number>();
    const bodies: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async (_, caller) => {
        for (let i = caller; i < 48; i += 4) {
          const runId = `full-${i}`;
          const response = await request(`http://127.0.0.1:${full.port}`)
            .post('/compile')
            .send(turn({ runId, message: `Canary-${i} ${'x'.repeat(15_000)}` }));
          answered.set(runId, response.status);
          if (response.status !== 200) bodies.push(`${response.headers['content-type']}\n${response.text}`);
        }
      }),
    );
    const statuses = [...answered.values()];
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status === 503).length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
    for (const body of bodies) {
      expect(body).toMatch(PROBLEM_TYPE);
      expect(body).toContain('CC_TRACE_UNAVAILABLE');
      expect(body).not.toMatch(/You are Scribe|Canary|systemPrompt/);
    }
    // Readiness tells the truth either way: the store retries every second and may have rotated
    // to a fresh file with room by now (a busy machine makes that likelier), so a 200 must
    // mean a compile is traced again, and a 503 must name the trace store.
    const ready = await request(`http://127.0.0.1:${full.port}`).get('/readyz');
    if (ready.status === 503) expect(JSON.stringify(ready.body)).toMatch(/trace/);
    else expect((await request(`http://127.0.0.1:${full.port}`).post('/compile').send(turn({ runId: 'after-recovery' }))).status).toBe(ready.status);
    full.child.kill('SIGKILL');

    // Space is back: a restart on the same directory reads every acknowledged run, verified.
    const restarted = await startLimitedServer(env, 0);
    for (const [runId, status] of answered) {
      if (status !== 200) continue;
      const trace = await request(`http://127.0.0.1:${restarted.port}`).get(`/runs/${runId}/trace`);
      expect(trace.status, runId).toBe(200);
      const [event] = (trace.body as { events: Array<Record<string, unknown>> }).events;
      expect(event, runId).toMatchObject({ status: 200, outcome: 'delivered', verified: true });
    }
    const again = await request(`http://127.0.0.1:${restarted.port}`).post('/compile').send(turn({ runId: 'after-restart' }));
    expect(again.status).toBe(200);
  }, 60_000);
});
