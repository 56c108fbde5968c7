import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../../routes/meta.js';
import { buildTestApp } from '../helpers/app.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** `/runs/{runId}/trace` in OpenAPI is `/runs/:runId/trace` in Fastify. */
function toFastifyPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

describe('openapi.yaml', () => {
  it('describes exactly the routes the app serves', async () => {
    const { app } = await buildTestApp();
    const document = parse(await readFile(OPENAPI_PATH, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(document.paths)
      .flatMap(([path, item]) => Object.keys(item).filter((key) => METHODS.includes(key)).map((method) => `${method.toUpperCase()} ${toFastifyPath(path)}`))
      .sort();
    const served = app
      .routeTable()
      .map(({ method, url }) => `${method} ${url}`)
      .sort();
    expect(served).toEqual(documented);
  });

  it('is served as JSON at /openapi.json', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/openapi.json');
    expect(response.statusCode).toBe(200);
    expect(response.json().openapi).toMatch(/^3\./);
    expect(Object.keys(response.json().paths)).toContain('/healthz');
  });
});
