import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer without a bearer token (probes, static assets that hold no data). */
    public?: boolean;
  }
}

export interface Principal {
  /** A short, non-reversible label for the token (for rate-limit keys and logs). */
  readonly id: string;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * Matches a presented bearer token against the configured ones. Both sides are hashed
 * to a fixed length and every configured token is compared, so the time taken does not
 * depend on where or whether the token matched.
 */
export function createTokenMatcher(tokens: readonly string[]) {
  const known = tokens.map((token) => ({ hash: digest(token), id: `token:${digest(token).toString('hex').slice(0, 12)}` }));
  return function match(authorization: string | undefined): Principal | null {
    if (!authorization || known.length === 0) return null;
    const found = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    const presented = digest(found?.[1] ?? '');
    let principal: Principal | null = null;
    for (const candidate of known) {
      if (timingSafeEqual(candidate.hash, presented) && found) principal = { id: candidate.id };
    }
    return principal;
  };
}

export function isPublicRoute(request: FastifyRequest): boolean {
  return request.routeOptions.config?.public === true;
}
