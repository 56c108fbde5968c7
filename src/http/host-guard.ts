import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isIP } from 'node:net';
import { ProblemError } from '../errors.js';

/*
 * Host names as the guard compares them (and as ALLOWED_HOSTS is parsed, `src/config.ts`):
 * lower case, without a port, IPv6 literals in brackets. Pure string handling, linear in
 * the input.
 */

/** The names a service without tokens always answers to: what only this machine resolves. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** A host name (`api.example.com`), an IPv4 literal or a bracketed IPv6 literal, lower-cased; null for anything else. */
export function normalizeHostName(text: string): string | null {
  const name = text.trim().toLowerCase();
  if (name.startsWith('[') && name.endsWith(']')) return isIP(name.slice(1, -1)) === 6 ? name : null;
  if (isIP(name) === 4) return name;
  if (name.length === 0 || name.length > 253) return null;
  return name.split('.').every((label) => LABEL.test(label)) ? name : null;
}

/**
 * The host name of a `Host` header (`name`, `name:port`, `[v6]:port`), normalized; null when
 * it is not one (a port that is not digits, stray brackets, anything a URL authority cannot be).
 */
export function hostOfHeader(header: string): string | null {
  let name = header;
  let port = '';
  if (header.startsWith('[')) {
    const close = header.indexOf(']');
    if (close === -1) return null;
    name = header.slice(0, close + 1);
    const rest = header.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return null;
    port = rest.slice(1);
  } else {
    const colon = header.indexOf(':');
    if (colon !== -1) {
      name = header.slice(0, colon);
      port = header.slice(colon + 1);
    }
  }
  if (port !== '' && !/^\d{1,5}$/.test(port)) return null;
  return normalizeHostName(name);
}

/**
 * `ALLOWED_HOSTS`: host names separated by commas, each without a port (any port is served).
 * Returns the names normalized, or the first entry that is not a host name.
 */
export function parseAllowedHosts(text: string): { hosts: string[] } | { invalid: string } {
  const hosts: string[] = [];
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const host = normalizeHostName(entry);
    if (host === null) return { invalid: entry.trim() };
    if (!hosts.includes(host)) hosts.push(host);
  }
  return { hosts };
}

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
