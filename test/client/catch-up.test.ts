/**
 * Catch-up after an outage (issue 33): a call that connected on its static session while the
 * service was down keeps a run id the client made at connect; its first refresh after the
 * service recovers delivers the live context the call is missing, and opens the call's own
 * run with it, so the run has the call's id from the start.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient } from '../../packages/client/src/index.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';

describe('a call that connected during an outage', () => {
  it('regression: receives its live context on the first refresh after recovery, traced in its own run from the start', async () => {
    const brainRoot = await copyExampleBrain();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), '# 2026-11-30\n\n- Woke early and felt calm about the week.\n');
    const port = await freePort();
    const fallbacks: string[] = [];
    const api = createClient({ baseUrl: `http://127.0.0.1:${port}`, realtime: { onFallback: ({ reason }) => fallbacks.push(reason) } });
    onTestFinished(() => api.close());

    // The service is down: the call connects on its static session, with a run id the client made.
    const connected = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z', topicId: 'real-estate', timezone: 'Europe/London' });
    expect(connected).toMatchObject({ source: 'static', fallback: 'network' });
    expect(fallbacks).toEqual(['network']);
    expect(connected.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(connected.session.instructions).not.toContain('Woke early');

    // The service recovers.
    const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
    await app.listen({ port, host: '127.0.0.1' });
    onTestFinished(() => app.close());
    const runId = connected.runId!;
    const first = await api.refresh('mars', runId, { now: '2026-11-30T17:10:00Z' });
    if ('notModified' in first) throw new Error('expected the live context');
    expect(first.delivery).toBe('conversation-item');
    expect(first.runId).toBe(runId);
    expect(first.text).toContain('Woke early and felt calm about the week.');
    expect(first.changes.map((change) => change.block)).toEqual(['live-context', 'topic']);
    expect(first.changes.every((change) => change.removed === 0)).toBe(true);
    expect(first.text).toContain('(Europe/London,');

    // The call's run holds that catch-up as its first event; later refreshes go beside it.
    const run = await api.trace(runId);
    expect(run.events.map((event) => [event.route, event.status, event.parentRunId ?? null])).toEqual([['GET /context/mars/refresh', 200, null]]);
    expect(await api.refresh('mars', runId, { etag: first.etag, now: '2026-11-30T17:12:00Z' })).toMatchObject({ notModified: true, runId: `${runId}:refresh` });
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '- Felt a quiet joy at the harbour lighthouse.\n');
    const next = await api.refresh('mars', runId, { now: '2026-11-30T17:14:00Z' });
    if ('notModified' in next) throw new Error('expected the new line');
    expect(next.runId).toBe(`${runId}:refresh`);
    expect(next.changes).toEqual([{ block: 'live-context', source: 'builtin:mars/live-context', added: 1, removed: 0 }]);
  });

  it('a call the service served keeps the service’s run, which the client named', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain() });
    // Warm, as a ready service is: a cold first compile on a loaded test machine may outlast the connect's budget.
    expect((await app.inject('/context/venus')).statusCode).toBe(200);
    const api = createClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }) });
    onTestFinished(() => api.close());
    const mine = await api.realtimeSession('venus', { runId: 'call-42', now: '2026-11-30T17:05:00Z' });
    expect(mine).toMatchObject({ source: 'service', runId: 'call-42' });
    const made = await api.realtimeSession('venus', { now: '2026-11-30T17:05:00Z' });
    expect(made.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await api.trace(made.runId!)).events[0]!.route).toBe('GET /context/venus');
  });
});
