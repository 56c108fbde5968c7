import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { ConfigError, describeConfig, DESCRIPTORS_BESIDES_SOCKETS, loadConfig, SHUTDOWN_FLUSH_MS, type Config } from './config.js';
import { serveClusterMetrics } from './cluster-metrics.js';
import { createLogger } from './logger.js';
import { terminalDestination } from './terminal-logs.js';

/** The only place that listens. Config is read once; a bad value stops the process. */
export async function main(env: Record<string, string | undefined> = process.env): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`context-compiler: ${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }

  // Pretty only in a terminal, and only where the dev dependency is installed.
  const log = createLogger(config, await terminalDestination(process.stdout));
  if (config.workers > 1 && cluster.isPrimary) {
    superviseWorkers(config, log);
    return;
  }
  warnIfDescriptorsShort(config, log);
  warnIfBacklogCapped(config, log);
  // Only a process that serves loads the app (Fastify, the routes, the tokenizer: most of a
  // second of CPU); a bad configuration and a cluster's primary exit or supervise without it.
  const { buildApp } = await import('./app.js');
  const app = await buildApp(config, { logger: log, clusterWorker: cluster.isWorker });

  // SHUTDOWN_GRACE bounds the requests in flight; the flush margin, the trace store's last batch.
  // A cluster worker leaves SIGINT and SIGTERM to the primary: a terminal's Ctrl-C reaches every
  // process of the group, and a second signal would cut a graceful close short.
  const worker = cluster.isWorker;
  const grace = closeWithGrace(
    { delay: config.shutdownGraceMs + SHUTDOWN_FLUSH_MS, logger: log, ...(worker ? { skip: ['SIGINT', 'SIGTERM'] } : {}) },
    async ({ signal, err }) => {
      // First, so that a request arriving from here on is answered 503 (and the log line below proves it).
      const { closed, inFlight } = app.connections.beginShutdown();
      if (err) log.error({ err }, 'shutting down after an uncaught error');
      log.info({ signal: signal ?? (worker ? 'primary' : undefined), inFlight, closedWaiting: closed }, 'shutting down');
      const cutOff = setTimeout(() => {
        const requests = app.connections.closeAll();
        if (requests > 0) log.warn({ requests, shutdownGraceMs: config.shutdownGraceMs }, 'closed connections still in flight after SHUTDOWN_GRACE');
      }, config.shutdownGraceMs);
      try {
        await app.close();
      } finally {
        clearTimeout(cutOff);
      }
    },
  );
  if (worker) {
    let closing = false;
    const shutDown = () => {
      if (closing) return;
      closing = true;
      void grace.close();
    };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => undefined);
    process.on('message', (message) => {
      if (message === SHUTDOWN_MESSAGE) shutDown();
    });
    // The primary is gone (killed): nobody would tell this worker to stop.
    process.once('disconnect', shutDown);
  }

  try {
    await app.listen({ port: config.port, host: config.host, backlog: config.listenBacklog });
  } catch (error) {
    log.fatal({ err: error }, 'could not listen');
    process.exit(1);
  }
  // One line that states what is running, without a secret (describeConfig).
  log.info({ node: process.version, ...describeConfig(config) }, 'started');
}

/** What the primary sends a worker to shut it down gracefully (workers leave SIGINT and SIGTERM to the primary). */
const SHUTDOWN_MESSAGE = 'context-compiler:shutdown';

/**
 * A worker that dies before it listens, or this soon after, counts as failing to start. The
 * window opens when it listens, not when it is forked: on a busy machine a start can take
 * longer than the window, and a loop of such starts must still be seen.
 */
const EARLY_EXIT_MS = 10_000;
/** Workers that fail to start this many times in a row stop the service: a restart loop would only hide the cause. */
const MAX_EARLY_EXITS = 5;

/**
 * WORKERS=N: this process (the primary) forks N workers running this same entry point, which
 * share the port (node:cluster hands each accepted connection to one of them) and each build
 * their own app: caches, rate-limit counts, trace writer. A worker that dies is replaced.
 * A scrape of `/metrics` answers for every worker (the primary aggregates them). On
 * SIGTERM or SIGINT the primary tells each worker to shut down (a message, not a second
 * signal), so each closes gracefully as a single process does (its own SHUTDOWN_GRACE and
 * trace flush), and exits once all have: 0 when every worker exited cleanly, 1 otherwise or
 * when they outlive the deadline.
 */
function superviseWorkers(config: Config, log: Logger): void {
  let stopping = false;
  let earlyExits = 0;
  /** Each running worker, with when it started listening (null until it does). */
  const started = new Map<Worker, number | null>();
  let failed = false;
  const fork = () => {
    const worker = cluster.fork();
    started.set(worker, null);
    // Its pid, before it listens: which process replaced one that died.
    log.info({ worker: worker.process.pid }, 'forked a worker');
  };
  cluster.on('listening', (worker) => {
    if (started.get(worker) === null) started.set(worker, Date.now());
  });
  cluster.on('exit', (worker, code, signal) => {
    const listeningSince = started.get(worker) ?? null;
    started.delete(worker);
    if (stopping) {
      // A worker that died earlier was replaced; what counts is how the last ones closed.
      if (code !== 0) failed = true;
      if (started.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    earlyExits = listeningSince === null || Date.now() - listeningSince < EARLY_EXIT_MS ? earlyExits + 1 : 0;
    log.error({ pid: worker.process.pid, code, signal, earlyExits }, 'worker exited; starting another');
    if (earlyExits >= MAX_EARLY_EXITS) {
      log.fatal({ earlyExits }, 'workers keep exiting right after they start; stopping');
      // The workers still running close cleanly; the exit status must still say this failed.
      failed = true;
      stopping = true;
      for (const each of started.keys()) each.send(SHUTDOWN_MESSAGE);
      if (started.size === 0) process.exit(1);
      return;
    }
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, workers: started.size }, 'shutting down workers');
    // Each worker closes with its own grace and flushes its traces; this only bounds the wait.
    setTimeout(() => {
      log.error({ workers: started.size }, 'workers still running after SHUTDOWN_GRACE and the trace flush; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + SHUTDOWN_FLUSH_MS + 1_000).unref();
    for (const worker of started.keys()) worker.send(SHUTDOWN_MESSAGE);
    if (started.size === 0) process.exit(0);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  serveClusterMetrics();
  for (let i = 0; i < config.workers; i++) fork();
  log.info({ workers: config.workers, port: config.port, host: config.host }, 'started workers');
}

/**
 * Past the open-files limit, accept() fails and every caller is reset, probes included: the
 * connection cap only helps if it leaves room for the files the service opens.
 */
function warnIfDescriptorsShort(config: Config, log: Logger): void {
  const limit = openFilesLimit();
  if (limit === null || config.maxConnections + DESCRIPTORS_BESIDES_SOCKETS <= limit) return;
  log.warn(
    { maxConnections: config.maxConnections, openFilesLimit: limit, needed: config.maxConnections + DESCRIPTORS_BESIDES_SOCKETS },
    'MAX_CONNECTIONS leaves too few file descriptors under the open-files limit: raise `ulimit -n` or lower MAX_CONNECTIONS',
  );
}

/**
 * Linux silently caps the listen backlog at `net.core.somaxconn`: a burst past the cap has
 * its SYNs dropped, and each of those callers (a probe among them) waits a second to retry.
 */
function warnIfBacklogCapped(config: Config, log: Logger): void {
  const somaxconn = readNumber('/proc/sys/net/core/somaxconn', /^(\d+)\s*$/);
  if (somaxconn === null || config.listenBacklog <= somaxconn) return;
  log.warn(
    { listenBacklog: config.listenBacklog, somaxconn },
    'LISTEN_BACKLOG is above net.core.somaxconn, which caps it: raise the sysctl or a connection burst past it waits a second for a SYN retransmit',
  );
}

/** The soft RLIMIT_NOFILE, from /proc (Linux); null where it cannot be read or is unlimited. */
function openFilesLimit(): number | null {
  return readNumber('/proc/self/limits', /^Max open files\s+(\d+)/m);
}

/** The number `pattern` captures in a /proc file; null where it cannot be read. */
function readNumber(path: string, pattern: RegExp): number | null {
  try {
    const match = pattern.exec(readFileSync(path, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

await main();
