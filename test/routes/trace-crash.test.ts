import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyExampleBrain, tempDir } from '../helpers/app.js';
import { driveCompiles, newPool, turnPayload, type CompileOutcome } from '../../bench/compile-load.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { HEAVY_TEST_MS, LOAD_BOUND_MS } from '../helpers/bounds.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface TraceEvent {
  status: number;
  outcome: string;
  promptSha256?: string;
  inputSha256?: string | null;
  systemPrompt: string | null;
  inputPrompt: string | null;
  verified: boolean | null;
  error?: { code: string };
}

async function stopped(server: ServerProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await server.exited;
}

describe('a server killed with SIGKILL while compiles are in flight', () => {
  it('has a readable, verified trace for every run that had received an answer, after a restart on the same TRACE_DIR', async () => {
    const env = {
      PORT: '0',
      HOST: '127.0.0.1',
      BRAIN_ROOT: await copyExampleBrain(),
      TRACE_DIR: join(await tempDir('cc-crash-'), 'traces'),
      RATE_LIMIT_MAX: '100000',
      // Every answer must be a 200 or a 404; a server sharing busy cores with its load would also shed some (503).
      PRESSURE_MAX_EVENT_LOOP_DELAY: '0',
      LOG_LEVEL: 'info',
    };
    const first = startServer(env);
    let second: ServerProcess | null = null;
    try {
      const port = await first.listening();
      const pool = newPool(`http://127.0.0.1:${port}`, 32);
      // Every 10th request names a worker that does not exist: failures must survive too.
      const load = driveCompiles(pool, {
        concurrency: 32,
        total: 600,
        payload: (i) => turnPayload(`crash-${i}`, i % 10 === 9 ? { worker: 'ghost' } : {}),
      });
      const deadline = Date.now() + LOAD_BOUND_MS;
      while (load.outcomes.length < 250 && Date.now() < deadline && first.child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const inFlightAtKill = load.inFlight();
      first.child.kill('SIGKILL');
      load.stop();
      expect(await first.exited).toBeNull();
      expect(first.child.signalCode).toBe('SIGKILL');
      await load.done;
      await pool.destroy();
      expect(inFlightAtKill).toBeGreaterThan(0);

      const answered = load.outcomes.filter((outcome) => outcome.status !== 0);
      const delivered = answered.filter((outcome) => outcome.status === 200);
      const failed = answered.filter((outcome) => outcome.status === 404);
      expect(answered).toHaveLength(delivered.length + failed.length);
      expect(delivered.length).toBeGreaterThan(100);
      expect(failed.length).toBeGreaterThan(5);

      second = startServer(env);
      const restarted = newPool(`http://127.0.0.1:${await second.listening()}`, 8);
      try {
        const missing: string[] = [];
        const wrong: Array<{ outcome: CompileOutcome; events: TraceEvent[] }> = [];
        const queue = [...answered];
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (let outcome = queue.shift(); outcome; outcome = queue.shift()) {
              const response = await restarted.request({ method: 'GET', path: `/runs/${outcome.runId}/trace` });
              if (response.statusCode !== 200) {
                await response.body.dump();
                missing.push(outcome.runId);
                continue;
              }
              const events = ((await response.body.json()) as { events: TraceEvent[] }).events;
              const [event] = events;
              const good =
                events.length === 1 &&
                event !== undefined &&
                (outcome.status === 200
                  ? event.outcome === 'delivered' &&
                    event.verified === true &&
                    event.promptSha256 === outcome.promptSha256 &&
                    event.inputSha256 === outcome.inputSha256 &&
                    sha256(event.systemPrompt ?? '') === outcome.promptSha256
                  : event.outcome === 'failed' && event.status === 404 && event.error?.code === outcome.code);
              if (!good) wrong.push({ outcome, events });
            }
          }),
        );
        expect(missing).toEqual([]);
        expect(wrong).toEqual([]);

        // The restarted server keeps tracing on the same directory.
        const after = await restarted.request({
          method: 'POST',
          path: '/compile',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(turnPayload('after-restart')),
        });
        expect(after.statusCode).toBe(200);
        await after.body.dump();
        const trace = await restarted.request({ method: 'GET', path: '/runs/after-restart/trace' });
        expect(((await trace.body.json()) as { events: TraceEvent[] }).events[0]?.verified).toBe(true);
      } finally {
        await restarted.close();
      }
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      await stopped(first);
      if (second) await stopped(second);
    }
  }, HEAVY_TEST_MS);
});
