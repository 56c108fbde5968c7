import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOptions } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { createCaches } from '../../src/caches.js';
import { EXAMPLE_BRAIN, loadConfig, type Config } from '../../src/config.js';
import { afterThisTest, tempDir } from './cleanups.js';

export { tempDir } from './cleanups.js';

/** A private copy of the example brain, so a test may change it freely. */
export async function copyExampleBrain(): Promise<string> {
  const dir = await tempDir('cc-brain-');
  await cp(EXAMPLE_BRAIN, dir, { recursive: true });
  return dir;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  /** Every log line the app wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** The raw log output, to search for leaked secrets. */
  rawLogs(): string;
}

/**
 * What every server a test starts (in a process or in the test's own) runs with unless the test
 * says otherwise: no load shedding by event-loop delay. On a busy machine the loop is late
 * because other processes hold the cores, or because the test runner's own work shares it, not
 * because of the server's load, and a test of anything else must not get 503 `CC_OVERLOADED`
 * for it. A test of the shedding sets `PRESSURE_MAX_EVENT_LOOP_DELAY` itself.
 */
export const NO_DELAY_SHEDDING: Readonly<Record<string, string>> = { PRESSURE_MAX_EVENT_LOOP_DELAY: '0' };

/**
 * Builds the app on a temp trace dir (and the example brain unless BRAIN_ROOT is given)
 * from an explicit environment, never `process.env`; closed after the test. `options` may
 * give the trace store a failing file system, the brain a slow one, or turn the warm-up on (it is
 * off here). Shared results are frozen (`freezeShared`).
 */
export async function buildTestApp(env: Record<string, string> = {}, options: Pick<BuildOptions, 'traceFs' | 'brainFs' | 'warmUp'> = {}): Promise<TestApp> {
  const traceDir = env['TRACE_DIR'] ?? join(await tempDir('cc-traces-'), 'traces');
  const config = loadConfig({ LOG_LEVEL: 'info', ...NO_DELAY_SHEDDING, ...env, TRACE_DIR: traceDir });
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger(config, stream);
  // Shared results are frozen: a test that makes code mutate one fails loudly instead of passing on stale bytes.
  // No warm-up unless asked: tests count reads, cache operations and readiness checks from a cold start.
  const app = await buildApp(config, { logger, caches: createCaches({ freezeShared: true }), warmUp: false, ...options });
  await app.ready();
  afterThisTest(() => app.close());
  return {
    app,
    config,
    get logs() {
      return chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    rawLogs: () => chunks.join(''),
  };
}

/** Polls `/readyz` (bounded: 100 × 50 ms) and returns its last status: 200 once the service recovered. */
export async function readyStatus(app: FastifyInstance): Promise<number> {
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    status = (await app.inject('/readyz')).statusCode;
  }
  return status;
}

export const TEST_TOKEN = 'test-token-0123456789abcdef';
export const OTHER_TOKEN = 'other-token-0123456789abcdef';
