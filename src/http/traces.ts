import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createTraceStoreFromConfig, type TraceFs, type TraceStore } from '../io/trace/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The durable trace store (TRACE_DIR, or TRACE_DATABASE_URL); the deliver path appends to it before answering. */
    traces: TraceStore;
  }
}

export interface TracesPluginOptions {
  /** The trace store's file system; tests inject a full or failing one. */
  fs?: TraceFs;
}

/** `app.traces`: the trace store, closed with the app, its write path checked by `/readyz`. */
export const tracesPlugin = fp(
  async function tracesPlugin(app: FastifyInstance, options: TracesPluginOptions) {
    const { metrics } = app;
    const backend = app.config.traceDatabaseUrl === null ? 'files' : 'postgres';
    const traces = createTraceStoreFromConfig(app.config, app.log.child({ component: 'traces' }), {
      ...(options.fs ? { fs: options.fs } : {}),
      memo: app.caches.trace,
      ...metrics.traceObservers(backend),
    });
    metrics.collectTraces(() => traces.stats());
    app.decorate('traces', traces);
    app.addHook('onClose', () => traces.close());
    app.readinessChecks.push({ name: 'traces', check: () => traces.health() });
  },
  { name: 'traces', dependencies: ['metrics', 'caches'] },
);
