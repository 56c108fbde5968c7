import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';
import { runHealthcheck } from './run-healthcheck.js';

const rawServers: Server[] = [];

afterEach(async () => {
  for (const server of rawServers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listeningApp(env: Record<string, string> = {}): Promise<number> {
  const { app } = await buildTestApp(env);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

/** A server that accepts connections and requests but never answers. */
async function silentServer(): Promise<number> {
  const server = createServer(() => {});
  rawServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('docker/healthcheck.mjs', () => {
  it('exits 0 against a healthy server, without a token even when tokens are required', async () => {
    const port = await listeningApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const run = await runHealthcheck({ HEALTHCHECK_URL: `http://127.0.0.1:${port}/healthz` });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('healthy');
  });

  it('probes /healthz on PORT over loopback when the server binds the wildcard, as in the image', async () => {
    const port = await listeningApp();
    const run = await runHealthcheck({ HOST: '0.0.0.0', PORT: String(port) });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`http://127.0.0.1:${port}/healthz`);
  });

  it('exits 1 when nothing listens', async () => {
    const port = await closedPort();
    const run = await runHealthcheck({ HEALTHCHECK_URL: `http://127.0.0.1:${port}/healthz` });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/unhealthy: .*ECONNREFUSED/);
  });

  it('exits 1 when the server does not answer within HEALTHCHECK_TIMEOUT_MS', async () => {
    const port = await silentServer();
    const run = await runHealthcheck({ HEALTHCHECK_URL: `http://127.0.0.1:${port}/healthz`, HEALTHCHECK_TIMEOUT_MS: '300' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no answer within 300 ms');
  });

  it('exits 1 on a non-200 answer', async () => {
    const port = await listeningApp();
    const run = await runHealthcheck({ HEALTHCHECK_URL: `http://127.0.0.1:${port}/no-such-route` });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('answered 404');
  });

  it('exits 1 on a 200 that is not the liveness answer', async () => {
    const port = await listeningApp();
    const run = await runHealthcheck({ HEALTHCHECK_URL: `http://127.0.0.1:${port}/openapi.json` });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('answered 200 without {"status":"ok"}');
  });

  it('exits 1 on a URL it cannot use, instead of crashing', async () => {
    const run = await runHealthcheck({ HEALTHCHECK_URL: 'not a url' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('unhealthy');
  });
});
