/**
 * The client counts its fallbacks (`fallbackCounts()`), so a voice server exports them as its
 * own `cc_client_fallbacks_total` (the series docker/prometheus/alerts.yml pages on): every
 * fallback of `realtimeSession()` and `geminiSetup()`, whatever `onFallback` is in force, by
 * the persona served, the source and the reason. Real listening servers on port 0.
 */
import { Counter, Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient } from '../../packages/client/src/index.js';
import { buildTestApp } from '../helpers/app.js';
import { downService } from '../helpers/ports.js';

function client(options: Parameters<typeof createClient>[0]) {
  const instance = createClient(options);
  onTestFinished(() => instance.close());
  return instance;
}

const GENEROUS = 60_000;

describe('fallbackCounts()', () => {
  it('counts every fallback by persona served, source and reason — with a per-call onFallback, one that throws, or none — and nothing for a call the service served', async () => {
    const told: string[] = [];
    const api = client({ baseUrl: await downService(), timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS, onFallback: ({ servedAs }) => told.push(servedAs) } });
    expect(api.fallbackCounts()).toEqual([]);
    await api.realtimeSession('mars');
    await api.realtimeSession('mars', {}, { onFallback: () => undefined });
    await api.realtimeSession('venus', {}, {
      onFallback: () => {
        throw new Error('a broken hook');
      },
    });
    await api.geminiSetup('venus');
    expect(told).toEqual(['mars', 'venus']);
    expect(api.fallbackCounts()).toEqual([
      { servedAs: 'mars', source: 'static', reason: 'network', count: 2 },
      { servedAs: 'venus', source: 'static', reason: 'network', count: 2 },
    ]);
    // A copy: the caller cannot change the counts.
    api.fallbackCounts()[0]!.count = 99;
    expect(api.fallbackCounts()[0]!.count).toBe(2);

    const { app } = await buildTestApp();
    const healthy = client({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS } });
    await healthy.realtimeSession('mars');
    expect(healthy.fallbackCounts()).toEqual([]);
    // An unknown persona is served the default persona's session by the service: a fallback, labelled by the persona served.
    await healthy.realtimeSession('jupiter');
    expect(healthy.fallbackCounts()).toEqual([{ servedAs: 'venus', source: 'service', reason: 'unknown-persona', count: 1 }]);
  });

  it('exports as docs/voice-server.md shows: a prom-client counter read at each scrape, the series and labels the alert reads', async () => {
    const api = client({ baseUrl: await downService(), timeoutMs: GENEROUS, realtime: { budgetMs: GENEROUS } });
    const registry = new Registry();
    new Counter({
      name: 'cc_client_fallbacks_total',
      help: 'Calls connected without the context service session for the persona asked, by reason.',
      labelNames: ['persona', 'source', 'reason'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const { servedAs, source, reason, count } of api.fallbackCounts()) this.inc({ persona: servedAs, source, reason }, count);
      },
    });
    await api.realtimeSession('mars');
    expect(await registry.metrics()).toContain('cc_client_fallbacks_total{persona="mars",source="static",reason="network"} 1\n');
    await api.realtimeSession('mars');
    expect(await registry.metrics()).toContain('cc_client_fallbacks_total{persona="mars",source="static",reason="network"} 2\n');
  });
});
