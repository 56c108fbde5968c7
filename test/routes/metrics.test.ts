import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/app.js';
import { parseExposition, sampleOf } from '../helpers/metrics.js';

const NOW = '2026-11-30T17:20:00Z';

async function scrape(app: Awaited<ReturnType<typeof buildTestApp>>['app']) {
  const response = await app.inject('/metrics');
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(response.body);
}

describe('GET /metrics', () => {
  it('is Prometheus text with the process’s default series and ours, and the values move with requests', async () => {
    const { app } = await buildTestApp();
    const before = await scrape(app);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_open_fds',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_gc_duration_seconds',
      'nodejs_active_handles_total',
    ]) {
      expect(before.has(name), name).toBe(true);
    }
    expect(sampleOf(before, 'cc_http_requests_total', { route: '/context/:persona', method: 'GET', status: '200' })).toBe(0);

    const first = await app.inject(`/context/mars?now=${NOW}`);
    const second = await app.inject(`/context/mars?now=${NOW}`);
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect((await app.inject('/context/nobody')).statusCode).toBe(404);

    const after = await scrape(app);
    const route = { route: '/context/:persona', method: 'GET' };
    expect(sampleOf(after, 'cc_http_requests_total', { ...route, status: '200' })).toBe(2);
    expect(sampleOf(after, 'cc_http_requests_total', { ...route, status: '404' })).toBe(1);
    expect(sampleOf(after, 'cc_http_request_duration_seconds_count', { ...route, status: '200' })).toBe(2);
    // An unknown persona is refused before anything is read or traced: no compile, no label per name.
    expect(sampleOf(after, 'cc_compile_failures_total', { route: 'GET /context/nobody', code: 'CC_NOT_FOUND' })).toBe(0);
    // Both deliveries read the brain and compiled; the second got the first one's result (same minute).
    expect(sampleOf(after, 'cc_compile_read_duration_seconds_count', { route: 'GET /context/mars' })).toBe(2);
    expect(sampleOf(after, 'cc_compile_duration_seconds_count', { route: 'GET /context/mars' })).toBe(2);
    expect(sampleOf(after, 'cc_cache_hits_total', { area: 'sources.personaMinutes' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(after, 'cc_cache_hits_total', { area: 'brain.files' })).toBeGreaterThan(0);
    // Two deliveries traced, in one or two group commits.
    expect(sampleOf(after, 'cc_trace_batch_events_sum', { backend: 'files' })).toBe(2);
    expect(sampleOf(after, 'cc_trace_appends_total', { backend: 'files', result: 'durable' })).toBe(2);
    expect(sampleOf(after, 'cc_trace_appends_total', { backend: 'files', result: 'rejected' })).toBe(0);
    expect(sampleOf(after, 'cc_trace_failures_total', { backend: 'files' })).toBe(0);
    expect(sampleOf(after, 'cc_trace_write_duration_seconds_count', { result: 'ok' })).toBe(2);
    const { email, phone } = first.json().redactions as { email: number; phone: number };
    expect(sampleOf(after, 'cc_redactions_total', { kind: 'email' })).toBe(2 * email);
    expect(sampleOf(after, 'cc_redactions_total', { kind: 'phone' })).toBe(2 * phone);
    expect(sampleOf(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sampleOf(after, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });
});
