import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { overloadReason, resolvePressureLimits } from '../../src/http/pressure.js';
import { buildTestApp } from '../helpers/app.js';
import { parseExposition, sampleOf } from '../helpers/metrics.js';

const PROBLEM = /^application\/problem\+json/;
const NOW = '2026-11-30T17:20:00Z';

/** Blocks this process's event loop (the app runs in it) for `ms`. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Polls (bounded: 200 × 25 ms) until the app's last sample is over a threshold, or under all of them. */
async function until(app: FastifyInstance, overloaded: boolean): Promise<void> {
  for (let i = 0; i < 200 && app.isUnderPressure() !== overloaded; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(app.isUnderPressure()).toBe(overloaded);
}

async function expectShed(app: FastifyInstance, threshold: RegExp) {
  const shed = await app.inject(`/context/mars?now=${NOW}`);
  expect(shed.statusCode).toBe(503);
  expect(shed.headers['content-type']).toMatch(PROBLEM);
  expect(shed.headers['retry-after']).toBe('2');
  expect(shed.headers['x-run-id']).toBeUndefined();
  expect(shed.json()).toMatchObject({ code: 'CC_OVERLOADED', status: 503, title: 'Overloaded', detail: expect.stringMatching(threshold) });
  return shed;
}

describe('load shedding', () => {
  it('over the heap threshold: every route but the probes and /metrics answers 503 CC_OVERLOADED at once, /readyz says why, /healthz stays 200', async () => {
    // Any process holds more than 1 MiB of heap, so the first sample is over the threshold.
    const built = await buildTestApp({ PRESSURE_MAX_HEAP_USED: '1048576', PRESSURE_MAX_EVENT_LOOP_DELAY: '0', PRESSURE_SAMPLE_INTERVAL: '100ms' });
    const { app } = built;
    await until(app, true);

    await expectShed(app, /heap in use [\d.]+ MB is over PRESSURE_MAX_HEAP_USED \(1\.0 MB\)/);
    const compile = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'turn', surface: 'chat', worker: 'scribe', message: 'hi' } });
    expect(compile.statusCode).toBe(503);
    expect(compile.json().code).toBe('CC_OVERLOADED');
    // Refused before anything was read, compiled or traced.
    expect(app.traces.stats().appends).toBe(0);

    expect((await app.inject('/healthz')).statusCode).toBe(200);
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'CC_NOT_READY', detail: expect.stringMatching(/load: heap in use/) });
    expect(ready.json().checks).toContainEqual({ name: 'load', ok: false, reason: expect.stringMatching(/PRESSURE_MAX_HEAP_USED/) });

    const metrics = await app.inject('/metrics');
    expect(metrics.statusCode).toBe(200);
    const families = parseExposition(metrics.body);
    expect(sampleOf(families, 'cc_http_requests_shed_total', { reason: 'heapUsedBytes' })).toBe(2);
    expect(sampleOf(families, 'cc_http_requests_total', { route: '/context/:persona', method: 'GET', status: '503' })).toBe(1);
    // A shed request is expected under load: no error line with a stack for each, and its request line says why.
    await new Promise((resolve) => setImmediate(resolve));
    expect(built.logs.filter((line) => line['msg'] === 'request failed')).toEqual([]);
    const shedLines = built.logs.filter((line) => line['msg'] === 'request' && line['status'] === 503);
    expect(shedLines.map((line) => line['code'])).toEqual(['CC_OVERLOADED', 'CC_OVERLOADED', 'CC_NOT_READY']);
  });

  it('over the event-loop delay threshold after the loop was blocked: shed, and /readyz names the delay', async () => {
    const { app } = await buildTestApp({ PRESSURE_MAX_EVENT_LOOP_DELAY: '5ms', PRESSURE_MAX_HEAP_USED: '0', PRESSURE_SAMPLE_INTERVAL: '1s' });
    // A sample spanning a 1.5 s block has a mean delay over 14 ms, however its 1 s window falls.
    busy(1500);
    await until(app, true);
    // (A sample taken before the loop measured its first tick after the block reads as longer than the sample.)
    await expectShed(app, /event-loop delay (\d+ ms|longer than the last sample \(1000 ms\)) is over PRESSURE_MAX_EVENT_LOOP_DELAY \(5 ms\)/);
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks).toContainEqual({ name: 'load', ok: false, reason: expect.stringMatching(/PRESSURE_MAX_EVENT_LOOP_DELAY/) });
  });

  it('over the event-loop utilisation threshold: shed while it lasts, then serves again without a restart', async () => {
    const { app } = await buildTestApp({
      PRESSURE_MAX_EVENT_LOOP_UTILIZATION: '0.5',
      PRESSURE_MAX_EVENT_LOOP_DELAY: '0',
      PRESSURE_MAX_HEAP_USED: '0',
      PRESSURE_SAMPLE_INTERVAL: '1s',
    });
    expect((await app.inject(`/context/mars?now=${NOW}`)).statusCode).toBe(200);
    // The sample after a 1.5 s block covers at most 1 s before it: the loop was busy for at least 60 % of it.
    busy(1500);
    await until(app, true);
    await expectShed(app, /event-loop utilisation [01]\.\d{3} is over PRESSURE_MAX_EVENT_LOOP_UTILIZATION \(0\.5\)/);
    // The next sample sees an idle loop.
    await until(app, false);
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    expect((await app.inject(`/context/mars?now=${NOW}`)).statusCode).toBe(200);
  });

  it('is on by default for the event-loop delay and the heap (auto: 90 % of the V8 heap limit), off for utilisation', async () => {
    expect(loadConfig({}).pressure).toEqual({ maxEventLoopDelayMs: 200, maxEventLoopUtilization: 0, maxHeapUsedBytes: null, sampleIntervalMs: 1000 });
    const { app } = await buildTestApp({ PRESSURE_MAX_EVENT_LOOP_DELAY: '200ms' });
    const ready = await app.inject('/readyz');
    expect(ready.json().checks).toContainEqual({ name: 'load', ok: true });
  });
});

