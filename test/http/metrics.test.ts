import { describe, expect, it } from 'vitest';
import { CACHE_AREAS, createCaches } from '../../src/caches.js';
import { createMetrics } from '../../src/http/metrics.js';
import { parseExposition, sampleOf, valueOf } from '../helpers/metrics.js';

describe('metrics', () => {
  it('renders every series of the service once, in a text the exposition format parses', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.requests.inc({ route: '/healthz', method: 'GET', status: '200' });
    metrics.compileFailures.inc({ route: 'POST /compile', code: 'CC_NOT_FOUND' });
    const families = parseExposition(await metrics.render());
    for (const name of [
      'cc_http_requests_total',
      'cc_http_request_duration_seconds',
      'cc_compile_failures_total',
      'cc_compile_read_duration_seconds',
      'cc_compile_duration_seconds',
      'cc_redactions_total',
      'cc_trace_write_duration_seconds',
      'cc_trace_commits_total',
      'cc_trace_batch_duration_seconds',
      'cc_trace_batch_events',
      'cc_http_connections_shed_total',
    ]) {
      expect(families.has(name), name).toBe(true);
    }
    expect(sampleOf(families, 'cc_compile_failures_total', { route: 'POST /compile', code: 'CC_NOT_FOUND' })).toBe(1);
  });

  it('keeps a registry per instance: two apps never count each other’s requests', async () => {
    const first = createMetrics({ defaultMetrics: false });
    const second = createMetrics({ defaultMetrics: false });
    first.requests.inc({ route: '/healthz', method: 'GET', status: '200' });
    expect(await valueOf(first.requests, { route: '/healthz', method: 'GET', status: '200' })).toBe(1);
    expect(await valueOf(second.requests, { route: '/healthz', method: 'GET', status: '200' })).toBe(0);
  });

  it('escapes label values so a route pattern cannot break the exposition', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.requests.inc({ route: 'a"b\\c\nd', method: 'GET', status: '404' });
    const families = parseExposition(await metrics.render());
    expect(sampleOf(families, 'cc_http_requests_total', { route: 'a"b\\c\nd', method: 'GET', status: '404' })).toBe(1);
  });

  it('reads the cache set’s hits, misses and bytes when scraped', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const caches = createCaches({ maxBytes: 1_000_000 });
    metrics.collectCaches(() => caches.stats());
    const minutes = caches.sources.personaMinutes;
    minutes.get('absent');
    minutes.set('mars', { minutes: [] }, 300);
    minutes.get('mars');
    minutes.get('mars');
    const families = parseExposition(await metrics.render());
    const area = { area: 'sources.personaMinutes' };
    expect(sampleOf(families, 'cc_cache_hits_total', area)).toBe(2);
    expect(sampleOf(families, 'cc_cache_misses_total', area)).toBe(1);
    expect(sampleOf(families, 'cc_cache_entries', area)).toBe(1);
    expect(sampleOf(families, 'cc_cache_bytes', area)).toBe(300);
    expect(sampleOf(families, 'cc_cache_max_bytes', area)).toBe(Math.floor(1_000_000 * CACHE_AREAS.sources.personaMinutes.share));
  });

  it('the test reader refuses what the format forbids', () => {
    expect(() => parseExposition('a_total 1')).toThrow(/newline/);
    expect(() => parseExposition('# HELP a_total A.\n# TYPE a_total counter\nb_total 1\n')).toThrow(/outside its family/);
    expect(() => parseExposition('# HELP a A.\n# TYPE a gauge\na{x="1} 1\n')).toThrow(/not a sample line/);
    expect(() =>
      parseExposition('# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'),
    ).toThrow(/cumulative/);
  });
});
