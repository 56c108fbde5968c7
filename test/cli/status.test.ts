/**
 * `context-compiler status`: readiness from /readyz, the compile failures and the connects
 * answered without a session from /metrics (read by a linear parser of the series it needs),
 * and a non-zero exit when the service is not ready or cannot be reached.
 */
import { describe, expect, it } from 'vitest';
import { countsOf, formatCounts } from '../../src/cli/status-command.js';
import { samplesOf } from '../../src/cli/metrics-text.js';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';
import { cli, cliProcess } from '../helpers/cli.js';
const NAMES = new Set(['cc_http_requests_total', 'cc_compile_failures_total']);

describe('the metrics text parser', () => {
  it('reads the named series with their labels (escapes included) and skips comments, other series and lines that do not parse', () => {
    const text = [
      '# HELP cc_http_requests_total HTTP requests by route, method and status.',
      '# TYPE cc_http_requests_total counter',
      'cc_http_requests_total{route="/context/:persona",method="GET",status="200"} 12',
      'cc_http_requests_total{route="/a \\"quoted\\", {braced} \\\\ path\\n",method="GET",status="404"} 3 1796207789043',
      'cc_http_requests_total_other{route="/compile"} 9',
      'cc_compile_failures_total{route="/compile",code="CC_INTERNAL"} 2',
      'cc_compile_failures_total{route="/compile",code="CC_BUDGET_EXCEEDED"',
      'cc_compile_failures_total{route="/compile",code="CC_X"} NaN',
      'cc_compile_failures_total 1e3',
      'nodejs_heap_size_used_bytes 123',
    ].join('\n');
    expect(samplesOf(text, NAMES)).toEqual([
      { name: 'cc_http_requests_total', labels: { route: '/context/:persona', method: 'GET', status: '200' }, value: 12 },
      { name: 'cc_http_requests_total', labels: { route: '/a "quoted", {braced} \\ path\n', method: 'GET', status: '404' }, value: 3 },
      { name: 'cc_compile_failures_total', labels: { route: '/compile', code: 'CC_INTERNAL' }, value: 2 },
      { name: 'cc_compile_failures_total', labels: {}, value: 1000 },
    ]);
  });

  it('skips a long hostile line (an unclosed quote after a run of escapes, a run of empty labels, a run of braces) and reads the next sample', () => {
    for (const hostile of [`cc_compile_failures_total{code="${'\\"'.repeat(200_000)}`, `cc_http_requests_total{${'a="",'.repeat(100_000)}`, `cc_http_requests_total${'{'.repeat(200_000)}`]) {
      const samples = samplesOf(`${hostile}\ncc_compile_failures_total{code="CC_INTERNAL"} 1\n`, NAMES);
      expect(samples.at(-1)).toEqual({ name: 'cc_compile_failures_total', labels: { code: 'CC_INTERNAL' }, value: 1 });
    }
  });

  it('counts compile failures against requests to the compile routes, and connects answered 4xx or 5xx as fallbacks', () => {
    const counts = countsOf(
      samplesOf(
        [
          'cc_http_requests_total{route="/context/:persona",method="GET",status="200"} 8',
          'cc_http_requests_total{route="/context/:persona",method="GET",status="304"} 4',
          'cc_http_requests_total{route="/context/:persona",method="GET",status="503"} 2',
          'cc_http_requests_total{route="/context/:persona",method="GET",status="404"} 1',
          'cc_http_requests_total{route="/compile",method="POST",status="500"} 1',
          'cc_http_requests_total{route="/compile",method="POST",status="422"} 4',
          'cc_http_requests_total{route="/metrics",method="GET",status="200"} 50',
          'cc_compile_failures_total{route="/compile",code="CC_INTERNAL"} 1',
          'cc_compile_failures_total{route="/compile",code="CC_BUDGET_EXCEEDED"} 4',
          'cc_compile_failures_total{route="/context/:persona",code="CC_TRACE_UNAVAILABLE"} 2',
        ].join('\n'),
        NAMES,
      ),
    );
    expect(counts).toEqual({ compiles: { requests: 20, failures: 7, byCode: { CC_INTERNAL: 1, CC_BUDGET_EXCEEDED: 4, CC_TRACE_UNAVAILABLE: 2 } }, connects: { requests: 15, withoutSession: 3 } });
    expect(formatCounts(counts)[0]).toBe('compile failures: 7 of 20 requests to compile routes (35.0 %): CC_BUDGET_EXCEEDED 4, CC_INTERNAL 1, CC_TRACE_UNAVAILABLE 2');
    expect(formatCounts(counts)[1]).toMatch(/^connect fallbacks: 3 of 15 connects answered without a session \(20\.0 %\)/);
  });
});

describe('context-compiler status', () => {
  it('prints readiness, the compile failures and the connect fallbacks of a ready service, and exits 0', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const authorization = `Bearer ${TEST_TOKEN}`;
    expect((await app.inject({ url: '/context/mars', headers: { authorization } })).statusCode).toBe(200);
    // An unknown persona: the voice server connects as its default persona instead.
    expect((await app.inject({ url: '/context/jupiter', headers: { authorization } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: '/compile', headers: { authorization }, payload: { phase: 'start', surface: 'chat', worker: 'nobody' } })).statusCode).toBe(404);
    const result = await cli(['status', '--url', baseUrl], { CONTEXT_COMPILER_TOKEN: TEST_TOKEN });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`the service at ${baseUrl}: ready`);
    // The unknown persona is refused before any compile: a fallback, not a compile failure.
    expect(lines[2]).toBe('compile failures: 1 of 3 requests to compile routes (33.3 %): CC_NOT_FOUND 1');
    expect(lines[3]).toMatch(/^connect fallbacks: 1 of 2 connects answered without a session \(50\.0 %\)/);
    const json = await cli(['status', '--json'], { CONTEXT_COMPILER_URL: baseUrl, CONTEXT_COMPILER_TOKEN: TEST_TOKEN });
    expect(JSON.parse(json.stdout)).toMatchObject({ url: baseUrl, ready: true, compiles: { requests: 3, failures: 1 }, connects: { requests: 2, withoutSession: 1 } });
    // Without the token /metrics refuses; readiness is still said.
    const refused = await cli(['status', '--url', baseUrl]);
    expect(refused.code).toBe(0);
    expect(refused.stdout).toContain('compile failures and connect fallbacks: unknown (/metrics: 401 ');
  });

  it('exits 1 naming the failing check when the service is not ready, and when nothing answers', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: '/nonexistent/brain' });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const result = await cli(['status', '--url', baseUrl]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`the service at ${baseUrl}: NOT READY`);
    expect(result.stdout).toMatch(/^ {2}brain: /m);
    await app.close();
    // The bin, as a process: the status it exits with.
    const gone = await cliProcess(['status', '--url', baseUrl]);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toBe('');
    expect(gone.stderr).toMatch(/^context-compiler: /);
  });

  it('takes no argument and only its own options (exit 2)', async () => {
    const [extra, option] = await Promise.all([cli(['status', 'now']), cli(['status', '--dir', '/tmp'])]);
    expect([extra.code, option.code]).toEqual([2, 2]);
    expect(option.stderr).toContain('--dir is not an option of status');
  });
});
