import * as crypto from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Caller } from '../callers.js';
import { ProblemError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer without a bearer token (probes, static assets that hold no data). */
    public?: boolean;
  }
  interface FastifyRequest {
    /** The caller whose token was presented; null without one (or without configured tokens). Set by the auth plugin. */
    principal: Principal | null;
    /** The matched route's `config.public`, read once per request by the auth plugin (null before it ran). */
    publicRoute: boolean | null;
    /** The matched route's pattern (`unmatched` for a 404), read once by the auth plugin; null before it ran. */
    routeUrl: string | null;
  }
}

export interface Principal {
  /** A short, non-reversible label for the token (for rate-limit keys and logs). */
  readonly id: string;
  /** The caller's name, as trace events record it (never the token). */
  readonly name: string;
  /** May read every caller's runs (CONTEXT_COMPILER_READ_ALL, or the sole caller). */
  readonly readAll: boolean;
}

/**
 * Whose runs a request may read and whose name it appends under: the caller's own, or
 * every caller's (`caller: null`) — without tokens there is one caller, the machine's own
 * user, and it reads everything; so does a caller granted read-all.
 */
export interface RunScope {
  /** The name trace events of this request record; undefined without tokens. */
  readonly caller: string | undefined;
  /** Only runs and events recorded under this name are visible; null: all of them. */
  readonly visibleTo: string | null;
}

export function runScope(request: FastifyRequest): RunScope {
  const principal = request.principal;
  if (!principal) return { caller: undefined, visibleTo: null };
  return { caller: principal.name, visibleTo: principal.readAll ? null : principal.name };
}

// One-shot hashing (Node >= 20.12) costs a third of a Hash object; both give the same bytes.
const oneShot = (crypto as { hash?: typeof crypto.hash }).hash;

function digest(text: string): Buffer {
  return oneShot ? oneShot('sha256', text, 'buffer') : createHash('sha256').update(text).digest();
}

/**
 * Matches a presented bearer token against the configured ones. Both sides are hashed
 * to a fixed length and every configured token is compared, so the time taken does not
 * depend on where or whether the token matched.
 */
function createTokenMatcher(callers: readonly Caller[]) {
  const known = callers.map(({ token, name, readAll }) => ({
    hash: digest(token),
    principal: Object.freeze({ id: `token:${digest(token).toString('hex').slice(0, 12)}`, name, readAll }),
  }));
  return function match(authorization: string | undefined): Principal | null {
    if (!authorization || known.length === 0) return null;
    const found = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    const presented = digest(found?.[1] ?? '');
    let principal: Principal | null = null;
    for (const candidate of known) {
      if (timingSafeEqual(candidate.hash, presented) && found) principal = candidate.principal;
    }
    return principal;
  };
}

export function isPublicRoute(request: FastifyRequest): boolean {
  // `routeOptions` builds a fresh object on every access; the onRequest hook reads it once.
  return request.publicRoute ?? request.routeOptions.config?.public === true;
}

/**
 * Bearer tokens: every route but the public ones needs one of the callers' tokens,
 * compared in constant time. The route facts every later hook needs (its pattern, whether
 * it is public) and the caller's principal are read once, first thing; a missing or wrong
 * token is refused in `preParsing`, after the rate limit has counted the attempt and before
 * a body is read.
 */
export const authPlugin = fp(
  async function authPlugin(app: FastifyInstance, options: { callers: readonly Caller[] }) {
    const matchToken = createTokenMatcher(options.callers);
    const authRequired = options.callers.length > 0;
    app.decorateRequest('principal', null);
    app.decorateRequest('publicRoute', null);
    app.decorateRequest('routeUrl', null);
    // Callback-style hooks (no promise per request).
    app.addHook('onRequest', (request, _reply, done) => {
      const { url, config } = request.routeOptions;
      request.routeUrl = url ?? 'unmatched';
      request.publicRoute = config?.public === true;
      request.principal = matchToken(request.headers.authorization);
      done();
    });
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (!authRequired || request.principal || isPublicRoute(request)) return payload;
      throw new ProblemError('CC_UNAUTHORIZED', 'Send a configured token as "Authorization: Bearer <token>".', {
        headers: { 'www-authenticate': 'Bearer realm="context-compiler"' },
      });
    });
  },
  { name: 'auth' },
);

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
