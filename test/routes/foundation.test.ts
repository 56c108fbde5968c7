import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, OTHER_TOKEN, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { parseExposition, sampleOf } from '../helpers/metrics.js';
import { StatusSchema } from '../../schemas/health.js';

const PROBLEM = /^application\/problem\+json/;

describe('probes', () => {
  it('answers /healthz and /readyz on the example brain', async () => {
    const { app } = await buildTestApp();
    const health = await app.inject('/healthz');
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json().status).toBe('ready');
  });

  it('is not ready when the brain root is missing, and says which check failed', async () => {
    const missing = join(await tempDir(), 'no-such-brain');
    const { app } = await buildTestApp({ BRAIN_ROOT: missing });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['content-type']).toMatch(PROBLEM);
    expect(ready.json().detail).toContain('brain');
    expect(ready.json().detail).toContain('BRAIN_ROOT');
  });

  it('GET /status: readiness with its checks, the compiles and those that failed by code, and the calls that caught up after a fallback', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    // Authenticated as /runs is: it tells how the service is doing, which a stranger need not know.
    expect((await app.inject('/status')).statusCode).toBe(401);
    const before = StatusSchema.parse((await app.inject({ url: '/status', headers: auth })).json());
    expect(before).toMatchObject({ status: 'ready', compiles: { total: 0, failed: 0, failureRate: null, byCode: {} }, fallbacks: { total: 0, static: 0, stale: 0 } });
    expect(before.checks.map((check) => check.name)).toEqual((await app.inject('/readyz')).json().checks.map((check: { name: string }) => check.name));
    expect((await app.inject({ url: '/context/mars?now=2026-11-30T09:00:00Z', headers: auth })).statusCode).toBe(200);
    const failed = await app.inject({ method: 'POST', url: '/compile', headers: auth, payload: { phase: 'start', surface: 'queued-task', worker: 'scribe', task: 'x'.repeat(9000) } });
    expect(failed.json().code).toBe('CC_BUDGET_EXCEEDED');
    expect((await app.inject({ url: '/context/mars/refresh?runId=call-1&baseline=static&now=2026-11-30T09:00:00Z', headers: auth })).statusCode).toBe(200);
    await app.inject({ url: '/runs', headers: auth });
    const after = StatusSchema.parse((await app.inject({ url: '/status', headers: auth })).json());
    expect(after).toMatchObject({ status: 'ready', compiles: { total: 3, failed: 1, failureRate: 0.3333, byCode: { CC_BUDGET_EXCEEDED: 1 } }, fallbacks: { total: 1, static: 1, stale: 0 } });
  });

  it('GET /status says not-ready, with a 200 and the failing check, when /readyz is a 503', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: join(await tempDir(), 'no-such-brain') });
    const status = await app.inject('/status');
    expect(status.statusCode).toBe(200);
    expect(status.json().status).toBe('not-ready');
    expect(status.json().checks).toContainEqual(expect.objectContaining({ name: 'brain', ok: false }));
  });

  it('is not ready when the trace dir cannot be created', async () => {
    // A regular file where a directory should be defeats root too (tests run as root in CI).
    const parent = await tempDir();
    await writeFile(join(parent, 'blocker'), 'not a directory');
    const { app } = await buildTestApp({ TRACE_DIR: join(parent, 'blocker', 'traces') });
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().detail).toContain('TRACE_DIR');
  });
});

describe('authentication', () => {
  it('rejects a request without a token with a 401 problem when tokens are set', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: `${TEST_TOKEN},${OTHER_TOKEN}` });
    const response = await app.inject('/metrics');
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(PROBLEM);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(response.json()).toMatchObject({ status: 401, code: 'CC_UNAUTHORIZED' });
  });

  it('rejects a wrong token and accepts every configured one', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: `${TEST_TOKEN},${OTHER_TOKEN}` });
    const wrong = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TEST_TOKEN}x` } });
    expect(wrong.statusCode).toBe(401);
    for (const token of [TEST_TOKEN, OTHER_TOKEN]) {
      const ok = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } });
      expect(ok.statusCode).toBe(200);
    }
  });

  it('keeps the probes open without a token', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    expect((await app.inject('/readyz')).statusCode).toBe(200);
  });

  it('answers 401 rather than 404 for unknown routes, so routes are not revealed', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect((await app.inject('/no/such/route')).statusCode).toBe(401);
  });

  it('never logs the Authorization header or the token', async () => {
    const harness = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN, LOG_LEVEL: 'trace' });
    await harness.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    await harness.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TEST_TOKEN}x` } });
    expect(harness.rawLogs()).not.toContain(TEST_TOKEN);
    expect(harness.logs.some((line) => line['route'] === '/metrics' && line['status'] === 200)).toBe(true);
  });
});

describe('problems', () => {
  it('answers an unknown route with a 404 problem', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/nope');
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(PROBLEM);
    expect(response.json()).toMatchObject({ status: 404, code: 'CC_ROUTE_NOT_FOUND', instance: '/nope' });
    expect(response.json().type).toMatch(/^urn:context-compiler:problem:/);
  });

  it('answers a wrong method with a 405 problem and an Allow header', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject({ method: 'DELETE', url: '/healthz' });
    expect(response.statusCode).toBe(405);
    expect(response.headers['allow']).toContain('GET');
    expect(response.json().code).toBe('CC_METHOD_NOT_ALLOWED');
  });

  it('rate limits by client with a 429 problem and Retry-After', async () => {
    const { app } = await buildTestApp({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '1 minute' });
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await app.inject('/metrics');
      statuses.push(last.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.headers['retry-after']).toMatch(/^\d+$/);
    expect(last!.headers['content-type']).toMatch(PROBLEM);
    expect(last!.json().code).toBe('CC_RATE_LIMITED');
  });

  it('keys the rate limit by token, so two tokens have separate allowances', async () => {
    const { app } = await buildTestApp({ RATE_LIMIT_MAX: '2', CONTEXT_COMPILER_TOKENS: `${TEST_TOKEN},${OTHER_TOKEN}` });
    const call = (token: string) => app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } });
    expect((await call(TEST_TOKEN)).statusCode).toBe(200);
    expect((await call(TEST_TOKEN)).statusCode).toBe(200);
    expect((await call(TEST_TOKEN)).statusCode).toBe(429);
    expect((await call(OTHER_TOKEN)).statusCode).toBe(200);
  });

  it('rate limits the 404 handler too', async () => {
    const { app } = await buildTestApp({ RATE_LIMIT_MAX: '2' });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.inject(`/missing-${i}`)).statusCode);
    expect(statuses).toEqual([404, 404, 429]);
  });

  it('never rate limits the probes', async () => {
    const { app } = await buildTestApp({ RATE_LIMIT_MAX: '1' });
    for (let i = 0; i < 3; i++) expect((await app.inject('/healthz')).statusCode).toBe(200);
  });
});

describe('metrics', () => {
  it('counts requests and records latency by route and status', async () => {
    const { app } = await buildTestApp();
    await app.inject('/healthz');
    await app.inject('/nope');
    const families = parseExposition((await app.inject('/metrics')).body);
    expect(sampleOf(families, 'cc_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
    expect(sampleOf(families, 'cc_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(sampleOf(families, 'cc_http_request_duration_seconds_bucket', { method: 'GET', route: '/healthz', status: '200', le: '+Inf' })).toBe(1);
    expect(families.get('cc_trace_write_duration_seconds')?.type).toBe('histogram');
  });
});
