import { resolve } from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PROJECT_ROOT } from '../src/config.js';
import { openapiDocument, problems } from '../src/http/openapi.js';

/** Where `npm run openapi` writes the contract (scripts/openapi.ts); a test keeps it equal to what the app generates. */
export const OPENAPI_PATH = resolve(PROJECT_ROOT, 'openapi.yaml');

/** `/metrics` (Prometheus text) and `/openapi.json` (the contract, generated from the route schemas). */
export const metaRoutes: FastifyPluginAsyncZod = async (app) => {
  // Built on first use, once every route is registered: the contract is part of the build, not of the request path.
  let openapi: Record<string, unknown> | undefined;

  app.get(
    '/metrics',
    {
      // Scraped while overloaded too: it shows why.
      config: { overloadExempt: true },
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus text exposition',
        response: {
          200: { description: 'metrics', content: { 'text/plain': { schema: z.string() } } },
          ...problems(401, 429),
        },
      },
    },
    async (_request, reply) => {
      return reply.type(app.metrics.contentType).send(await app.metrics.render());
    },
  );

  app.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'getOpenapi',
        summary: 'This contract as JSON',
        response: {
          200: { description: 'the OpenAPI document (openapi.yaml)', content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
          ...problems(401, 429),
        },
      },
    },
    async (_request, reply) => {
      openapi ??= openapiDocument(app);
      return reply.type('application/json; charset=utf-8').send(openapi);
    },
  );
};
