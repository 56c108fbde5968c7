import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { compile, DEFAULT_POLICY } from '../../src/core/index.js';
import { createAnswerEncoder } from '../../src/http/answer.js';
import { deliverJob, readClock } from '../../src/http/deliver.js';
import { ProblemError } from '../../src/errors.js';
import type { CompileJob, JobRead } from '../../src/sources/job.js';
import { CompiledFieldsSchema, CompiledResponseSchema } from '../../schemas/compiled.js';
import { tempDir } from '../helpers/app.js';

const NOW = new Date('2026-11-30T17:05:00Z');

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** The app with one extra route that delivers `job` as a worker compile, so a test can hand delivery any job. */
async function appDelivering(job: () => CompileJob) {
  // As buildTestApp does: a delay of the test's own event loop (a busy machine) is not the app's load, so no shedding by delay.
  const config = loadConfig({ LOG_LEVEL: 'silent', PRESSURE_MAX_EVENT_LOOP_DELAY: '0', TRACE_DIR: join(await tempDir('cc-traces-'), 'traces') });
  const app = await buildApp(config, { warmUp: false });
  // A worker compile's answer without the worker job's own extras (recall, receipts): this job has none.
  const answer = createAnswerEncoder(CompiledResponseSchema.omit({ recall: true, receipts: true }), CompiledFieldsSchema);
  app.post('/test-job', async (request, reply) =>
    deliverJob(
      request,
      reply,
      deepFreeze({
        route: 'POST /test-job',
        runId: 'job-run',
        newRun: false,
        subject: { kind: 'worker' as const, id: 'tester' },
        surface: 'chat',
        identifiers: { worker: 'tester', phase: 'start' },
        options: { given: true },
        format: 'json' as const,
        clock: readClock(),
        answer,
      }),
      job(),
    ),
  );
  await app.ready();
  cleanup.push(() => app.close());
  return app;
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

const compiled = () =>
  compile({
    subject: { kind: 'worker', id: 'tester' },
    surface: 'chat',
    phase: 'start',
    policy: DEFAULT_POLICY,
    clock: { now: NOW, timeZone: 'UTC' },
    identity: { source: 'test:identity', text: 'You are a tester.' },
  });

describe('deliverJob', () => {
  it('merges what a job returns without changing it: its warnings and resolved options, frozen, reach the answer and the trace', async () => {
    const result = deepFreeze({ compiled: compiled(), shared: true as const });
    const read: JobRead = deepFreeze({ warnings: ['one source degraded'], resolved: { operatorTimezone: 'UTC' }, compile: () => result });
    const app = await appDelivering(() => ({ read: async () => read }));
    for (let round = 0; round < 2; round++) {
      const response = await app.inject({ method: 'POST', url: '/test-job' });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ runId: 'job-run', worker: 'tester', warnings: ['one source degraded'], phase: 'start', surface: 'chat' });
    }
    const trace = (await app.inject('/runs/job-run/trace')).json();
    expect(trace.events).toHaveLength(2);
    for (const event of trace.events) {
      expect(event.request).toMatchObject({ worker: 'tester', given: true, operatorTimezone: 'UTC', format: 'json' });
      expect(event.warnings).toEqual(['one source degraded']);
    }
  });

  it('traces a job that throws while reading as a failed delivery, with the request’s options and nothing resolved', async () => {
    const app = await appDelivering(() => ({
      read: async () => {
        throw new ProblemError('CC_NOT_FOUND', 'No tester here.');
      },
    }));
    const response = await app.inject({ method: 'POST', url: '/test-job' });
    expect(response.statusCode).toBe(404);
    expect(response.headers['x-run-id']).toBe('job-run');
    const [event] = (await app.inject('/runs/job-run/trace')).json().events;
    expect(event).toMatchObject({ outcome: 'failed', status: 404, error: { code: 'CC_NOT_FOUND' } });
    expect(event.request).toEqual({ worker: 'tester', phase: 'start', given: true, format: 'json', conditional: false });
  });

  it('stamps the event from the request’s one clock reading: at is never before the request began', async () => {
    const before = Date.now();
    const app = await appDelivering(() => ({ read: async () => ({ warnings: [], resolved: {}, compile: () => ({ compiled: compiled() }) }) }));
    await app.inject({ method: 'POST', url: '/test-job' });
    const [event] = (await app.inject('/runs/job-run/trace')).json().events;
    expect(Date.parse(event.at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(event.at)).toBeLessThanOrEqual(Date.now());
    expect(event.timing.untilTraceMs).toBeGreaterThanOrEqual(0);
  });
});
