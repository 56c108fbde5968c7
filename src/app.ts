import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { createCaches, type Caches } from './caches.js';
import type { Config } from './config.js';
import { authPlugin, rateLimitPlugin } from './http/auth.js';
import { brainPlugin } from './http/brain.js';
import { cachesPlugin } from './http/caches.js';
import { connectionsPlugin } from './http/connections.js';
import { correlationPlugin } from './http/correlation.js';
import { hostGuardPlugin } from './http/host-guard.js';
import { metricsPlugin } from './http/metrics.js';
import { openapiPlugin } from './http/openapi.js';
import { pressurePlugin } from './http/pressure.js';
import { frameworkErrorProblem, problemPlugin, writeClientErrorProblem } from './http/problem.js';
import { telemetryPlugin } from './http/telemetry.js';
import { tracesPlugin } from './http/traces.js';
import { warmUpPlugin } from './http/warm-up.js';
import { zodSerializerCompiler } from './http/serializer.js';
import { zodValidatorCompiler } from './http/zod.js';
import type { BrainFs } from './io/brain.js';
import type { TraceFs } from './io/trace/index.js';
import { createLogger } from './logger.js';
import { loadO200kBase } from './tokenizer.js';
import { compileRoutes } from '../routes/compile.js';
import { contextRoutes } from '../routes/context.js';
import { topicRoutes } from '../routes/topic.js';
import { refreshRoutes } from '../routes/refresh.js';
import { healthRoutes, type ReadinessCheck } from '../routes/health.js';
import { metaRoutes } from '../routes/meta.js';
import { personasRoutes } from '../routes/personas.js';
import { runsRoutes } from '../routes/runs.js';
import { uiRoutes } from '../routes/ui.js';
import { isSafeId } from '../schemas/ids.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The configuration `loadConfig` validated at boot (frozen). */
    config: Config;
    /** What `/readyz` checks; the brain and trace plugins add theirs. */
    readinessChecks: ReadinessCheck[];
  }
}

export interface BuildOptions {
  /** A pino logger to use instead of one built from `config.logLevel` (tests capture logs this way). */
  logger?: Logger;
  /**
   * How often Node checks requests in progress against HEADERS_TIMEOUT and REQUEST_TIMEOUT, so a
   * slow drip is cut within the timeout plus this; tests shorten it.
   */
  connectionsCheckIntervalMs?: number;
  /** The files trace store's file system; tests inject a full or failing one. */
  traceFs?: TraceFs;
  /** The cache set (default: a new one of `DEFAULT_CACHE_BYTES`); a test may pass a small one. */
  caches?: Caches;
  /** The brain reader's file system calls; tests inject a slow or changing one. */
  brainFs?: BrainFs;
  /**
   * Build what a first request would before `/readyz` answers 200 (default true). Tests that
   * count reads or cache operations build the app without it.
   */
  warmUp?: boolean;
  /** This app serves as a worker of `WORKERS=N`: `/metrics` answers for every worker (`src/cluster-metrics.ts`). */
  clusterWorker?: boolean;
}

/** Default for `connectionsCheckIntervalMs` (Node's own is 30 s, which would triple a 10 s HEADERS_TIMEOUT). */
export const CONNECTIONS_CHECK_INTERVAL_MS = 1_000;

/**
 * Builds the whole service without listening. The app is its named plugins, in order —
 * each adds the decorators it declares beside itself — then its routes, registered
 * explicitly. Tests call this with a temp brain and trace dir and use `app.inject()`.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  // The tokenizer first: its 0.2–0.3 s of CPU is paid before the service listens, never by a
  // request, and before load shedding samples the event loop, which would read it as load.
  loadO200kBase();
  const app = Fastify({
    loggerInstance: (options.logger ?? createLogger(config)) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    bodyLimit: config.bodyLimit,
    // Requests that arrive while closing get a problem (the connections plugin), not Fastify's own JSON.
    return503OnClosing: false,
    // Slow or silent clients cannot hold a socket: every state of a connection has a bound
    // (before its first request: HEADERS_TIMEOUT, set by the connection guard).
    connectionTimeout: config.requestTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      connectionsCheckingInterval: options.connectionsCheckIntervalMs ?? CONNECTIONS_CHECK_INTERVAL_MS,
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
    },
    clientErrorHandler: writeClientErrorProblem,
    frameworkErrors: frameworkErrorProblem,
    maxRequestsPerSocket: 0,
    routerOptions: { maxParamLength: 512, ignoreTrailingSlash: false },
    // A caller's X-Request-Id is kept when it is a safe id, so logs join across services.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && isSafeId(given) ? given : randomUUID();
    },
  }).withTypeProvider<ZodTypeProvider>();

  // Requests are validated and answers written from the routes' zod schemas.
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(zodSerializerCompiler);
  // Every body this service accepts is JSON: text/plain is a 415 like any other type.
  app.removeContentTypeParser('text/plain');
  app.decorate('config', config);
  app.decorate('readinessChecks', []);

  // First: every answer, shed or refused ones included, carries x-request-id.
  await app.register(correlationPlugin);
  await app.register(metricsPlugin, { clusterWorker: options.clusterWorker === true });
  await app.register(telemetryPlugin);
  // Before any work: a page on a rebound name gets nothing from a service without tokens.
  await app.register(hostGuardPlugin, { tokens: config.callers.length > 0, allowedHosts: config.allowedHosts });
  // First of the request hooks: an overloaded replica refuses before doing any work.
  await app.register(pressurePlugin, config.pressure);
  await app.register(authPlugin, { callers: config.callers });
  await app.register(connectionsPlugin, { maxConnections: config.maxConnections, headersTimeoutMs: config.headersTimeoutMs });
  await app.register(rateLimitPlugin, config.rateLimit);
  await app.register(cachesPlugin, { caches: options.caches ?? createCaches() });
  await app.register(tracesPlugin, options.traceFs ? { fs: options.traceFs } : {});
  await app.register(brainPlugin, options.brainFs ? { fs: options.brainFs } : {});
  await app.register(warmUpPlugin, { enabled: options.warmUp !== false });
  await app.register(problemPlugin);
  await app.register(openapiPlugin);

  for (const routes of [healthRoutes, metaRoutes, compileRoutes, topicRoutes, contextRoutes, refreshRoutes, personasRoutes, runsRoutes, uiRoutes]) {
    await app.register(routes);
  }
  return app;
}
