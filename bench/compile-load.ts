/**
 * Concurrent `POST /compile` load over keep-alive connections: what the fsyncs measurement
 * (bench/fsyncs-per-request.ts) and the crash and group-commit tests drive a server with.
 */
import { Pool } from 'undici';

export const LOAD_NOW = '2026-11-30T17:20:00Z';

/** A valid worker turn for the example brain, with the caller's run id. */
export function turnPayload(runId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    phase: 'turn',
    surface: 'chat',
    worker: 'scribe',
    channelId: 'general',
    message: `Please tighten the sign-off of email ${runId}.`,
    now: LOAD_NOW,
    runId,
    ...overrides,
  };
}

export interface CompileOutcome {
  runId: string;
  /** HTTP status, or 0 when the request failed without an answer (connection reset by a kill). */
  status: number;
  promptSha256?: string;
  inputSha256?: string | null;
  code?: string;
  /** Why a request failed without an answer (status 0). */
  error?: string;
}

export interface CompileLoad {
  /** Outcomes in the order answers arrived; grows while the load runs. */
  outcomes: CompileOutcome[];
  inFlight(): number;
  /** Stop issuing new requests; those in flight still settle. */
  stop(): void;
  done: Promise<void>;
}

/**
 * Drives `POST /compile` with `concurrency` callers, each sending its next request as soon
 * as the previous one is answered, until `total` were sent or `stop()` is called.
 */
export function driveCompiles(
  pool: Pool,
  options: { concurrency: number; total: number; payload(i: number): Record<string, unknown>; headers?: Record<string, string> },
): CompileLoad {
  const outcomes: CompileOutcome[] = [];
  let next = 0;
  let inFlight = 0;
  let stopped = false;
  async function caller(): Promise<void> {
    while (!stopped && next < options.total) {
      const payload = options.payload(next++);
      const runId = String(payload['runId']);
      inFlight++;
      try {
        const response = await pool.request({
          method: 'POST',
          path: '/compile',
          headers: { 'content-type': 'application/json', ...options.headers },
          body: JSON.stringify(payload),
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        const body = (await response.body.json()) as Record<string, unknown>;
        const outcome: CompileOutcome = { runId, status: response.statusCode };
        if (response.statusCode === 200) {
          outcome.promptSha256 = body['promptSha256'] as string;
          outcome.inputSha256 = body['inputSha256'] as string | null;
        } else outcome.code = body['code'] as string;
        outcomes.push(outcome);
      } catch (error) {
        outcomes.push({ runId, status: 0, error: String(error) });
        // The server is gone: this caller stops.
        stopped = true;
      } finally {
        inFlight--;
      }
    }
  }
  const done = Promise.all(Array.from({ length: options.concurrency }, () => caller())).then(() => undefined);
  return {
    outcomes,
    inFlight: () => inFlight,
    stop: () => {
      stopped = true;
    },
    done,
  };
}

export function newPool(origin: string, connections: number): Pool {
  return new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 10_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
}
