import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';
import { ProblemError } from './errors.js';
import { createTokenMatcher, isPublicRoute, type Principal } from './http/auth.js';
import { guardConnections, type ConnectionGuard } from './http/connections.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { frameworkErrorProblem, problemPlugin, sendProblem, toProblem, writeClientErrorProblem } from './http/problem.js';
import { zodValidatorCompiler } from './http/zod.js';
import { healthRoutes, type ReadinessCheck } from '../routes/health.js';
import { metaRoutes } from '../routes/meta.js';
import { compileRoutes } from '../routes/compile.js';
import { contextRoutes } from '../routes/context.js';
import { personasRoutes } from '../routes/personas.js';
import { createBrain, type Brain } from './io/brain.js';
import { runsRoutes } from '../routes/runs.js';
import { uiRoutes } from '../routes/ui.js';
import { createTraceStoreFromConfig, type TraceFs, type TraceStore } from './io/trace/index.js';
import { isSafeId } from '../schemas/ids.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    metrics: Metrics;
    readinessChecks: ReadinessCheck[];
    /** The brain reader (BRAIN_ROOT): confined, bounded, stat-revalidated reads for every route. */
    brain: Brain;
    /** The durable trace store (TRACE_DIR, or TRACE_DATABASE_URL); the deliver path appends to it before answering. */
    traces: TraceStore;
    /** The listening server's sockets: the MAX_CONNECTIONS cap, and which to close when shutting down. */
    connections: ConnectionGuard;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The matched route's pattern (`unmatched` for a 404), read once by the onRequest hook; null before it ran. */
    routeUrl: string | null;
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
}

/** Default for `connectionsCheckIntervalMs` (Node's own is 30 s, which would triple a 10 s HEADERS_TIMEOUT). */
export const CONNECTIONS_CHECK_INTERVAL_MS = 1_000;

/** Retry-After (seconds) on the 503 a request gets while the service shuts down: another replica answers. */
export const SHUTDOWN_RETRY_AFTER_S = 1;

/** Paths pino must never print, whatever object a log line is given. */
export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  'tokens',
  'traceSigningKey',
  'traceDatabaseUrl',
  'connectionString',
  'password',
  'password',
  'systemPrompt',
  'inputPrompt',
  'instructions',
];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * Builds the whole service without listening: plugins, hooks and routes, registered
 * explicitly. Tests call this with a temp brain and trace dir and use `app.inject()`.
 */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: (options.logger ?? createLogger(config)) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    bodyLimit: config.bodyLimit,
    // Requests that arrive while closing get a problem (the onRequest hook below), not Fastify's own JSON.
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
  });

  app.setValidatorCompiler(zodValidatorCompiler);
  // Every body this service accepts is JSON: text/plain is a 415 like any other type.
  app.removeContentTypeParser('text/plain');
  app.decorate('config', config);
  app.decorate('metrics', createMetrics());
  app.decorate('readinessChecks', []);
  app.decorate('brain', createBrain(config.brainRoot, app.log.child({ component: 'brain' })));
  app.decorateRequest('principal', null);
  app.decorateRequest('publicRoute', null);
  app.decorateRequest('routeUrl', null);

  const connections = guardConnections(app.server, {
    maxConnections: config.maxConnections,
    firstRequestTimeoutMs: config.headersTimeoutMs,
    log: app.log.child({ component: 'connections' }),
    onShed: (reason) => app.metrics.connectionsShed.inc({ reason }),
  });
  app.decorate('connections', connections);
  // app.close() alone (tests, an embedding host) sheds waiting sockets as SIGTERM does.
  app.addHook('preClose', (done) => {
    connections.beginShutdown();
    done();
  });

  const matchToken = createTokenMatcher(config.tokens);
  const authRequired = config.tokens.length > 0;
  // Callback-style hooks (no promise per request); route facts read once for every later hook.
  app.addHook('onRequest', (request, reply, done) => {
    const { url, config: routeConfig } = request.routeOptions;
    request.routeUrl = url ?? 'unmatched';
    request.publicRoute = routeConfig?.public === true;
    request.principal = matchToken(request.headers.authorization);
    if (connections.shuttingDown) {
      const problem = new ProblemError('CC_SHUTTING_DOWN', 'The service is shutting down; retry, and another instance will answer.');
      sendProblem(reply, toProblem(problem, request), { 'retry-after': String(SHUTDOWN_RETRY_AFTER_S), connection: 'close' });
      return;
    }
    done();
  });

  await app.register(rateLimit, {
    global: true,
    max: config.rateLimit.max,
    timeWindow: config.rateLimit.windowMs,
    keyGenerator: (request) => request.principal?.id ?? `ip:${request.ip}`,
    allowList: (request) => isPublicRoute(request),
    errorResponseBuilder: (_request, context) =>
      new ProblemError('CC_RATE_LIMITED', `Rate limit of ${context.max} requests reached; retry in ${context.after}.`),
  });

  // preParsing runs after the per-route rate-limit hook, so failed logins are throttled
  // too, and before the body is read, so an anonymous caller costs no parsing.
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (!authRequired || request.principal || isPublicRoute(request)) return payload;
    throw new ProblemError('CC_UNAUTHORIZED', 'Send a configured token as "Authorization: Bearer <token>".', {
      headers: { 'www-authenticate': 'Bearer realm="context-compiler"' },
    });
  });

  const { requests, requestDuration } = app.metrics;
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeUrl ?? request.routeOptions.url ?? 'unmatched';
    const ms = reply.elapsedTime;
    const labels = { route, method: request.method, status: String(reply.statusCode) };
    requests.inc(labels);
    requestDuration.observe(labels, ms / 1000);
    // The object is only built when the line is written (at LOG_LEVEL=warn it is not); the logger is always pino's.
    if ((request.log as Logger).isLevelEnabled('info')) {
      const runId = reply.getHeader('x-run-id');
      request.log.info({ method: request.method, route, status: reply.statusCode, ms: Math.round(ms * 100) / 100, ...(runId ? { runId } : {}) }, 'request');
    }
    done();
  });

  const traces = createTraceStoreFromConfig(config, app.log.child({ component: 'traces' }), {
    ...(options.traceFs ? { fs: options.traceFs } : {}),
    observeWrite: (seconds, ok) => app.metrics.traceWriteDuration.observe({ result: ok ? 'ok' : 'error' }, seconds),
    observeCommit: () => app.metrics.traceCommits.inc(),
  });
  app.decorate('traces', traces);
  app.addHook('onClose', () => traces.close());
  app.readinessChecks.push({ name: 'traces', check: () => traces.health() });

  await app.register(problemPlugin);
  await app.register(healthRoutes);
  await app.register(metaRoutes);
  await app.register(compileRoutes);
  await app.register(contextRoutes);
  await app.register(personasRoutes);
  await app.register(runsRoutes);
  await app.register(uiRoutes);

  return app;
}
