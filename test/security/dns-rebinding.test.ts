import { describe, expect, it } from 'vitest';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';

/**
 * Issue 27: tokenless loopback mode (the default `npm start`) accepted any Host and Origin,
 * so a page on a name rebound to 127.0.0.1 read /runs and the delivered prompts, and ran
 * POST /compile. Forged Host and Origin headers through app.inject.
 */

const compileBody = { phase: 'start', surface: 'direct', worker: 'scribe' };

describe('DNS rebinding (no tokens: loopback names and same-origin pages only)', () => {
  it('refuses a foreign Host on every route with a 403 problem naming the header', async () => {
    const { app } = await buildTestApp();
    for (const [method, url] of [
      ['GET', '/runs'],
      ['GET', '/context/mars'],
      ['POST', '/compile'],
      ['GET', '/runs/run-1/trace'],
      ['GET', '/healthz'],
      ['GET', '/ui/'],
    ] as const) {
      for (const host of ['evil.example', 'evil.example:8080', 'localhost.evil.example', '127.0.0.1.nip.io:8080', 'localhost:8080:80', '[::1']) {
        const response = await app.inject({ method, url, headers: { host }, ...(method === 'POST' ? { payload: compileBody } : {}) });
        expect(response.statusCode, `${method} ${url} Host ${host}`).toBe(403);
        expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(response.headers['x-run-id']).toBeUndefined();
        const problem = response.json();
        expect(problem).toMatchObject({ status: 403, code: 'CC_HOST_NOT_ALLOWED', errors: [{ path: '/headers/host' }] });
        expect(problem.detail).toContain('ALLOWED_HOSTS');
      }
    }
  });

  it('answers loopback names with any port, and a same-origin or absent Origin', async () => {
    const { app } = await buildTestApp();
    for (const host of ['localhost', 'localhost:8080', 'LOCALHOST:1', '127.0.0.1:8080', '127.0.0.1', '[::1]:8080', '[::1]']) {
      expect((await app.inject({ url: '/runs', headers: { host } })).statusCode, host).toBe(200);
    }
    for (const [host, origin] of [
      ['localhost:8080', 'http://localhost:8080'],
      ['127.0.0.1:9000', 'http://127.0.0.1:9000'],
      ['localhost', 'http://localhost'],
      ['localhost:443', 'https://localhost'],
      ['[::1]:8080', 'http://[::1]:8080'],
    ] as const) {
      const response = await app.inject({ method: 'POST', url: '/compile', headers: { host, origin }, payload: compileBody });
      expect(response.statusCode, `${host} ${origin}`).toBe(200);
    }
  });

  it('refuses a cross-origin page, an opaque origin and a malformed one, naming the Origin header, and compiles nothing', async () => {
    const { app } = await buildTestApp();
    for (const origin of ['http://evil.example', 'http://localhost:8081', 'http://127.0.0.1:8080', 'null', 'file://', 'http://localhost:8080/path', 'ftp://localhost:8080']) {
      const response = await app.inject({ method: 'POST', url: '/compile', headers: { host: 'localhost:8080', origin }, payload: compileBody });
      expect(response.statusCode, origin).toBe(403);
      expect(response.json()).toMatchObject({ code: 'CC_ORIGIN_NOT_ALLOWED', errors: [{ path: '/headers/origin' }] });
      expect(response.headers['x-run-id'], origin).toBeUndefined();
    }
    expect((await app.inject('/runs')).json().runs).toEqual([]);
  });

  it('serves the names ALLOWED_HOSTS adds, and still only same-origin pages on them', async () => {
    const { app } = await buildTestApp({ ALLOWED_HOSTS: 'context.lan' });
    expect((await app.inject({ url: '/runs', headers: { host: 'context.lan:8080' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/runs', headers: { host: 'localhost:8080' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/runs', headers: { host: 'other.lan' } })).statusCode).toBe(403);
    expect((await app.inject({ url: '/runs', headers: { host: 'context.lan', origin: 'http://context.lan' } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/runs', headers: { host: 'context.lan', origin: 'http://evil.example' } })).statusCode).toBe(403);
  });

  it('with tokens, leaves Host and Origin alone unless ALLOWED_HOSTS is set, and then checks the Host only', async () => {
    const authorization = `Bearer ${TEST_TOKEN}`;
    const open = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const headers = { authorization, host: 'context.example.com', origin: 'http://elsewhere.example' };
    expect((await open.app.inject({ url: '/runs', headers })).statusCode).toBe(200);
    const listed = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN, ALLOWED_HOSTS: 'context.example.com' });
    expect((await listed.app.inject({ url: '/runs', headers })).statusCode).toBe(200);
    const refused = await listed.app.inject({ url: '/runs', headers: { ...headers, host: 'evil.example' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('CC_HOST_NOT_ALLOWED');
  });
});
