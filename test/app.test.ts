import { describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.js';

describe('buildApp', () => {
  it('is its named plugins, each adding the decorators it declares, visible app-wide', async () => {
    const { app } = await buildTestApp();
    for (const plugin of ['correlation', 'metrics', 'pressure', 'auth', 'connections', 'rate-limit', 'caches', 'traces', 'brain', 'problem', 'openapi']) {
      expect(app.hasPlugin(plugin), plugin).toBe(true);
    }
    for (const decorator of ['config', 'readinessChecks', 'metrics', 'isUnderPressure', 'memoryUsage', 'connections', 'caches', 'compiler', 'sourceMemo', 'traces', 'brain', 'routeTable', 'swagger']) {
      expect(app.hasDecorator(decorator), decorator).toBe(true);
    }
    for (const decorator of ['principal', 'publicRoute', 'routeUrl', 'traceparent']) expect(app.hasRequestDecorator(decorator), decorator).toBe(true);
    expect(app.hasReplyDecorator('problemCode')).toBe(true);
    // Load checks in first, then the trace store, then the brain: /readyz lists them in that order.
    expect((await app.inject('/readyz')).json().checks.map((check: { name: string }) => check.name)).toEqual(['load', 'traces', 'brain']);
  });
});
