import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../errors.js';
import { hostOfHeader, LOOPBACK_HOSTS } from '../hosts.js';

export interface HostGuardOptions {
  /** Whether bearer tokens are configured: without them the service answers loopback names and same-origin pages only. */
  tokens: boolean;
  /** ALLOWED_HOSTS: names served besides the loopback ones. */
  allowedHosts: readonly string[];
}

/**
 * What a request's `Host` and `Origin` must be, or null when anything goes: without tokens,
 * a loopback name (or one of ALLOWED_HOSTS) and a same-origin or absent `Origin`; with
 * tokens, the `Host` only when ALLOWED_HOSTS is set (a page on another origin cannot send
 * the bearer token without a CORS preflight, which this service never grants).
 */
export function hostPolicy(options: HostGuardOptions): { hosts: ReadonlySet<string>; checkOrigin: boolean } | null {
  if (options.tokens && options.allowedHosts.length === 0) return null;
  return { hosts: new Set([...LOOPBACK_HOSTS, ...options.allowedHosts]), checkOrigin: !options.tokens };
}

/** Whether `origin` (an `Origin` header) is the origin of a page served from `host` (the request's `Host` header). */
export function sameOrigin(origin: string, host: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin.toLowerCase()) return false;
  let served: URL;
  try {
    served = new URL(`${parsed.protocol}//${host}`);
  } catch {
    return false;
  }
  return served.host === parsed.host && served.username === '' && served.pathname === '/';
}

/**
 * DNS rebinding: a page on an attacker's name that resolves to 127.0.0.1 runs in
 * the person's browser and can reach a loopback service, but its requests carry the
 * attacker's name in `Host` and its origin in `Origin`. Without tokens, a request naming
 * any other host, or sent from another origin, is a 403 problem naming the header — before
 * authentication, rate limits or anything else. `/healthz` and `/readyz` are checked too:
 * the probes of a loopback service connect to a loopback name.
 */
export const hostGuardPlugin = fp(
  async function hostGuardPlugin(app: FastifyInstance, options: HostGuardOptions) {
    const policy = hostPolicy(options);
    if (policy === null) return;
    const allowed = [...policy.hosts].join(', ');
    app.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
      const host = request.headers.host;
      // A request without Host (HTTP/1.0) comes from no browser; one with a foreign Host may.
      if (host !== undefined && !policy.hosts.has(hostOfHeader(host) ?? '')) {
        done(
          new ProblemError('CC_HOST_NOT_ALLOWED', `The Host header names a host this service does not answer to; it answers ${allowed} (add a name to ALLOWED_HOSTS to serve it).`, {
            errors: [{ path: '/headers/host', message: 'not a loopback name or one of ALLOWED_HOSTS' }],
          }),
        );
        return;
      }
      const origin = request.headers.origin;
      if (policy.checkOrigin && origin !== undefined && !(host !== undefined && sameOrigin(origin, host))) {
        done(
          new ProblemError('CC_ORIGIN_NOT_ALLOWED', 'The Origin header names another origin: without tokens, only pages served by this service may call it.', {
            errors: [{ path: '/headers/origin', message: 'not the origin of this service' }],
          }),
        );
        return;
      }
      done();
    });
  },
  { name: 'host-guard' },
);
