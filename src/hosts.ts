import { isIP } from 'node:net';

/**
 * Host names as the DNS-rebinding guard compares them: lower case, without a
 * port, IPv6 literals in brackets. Pure string handling, linear in the input.
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
