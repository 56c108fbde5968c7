import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { openapiYaml } from '../../src/http/openapi.js';
import { CATALOG } from '../../src/errors.js';
import { OPENAPI_PATH } from '../../routes/meta.js';
import { buildTestApp, copyExampleBrain, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { faultyFs } from '../helpers/faulty-fs.js';
import { openapiValidator, readOpenapi } from '../helpers/openapi.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const NOW = '2026-11-30T17:05:00Z';

/** `/runs/{runId}/trace` in OpenAPI is `/runs/:runId/trace` in Fastify. */
function toFastifyPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

const turn = (overrides: Record<string, unknown> = {}) => ({
  phase: 'turn',
  surface: 'chat',
  worker: 'scribe',
  channelId: 'general',
  message: 'Tighten the sign-off, please.',
  now: NOW,
  ...overrides,
});

interface Case {
  /** The documented path template the request is answered by. */
  path: string;
  request: InjectOptions;
  status: number;
}

/** Sends each request and checks its status, and its body against what openapi.yaml documents for that operation, status and media type. */
async function expectDocumented(app: FastifyInstance, cases: Case[]): Promise<Set<string>> {
  const validator = openapiValidator(await readOpenapi());
  const seen = new Set<string>();
  for (const { path, request, status } of cases) {
    const method = request.method ?? 'GET';
    const label = `${method} ${String(request.url)} → ${status}`;
    const response = await app.inject(request);
    expect(response.statusCode, `${label}: ${response.body.slice(0, 300)}`).toBe(status);
    const type = String(response.headers['content-type'] ?? '');
    const json = /json/.test(type);
    const body = response.body === '' ? '' : json ? response.json() : response.body;
    expect(validator.errors(method, path, status, type || 'application/json', body), label).toBeNull();
    if (json && status >= 400) seen.add((body as { code: string }).code);
    // Every documented header the answer must carry is there.
    for (const header of Object.keys((validator.response(method, path, status)?.['headers'] as object | undefined) ?? {})) {
      if (header === 'Retry-After' || (header === 'Server-Timing' && status !== 200)) continue;
      // Refused before any compile: there is no run.
      if (header === 'x-run-id' && json && (body as { code?: string }).code === 'CC_OVERLOADED') continue;
      expect(response.headers[header.toLowerCase()], `${label}: ${header}`).toBeDefined();
    }
  }
  return seen;
}

describe('openapi.yaml', () => {
  it('describes exactly the routes the app serves, each with a unique operationId', async () => {
    const { app } = await buildTestApp();
    const document = await readOpenapi();
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([key]) => METHODS.includes(key))
        .map(([method, operation]) => ({ route: `${method.toUpperCase()} ${toFastifyPath(path)}`, operationId: operation['operationId'] })),
    );
    const served = app
      .routeTable()
      .map(({ method, url }) => `${method} ${url}`)
      .sort();
    expect(served).toEqual(operations.map((operation) => operation.route).sort());
    for (const { route, operationId } of operations) expect(operationId, route).toMatch(/^[a-z][A-Za-z]+$/);
    expect(new Set(operations.map((operation) => operation.operationId)).size).toBe(operations.length);
  });

  it('is exactly what the route schemas generate (run `npm run openapi` after changing a schema)', async () => {
    const { app } = await buildTestApp();
    expect(await readFile(OPENAPI_PATH, 'utf8')).toBe(openapiYaml(app));
  });

  it('is served as JSON at /openapi.json, the same document', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/openapi.json');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(parse(await readFile(OPENAPI_PATH, 'utf8')));
  });

  it('documents the problem catalogue: every code and type of src/errors.ts', async () => {
    const { components } = await readOpenapi();
    const problem = components.schemas['Problem'] as { properties: Record<string, { enum: string[]; description: string }> };
    expect(problem.properties['code']!.enum).toEqual(Object.keys(CATALOG));
    for (const [code, { status, title }] of Object.entries(CATALOG)) {
      expect(problem.properties['code']!.description).toContain(`\`${code}\` (${status}): ${title}`);
      expect(problem.properties['type']!.enum).toContain(`urn:context-compiler:problem:${code.slice(3).toLowerCase().replaceAll('_', '-')}`);
    }
  });

  it('describes the real answers: 200s, 304s and problems, bodies and headers', async () => {
    const brainRoot = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot, BODY_LIMIT: '2048' });
    const compiled = await app.inject({ method: 'POST', url: '/compile', payload: turn({ runId: 'openapi-run' }) });
    const etag = String(compiled.headers['etag']);
    const persona = await app.inject(`/context/mars?now=${NOW}`);
    const seen = await expectDocumented(app, [
      { path: '/healthz', request: { url: '/healthz' }, status: 200 },
      { path: '/readyz', request: { url: '/readyz' }, status: 200 },
      { path: '/metrics', request: { url: '/metrics' }, status: 200 },
      { path: '/personas', request: { url: '/personas' }, status: 200 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn() }, status: 200 },
      { path: '/compile', request: { method: 'POST', url: '/compile?format=text', payload: turn() }, status: 200 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn(), headers: { 'if-none-match': etag } }, status: 304 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ phase: 'start' }) }, status: 400 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ worker: '../x' }) }, status: 400 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: '{"phase":', headers: { 'content-type': 'application/json' } }, status: 400 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ worker: 'nobody' }) }, status: 404 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ message: 'x'.repeat(4000) }) }, status: 413 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: 'hello', headers: { 'content-type': 'text/plain' } }, status: 415 },
      { path: '/context/{persona}', request: { url: `/context/venus?now=${NOW}&topicId=garden&topicName=Beds` }, status: 200 },
      { path: '/context/{persona}', request: { url: `/context/mars?now=${NOW}&topicId=../x&sanitize=ascii` }, status: 200 },
      { path: '/context/{persona}', request: { url: `/context/mars?now=${NOW}`, headers: { 'if-none-match': String(persona.headers['etag']) } }, status: 304 },
      { path: '/context/{persona}', request: { url: '/context/mars?now=yesterday' }, status: 400 },
      { path: '/context/{persona}', request: { url: '/context/jupiter' }, status: 404 },
      { path: '/context/topic/{topicId}', request: { url: '/context/topic/garden' }, status: 200 },
      { path: '/context/topic/{topicId}', request: { url: '/context/topic/Garden' }, status: 400 },
      { path: '/context/topic/{topicId}', request: { url: '/context/topic/no-such-topic' }, status: 404 },
      { path: '/runs', request: { url: '/runs?limit=2' }, status: 200 },
      { path: '/runs', request: { url: '/runs?limit=0' }, status: 400 },
      { path: '/runs/{runId}/trace', request: { url: '/runs/openapi-run/trace?verify=sources' }, status: 200 },
      { path: '/runs/{runId}/trace', request: { url: '/runs/no-such-run/trace' }, status: 404 },
      { path: '/ui', request: { url: '/ui' }, status: 308 },
      { path: '/ui/{file}', request: { url: '/ui/nope.js' }, status: 404 },
    ]);
    expect([...seen].sort()).toEqual(['CC_INVALID_JSON', 'CC_NOT_FOUND', 'CC_UNSAFE_ID', 'CC_UNSUPPORTED_MEDIA_TYPE', 'CC_VALIDATION_FAILED', 'CC_BODY_TOO_LARGE'].sort());
  });

  it('describes the problems of a guarded, limited, failing service: 401, 429, 422 and 503s', async () => {
    const { fs, state } = faultyFs();
    const guarded = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN, RATE_LIMIT_MAX: '2' }, { traceFs: fs });
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    await expectDocumented(guarded.app, [
      { path: '/metrics', request: { url: '/metrics' }, status: 401 },
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ message: 'x'.repeat(17_000) }), headers: auth }, status: 422 },
    ]);
    state.failWith = 'ENOSPC';
    await expectDocumented(guarded.app, [
      { path: '/compile', request: { method: 'POST', url: '/compile', payload: turn({ message: 'another' }), headers: auth }, status: 503 },
      { path: '/readyz', request: { url: '/readyz' }, status: 503 },
      { path: '/personas', request: { url: '/personas', headers: auth }, status: 429 },
    ]);
    const gone = await buildTestApp({ BRAIN_ROOT: join(await tempDir(), 'not-there') });
    await expectDocumented(gone.app, [{ path: '/readyz', request: { url: '/readyz' }, status: 503 }]);
  });

  it('documents the trace-unavailable 503 of every route that delivers a compile with its Retry-After and x-run-id, and sends x-run-id', async () => {
    const document = await readOpenapi();
    const delivering = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method, operation]) => METHODS.includes(method) && (operation['responses'] as Record<string, { headers?: object }>)['200']?.headers && 'x-run-id' in (operation['responses'] as Record<string, { headers: object }>)['200']!.headers)
        .map(([, operation]) => [path, (operation['responses'] as Record<string, { headers?: object }>)['503']] as const),
    );
    expect(delivering.map(([path]) => path).sort()).toEqual(['/compile', '/context/topic/{topicId}', '/context/{persona}', '/context/{persona}/refresh']);
    for (const [path, unavailable] of delivering) expect(Object.keys(unavailable?.headers ?? {}).sort(), path).toEqual(['Retry-After', 'x-run-id']);

    const { fs, state } = faultyFs();
    const { app } = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain() }, { traceFs: fs });
    state.failWith = 'ENOSPC';
    await expectDocumented(app, [
      { path: '/context/{persona}', request: { url: `/context/mars?now=${NOW}` }, status: 503 },
      { path: '/context/topic/{topicId}', request: { url: '/context/topic/garden' }, status: 503 },
    ]);
  });

  it('describes the 503 CC_OVERLOADED of every route an overloaded replica sheds, and the probes and /metrics it still answers', async () => {
    const { app } = await buildTestApp({ PRESSURE_MAX_HEAP_USED: '1048576', PRESSURE_MAX_EVENT_LOOP_DELAY: '0', PRESSURE_SAMPLE_INTERVAL: '100ms' });
    for (let i = 0; i < 100 && !app.isUnderPressure(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    const document = await readOpenapi();
    const cases: Case[] = [];
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of METHODS.filter((each) => each in item)) {
        const url = toFastifyPath(path).replace(':persona', 'mars').replace(':topicId', 'real-estate').replace(':runId', 'run-1').replace('/ui/*', '/ui/index.html');
        const exempt = ['/healthz', '/metrics'].includes(path);
        const status = path === '/readyz' ? 503 : exempt ? 200 : 503;
        cases.push({ path, request: { method: method.toUpperCase() as 'GET', url, ...(method === 'post' ? { payload: turn() } : {}) }, status });
      }
    }
    const seen = await expectDocumented(app, cases);
    expect([...seen].sort()).toEqual(['CC_NOT_READY', 'CC_OVERLOADED']);
  });
});