describe('overloadReason', () => {
  const limits = { maxEventLoopDelayMs: 200, maxEventLoopUtilization: 0.9, maxHeapUsedBytes: 100 * 1024 * 1024, sampleIntervalMs: 1000 };
  const calm = { eventLoopDelay: 3, eventLoopUtilized: 0.4, heapUsed: 20 * 1024 * 1024 };

  it('names the first threshold a sample is over, and nothing when it is under all of them', () => {
    expect(overloadReason(calm, limits)).toBeNull();
    expect(overloadReason({ ...calm, eventLoopDelay: 250.4 }, limits)).toBe('event-loop delay 250 ms is over PRESSURE_MAX_EVENT_LOOP_DELAY (200 ms)');
    expect(overloadReason({ ...calm, eventLoopDelay: Infinity }, limits)).toBe('event-loop delay longer than the last sample (1000 ms) is over PRESSURE_MAX_EVENT_LOOP_DELAY (200 ms)');
    expect(overloadReason({ ...calm, heapUsed: 150 * 1024 * 1024 }, limits)).toBe('heap in use 150.0 MB is over PRESSURE_MAX_HEAP_USED (100.0 MB)');
    expect(overloadReason({ ...calm, eventLoopUtilized: 0.95 }, limits)).toBe('event-loop utilisation 0.950 is over PRESSURE_MAX_EVENT_LOOP_UTILIZATION (0.9)');
  });

  it('ignores a threshold of 0 (off), and resolves auto to 90 % of the heap limit', () => {
    const off = { maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0, maxHeapUsedBytes: 0, sampleIntervalMs: 1000 };
    expect(overloadReason({ eventLoopDelay: Infinity, eventLoopUtilized: 1, heapUsed: 1e12 }, off)).toBeNull();
    expect(resolvePressureLimits({ ...off, maxHeapUsedBytes: null }, 200 * 1024 * 1024).maxHeapUsedBytes).toBe(Math.floor(180 * 1024 * 1024));
  });
});
