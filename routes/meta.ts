import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../src/config.js';

export const OPENAPI_PATH = resolve(PROJECT_ROOT, 'openapi.yaml');

/** `/metrics` (Prometheus text) and `/openapi.json` (the contract in openapi.yaml). */
export async function metaRoutes(app: FastifyInstance): Promise<void> {
  // Parsed once at boot: the contract is part of the build, not of the request path.
  const openapi = JSON.stringify(parse(await readFile(OPENAPI_PATH, 'utf8')));

  app.get('/metrics', async (_request, reply) => {
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(app.metrics.render());
  });

  app.get('/openapi.json', async (_request, reply) => {
    return reply.type('application/json; charset=utf-8').send(openapi);
  });
}
