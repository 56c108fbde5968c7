import { describe, expect, it } from 'vitest';
import { Counter, createMetrics, Histogram } from '../../src/http/metrics.js';

describe('metrics', () => {
  it('counts per label set, whatever order the labels are given in, and renders names sorted', () => {
    const counter = new Counter('c_total', 'Things.', ['route', 'method', 'status']);
    counter.inc({ route: '/a', method: 'GET', status: '200' });
    counter.inc({ status: '200', method: 'GET', route: '/a' });
    counter.inc({ route: '/a', method: 'GET', status: '404' }, 3);
    expect(counter.get({ method: 'GET', route: '/a', status: '200' })).toBe(2);
    expect(counter.get({ route: '/a', method: 'GET', status: '404' })).toBe(3);
    expect(counter.get({ route: '/b', method: 'GET', status: '200' })).toBe(0);
    expect(counter.render()).toBe(
      ['# HELP c_total Things.', '# TYPE c_total counter', 'c_total{method="GET",route="/a",status="200"} 2', 'c_total{method="GET",route="/a",status="404"} 3'].join('\n'),
    );
  });

  it('escapes label values and keeps values that only differ in escaping apart', () => {
    const counter = new Counter('c_total', 'Things.', ['route']);
    counter.inc({ route: 'a"b\\c\nd' });
    counter.inc({ route: 'a\\"b\\c\nd' });
    expect(counter.render().split('\n').slice(2)).toEqual(['c_total{route="a\\"b\\\\c\\nd"} 1', 'c_total{route="a\\\\\\"b\\\\c\\nd"} 1']);
  });

  it('counts without labels', () => {
    const counter = new Counter('plain_total', 'Plain.');
    expect(counter.get()).toBe(0);
    counter.inc();
    counter.inc({}, 2);
    expect(counter.render().split('\n')[2]).toBe('plain_total 3');
  });

  it('fills histogram buckets cumulatively with sum and count per label set', () => {
    const histogram = new Histogram('h_seconds', 'Latency.', ['result'], [0.1, 1]);
    histogram.observe({ result: 'ok' }, 0.05);
    histogram.observe({ result: 'ok' }, 0.5);
    histogram.observe({ result: 'ok' }, 5);
    histogram.observe({ result: 'error' }, 1);
    expect(histogram.count({ result: 'ok' })).toBe(3);
    expect(histogram.count({ result: 'missing' })).toBe(0);
    expect(histogram.render().split('\n').slice(2)).toEqual([
      'h_seconds_bucket{result="ok",le="0.1"} 1',
      'h_seconds_bucket{result="ok",le="1"} 2',
      'h_seconds_bucket{result="ok",le="+Inf"} 3',
      'h_seconds_sum{result="ok"} 5.55',
      'h_seconds_count{result="ok"} 3',
      'h_seconds_bucket{result="error",le="0.1"} 0',
      'h_seconds_bucket{result="error",le="1"} 1',
      'h_seconds_bucket{result="error",le="+Inf"} 1',
      'h_seconds_sum{result="error"} 1',
      'h_seconds_count{result="error"} 1',
    ]);
  });

  it('renders every metric of the service, each once', () => {
    const metrics = createMetrics();
    metrics.requests.inc({ route: '/healthz', method: 'GET', status: '200' });
    metrics.compileFailures.inc({ route: 'POST /compile', code: 'CC_NOT_FOUND' });
    const text = metrics.render();
    for (const name of ['cc_http_requests_total', 'cc_http_request_duration_seconds', 'cc_compile_failures_total', 'cc_trace_write_duration_seconds', 'cc_trace_commits_total']) {
      expect(text.split(`# TYPE ${name} `)).toHaveLength(2);
    }
    expect(text).toContain('cc_compile_failures_total{code="CC_NOT_FOUND",route="POST /compile"} 1');
    expect(text.endsWith('\n')).toBe(true);
  });
});
