import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';
import type { Subject } from '../core/types.js';

declare module 'fastify' {
  interface FastifyReply {
    /** What a compile route's answer delivered (set by `deliver`), for its span; null on every other answer. */
    compileFacts: CompileFacts | null;
  }
}

/** A delivery's identifiers, digests and counts: what its span may carry (never a prompt or brain text). */
export interface CompileFacts {
  subject: Subject;
  runId: string;
  /** The provider the cache plan was judged for; null when nothing was compiled. */
  provider: string | null;
  promptSha256: string | null;
  promptTokens: number | null;
  /** Tokens of the longest stable prefix the cache plan marks (its last boundary before the volatile tail). */
  cachePrefixTokens: number | null;
  warnings: number;
  /** How long the trace event took to become durable, ms; null when it was not written. */
  traceMs: number | null;
  /** The problem code of a compile that delivered no prompt. */
  code: string | null;
}

/**
 * OpenTelemetry, off unless OTEL_EXPORTER_OTLP_ENDPOINT (or its traces variant) is set: then
 * each answer of a compile route is one server span, named after the route, a child of the
 * caller's `traceparent`, carrying the delivery's facts. The SDK is imported only then, so a
 * service without tracing starts without it.
 */
export const telemetryPlugin = fp(
  async function telemetryPlugin(app: FastifyInstance) {
    app.decorateReply('compileFacts', null);
    const { telemetry } = app.config;
    if (telemetry === null) return;
    const { createTracing } = await import('../tracing.js');
    const tracing = createTracing(telemetry, app.log as Logger);
    app.addHook('onResponse', (request, reply, done) => {
      const facts = reply.compileFacts;
      if (facts !== null) {
        const route = request.routeOptions.url ?? 'unmatched';
        const endTime = Date.now();
        tracing.emit({
          name: `${request.method} ${route}`,
          method: request.method,
          route,
          startTime: endTime - reply.elapsedTime,
          endTime,
          status: reply.statusCode,
          traceparent: request.traceparent,
          attributes: spanAttributes(facts),
        });
      }
      done();
    });
    app.addHook('onClose', () => tracing.shutdown());
  },
  { name: 'telemetry', dependencies: ['correlation'] },
);

function spanAttributes(facts: CompileFacts): Record<string, string | number> {
  const attributes: Record<string, string | number> = { [`cc.${facts.subject.kind}`]: facts.subject.id, 'cc.run_id': facts.runId, 'cc.warnings': facts.warnings };
  if (facts.provider !== null) attributes['cc.provider'] = facts.provider;
  if (facts.promptSha256 !== null) attributes['cc.prompt.sha256'] = facts.promptSha256;
  if (facts.promptTokens !== null) attributes['cc.prompt.tokens'] = facts.promptTokens;
  if (facts.cachePrefixTokens !== null) attributes['cc.cache.prefix_tokens'] = facts.cachePrefixTokens;
  if (facts.traceMs !== null) attributes['cc.trace.durable_ms'] = Math.round(facts.traceMs * 1000) / 1000;
  if (facts.code !== null) attributes['cc.error.code'] = facts.code;
  return attributes;
}
