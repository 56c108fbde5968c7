import { readFileSync } from 'node:fs';
import closeWithGrace from 'close-with-grace';
import type { Logger } from 'pino';
import { buildApp, createLogger } from './app.js';
import { ConfigError, describeConfig, DESCRIPTORS_BESIDES_SOCKETS, loadConfig, SHUTDOWN_FLUSH_MS, type Config } from './config.js';
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
  warnIfDescriptorsShort(config, log);
  const app = await buildApp(config, { logger: log });

  // SHUTDOWN_GRACE bounds the requests in flight; the flush margin, the trace store's last batch.
  closeWithGrace({ delay: config.shutdownGraceMs + SHUTDOWN_FLUSH_MS, logger: log }, async ({ signal, err }) => {
    // First, so that a request arriving from here on is answered 503 (and the log line below proves it).
    const { closed, inFlight } = app.connections.beginShutdown();
    if (err) log.error({ err }, 'shutting down after an uncaught error');
    log.info({ signal, inFlight, closedWaiting: closed }, 'shutting down');
    const cutOff = setTimeout(() => {
      const requests = app.connections.closeAll();
      if (requests > 0) log.warn({ requests, shutdownGraceMs: config.shutdownGraceMs }, 'closed connections still in flight after SHUTDOWN_GRACE');
    }, config.shutdownGraceMs);
    try {
      await app.close();
    } finally {
      clearTimeout(cutOff);
    }
  });

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    log.fatal({ err: error }, 'could not listen');
    process.exit(1);
  }
  // One line that states what is running, without a secret (describeConfig).
  log.info({ node: process.version, ...describeConfig(config) }, 'started');
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

/** The soft RLIMIT_NOFILE, from /proc (Linux); null where it cannot be read or is unlimited. */
function openFilesLimit(): number | null {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

await main();
