import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../errors.js';
import { isPublicRoute } from './auth.js';

/**
 * `@fastify/rate-limit` on every route but the public ones, keyed by the caller's token
 * (else its address); over the limit is a 429 problem with `Retry-After`. Registered after
 * the auth plugin, whose hook names the principal first.
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/
 */
export const rateLimitPlugin = fp(
  async function rateLimitPlugin(app: FastifyInstance, options: { max: number; windowMs: number }) {
    await app.register(rateLimit, {
      global: true,
      max: options.max,
      timeWindow: options.windowMs,
      keyGenerator: (request) => request.principal?.id ?? `ip:${request.ip}`,
      allowList: (request) => isPublicRoute(request),
      errorResponseBuilder: (_request, context) =>
        new ProblemError('CC_RATE_LIMITED', `Rate limit of ${context.max} requests reached; retry in ${context.after}.`),
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
