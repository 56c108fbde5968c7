import type { onRequestHookHandler } from 'fastify';
import { ProblemError } from '../errors.js';
import { sendProblem, toProblem } from './problem.js';

/** Retry-After (seconds) on the 503 a request gets while the service shuts down: another replica answers. */
const SHUTDOWN_RETRY_AFTER_S = 1;

/** Whether the service is shutting down: set once, by the connection guard's `beginShutdown` (SIGTERM, or `app.close()` alone). */
export interface ShutdownState {
  shuttingDown: boolean;
}

/**
 * The first thing every request meets once shutdown began: a 503 `CC_SHUTTING_DOWN` with
 * `Connection: close`, so a pipelined caller retries elsewhere. Before that, it lets the
 * request through.
 */
export function refuseWhileShuttingDown(state: Readonly<ShutdownState>): onRequestHookHandler {
  return (request, reply, done) => {
    if (state.shuttingDown) {
      const problem = new ProblemError('CC_SHUTTING_DOWN', 'The service is shutting down; retry, and another instance will answer.');
      sendProblem(reply, toProblem(problem, request), { 'retry-after': String(SHUTDOWN_RETRY_AFTER_S), connection: 'close' });
      return;
    }
    done();
  };
}
