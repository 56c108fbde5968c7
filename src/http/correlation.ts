import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { SERVICE_VERSION } from '../version.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's W3C `traceparent`, when valid (version, trace id, parent id, flags); null otherwise. */
    traceparent: string | null;
  }
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(.*)$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);

/**
 * A `traceparent` header as W3C Trace Context defines it, or null for anything else: two
 * lowercase hex digits of version (not `ff`), a 32-digit trace id and a 16-digit parent id,
 * neither all zeros, and two digits of flags. Version `00` has exactly these four fields; a
 * later version may add fields after a `-`, which are not kept. Repeated headers (joined
 * with a comma) are invalid. Returns the four fields as `00`-shaped text.
 *
 * @see https://www.w3.org/TR/trace-context/#traceparent-header
 */
export function parseTraceparent(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string' || header.length > 512) return null;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return null;
  const [, version, traceId, parentId, flags, rest] = match as unknown as [string, string, string, string, string, string];
  if (version === 'ff' || traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return null;
  if (version === '00' ? rest !== '' : rest !== '' && !rest.startsWith('-')) return null;
  return `${version}-${traceId}-${parentId}-${flags}`;
}

/**
 * Correlation, first of the request hooks: the request id (the caller's `x-request-id` when
 * it is a safe id, else a new UUID; see `genReqId` in `buildApp`) is echoed as
 * `x-request-id` on every answer, problems and shed requests included, beside
 * `x-context-compiler-version` (the service's release, which the client compares with the
 * major version it was built for), and a valid W3C
 * `traceparent` is kept on the request for the log line and the trace event. An invalid
 * `traceparent` is ignored, never a 400: a caller's tracing must not break its calls.
 */
export const correlationPlugin = fp(
  async function correlationPlugin(app: FastifyInstance) {
    app.decorateRequest('traceparent', null);
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id).header('x-context-compiler-version', SERVICE_VERSION);
      const given = request.headers['traceparent'];
      if (given !== undefined) request.traceparent = parseTraceparent(given);
      done();
    });
  },
  { name: 'correlation' },
);
