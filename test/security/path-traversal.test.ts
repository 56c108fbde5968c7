import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/app.js';
import { hostileBrain, NOW, readAllTraces, readTree, turn } from '../helpers/security-harness.js';
import { ID_TARGETS, RAW_URL_FORMS, TRAVERSAL_VALUES } from '../helpers/security-routes.js';
import { exactRequest, listenWith, type PlainResponse } from '../helpers/security-server.js';

const PROBLEM = /^application\/problem\+json/;

function expectRejected(response: PlainResponse, label: string): void {
  expect([400, 404], `${label}: ${response.status} ${response.body.slice(0, 200)}`).toContain(response.status);
  expect(response.headers['content-type'], label).toMatch(PROBLEM);
  const body = JSON.parse(response.body) as { status: number; code: string };
  expect(body.status, label).toBe(response.status);
  expect(body.code, label).toMatch(/^CC_(UNSAFE_ID|VALIDATION_FAILED|BAD_REQUEST|NOT_FOUND|ROUTE_NOT_FOUND)$/);
}

/** A call link's unusable topicId: the generic context, a coded warning, nothing read for it. */
function expectConnected(response: PlainResponse, label: string): void {
  expect(response.status, `${label}: ${response.body.slice(0, 200)}`).toBe(200);
  const body = JSON.parse(response.body) as { topic: unknown; warnings: string[]; sources: Array<{ path: string }> };
  expect(body.topic, label).toBeNull();
  expect(body.warnings.filter((warning) => warning.startsWith('topic-unsafe: ')), label).toHaveLength(1);
  expect(body.sources.filter((source) => source.path.startsWith('topics/')), label).toEqual([]);
}

describe('path traversal matrix: every id-taking parameter against a hostile brain', () => {
  it('rejects every unsafe value with a 400/404 problem (a call link connects without it), and the secret outside the brain appears nowhere', async () => {
    const hostile = await hostileBrain();
    const { app, port, rawLogs } = await listenWith({ BRAIN_ROOT: hostile.root, RATE_LIMIT_MAX: '1000000', LOG_LEVEL: 'debug' });
    const everything: string[] = [];
    let requests = 0;
    let connected = 0;
    const expectAnswer = (target: (typeof ID_TARGETS)[number], response: PlainResponse, label: string) => {
      if (target.connects) {
        expectConnected(response, label);
        connected++;
      } else expectRejected(response, label);
    };
    for (const target of ID_TARGETS) {
      for (const value of TRAVERSAL_VALUES) {
        // An empty path segment is no parameter at all (`/ui/` is the viewer's page).
        if (value === '' && target.rawPath && !target.connects) continue;
        const { method, path, body } = target.request(value);
        const response = await exactRequest(port, method, path, body);
        expectAnswer(target, response, `${target.label} = ${JSON.stringify(value.slice(0, 40))}`);
        everything.push(JSON.stringify(response.headers), response.body);
        requests++;
      }
      if (!target.rawPath) continue;
      for (const encoded of RAW_URL_FORMS) {
        const response = await exactRequest(port, 'GET', target.rawPath(encoded));
        expectAnswer(target, response, `${target.label} raw ${encoded.slice(0, 40)}`);
        everything.push(JSON.stringify(response.headers), response.body);
        requests++;
      }
    }
    expect(requests).toBeGreaterThan(600);
    expect(connected).toBeGreaterThan(100);
    // Only the call links that connected were compiled, so only they were traced.
    expect(app.traces.stats().appends).toBe(connected);
    expect(await readAllTraces(app)).not.toContain(hostile.secret);
    expect(everything.join('\n')).not.toContain(hostile.secret);
    expect(rawLogs()).not.toContain(hostile.secret);
  }, 60_000);

  it('refuses every link that leaves the brain: file, directory, chain, relative; compiles around optional ones; leaks nothing', async () => {
    const hostile = await hostileBrain();
    const { app, config, rawLogs } = await buildTestApp({ BRAIN_ROOT: hostile.root, LOG_LEVEL: 'trace' });
    const seen: string[] = [];
    const send = async (options: InjectOptions) => {
      const response = await app.inject(options);
      seen.push(JSON.stringify(response.headers), response.body);
      expect(response.statusCode, `${JSON.stringify(options)}: ${response.body.slice(0, 200)}`).toBeLessThan(500);
      return response;
    };
    const compile = (overrides: Record<string, unknown>) => send({ method: 'POST', url: '/compile', payload: turn(overrides) });

    // Mandatory: an identity behind any kind of outward link is refused, never read.
    for (const worker of ['evil', 'evil-dir', 'chain', 'relative']) {
      const response = await compile({ worker });
      expect([404, 422], worker).toContain(response.statusCode);
      expect(response.headers['content-type']).toMatch(PROBLEM);
    }
    // Optional: a linked purpose, memory note and heartbeat degrade to a warning.
    const scribe = await compile({ channelId: 'evil' });
    expect(scribe.statusCode).toBe(200);
    const warnings = scribe.json().warnings.join('\n');
    expect(warnings).toMatch(/channels\/evil\/purpose\.md/);
    expect(warnings).toMatch(/leak\.md/);
    expect(scribe.json().sources.map((source: { path: string }) => source.path)).not.toContain('workers/scribe/memory/leak.md');

    // Persona routes read SOUL.md, personas/mars.md, heartbeat and topics: all links here.
    for (const url of ['/context/mars', '/context/venus', '/context/mars?topicId=evil', `/context/venus?topicId=evil&now=${NOW}`]) {
      const response = await send({ url });
      expect(response.statusCode, url).toBe(200);
      const read = response.json().sources.map((source: { path: string }) => source.path);
      for (const linked of ['SOUL.md', 'personas/mars.md', 'topics/evil.md', 'memory/heartbeat-state.json']) expect(read, url).not.toContain(linked);
      expect(response.json().warnings.join('\n'), url).toMatch(/heartbeat-state\.json.*outside the brain root/);
    }
    const topic = await send({ url: '/context/topic/evil' });
    expect([404, 422]).toContain(topic.statusCode);

    const traces = await readAllTraces(app);
    expect(traces).toContain('"runId"');
    for (const text of [seen.join('\n'), traces, await readTree(config.traceDir), rawLogs()]) {
      expect(text).not.toContain(hostile.secret);
      expect(text).not.toContain('You are the leaked worker');
      expect(text).not.toContain('Linked directory');
    }
  });

  it('replaces an unsafe X-Request-Id instead of logging or echoing it', async () => {
    const { app, rawLogs } = await buildTestApp({ LOG_LEVEL: 'debug' });
    for (const id of ['../../etc/passwd', 'a\u0000b', 'x'.repeat(200), 'line\nbreak']) {
      const response = await app.inject({ url: '/nope', headers: { 'x-request-id': encodeURI(id) } });
      expect(response.json().requestId).not.toBe(encodeURI(id));
      expect(response.json().requestId).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(rawLogs()).not.toContain('etc/passwd');
  });
});
