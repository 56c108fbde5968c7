/**
 * The client's `refresh()` (issue 24) against a real listening server: `{ notModified: true }`
 * while nothing changed, else the text and the event to send, with an ETag that makes the
 * same answer a 304 next time.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ContextCompilerError, createClient } from '../../packages/client/src/index.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

describe('refresh()', () => {
  it('is notModified until a memory line lands, then the event to send; its ETag makes the same answer a 304', async () => {
    const brainRoot = await copyExampleBrain();
    await writeFile(join(brainRoot, 'memory/2026-11-30.md'), '# 2026-11-30\n\n- Woke early and felt calm about the week.\n');
    const { app } = await buildTestApp({ BRAIN_ROOT: brainRoot });
    // A budget no answer of a working service misses, however busy the machine: the budget is not what this tests.
    const api = createClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), realtime: { budgetMs: 15_000 } });
    onTestFinished(() => api.close());
    const connected = await api.realtimeSession('mars', { now: '2026-11-30T17:05:00Z' });
    expect(connected.source).toBe('service');
    const runId = connected.runId!;
    expect(await api.refresh('mars', runId, { now: '2026-11-30T17:10:00Z' })).toMatchObject({ notModified: true, runId: `${runId}:refresh` });

    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '- Felt a quiet joy at the harbour lighthouse.\n');
    const changed = await api.refresh('mars', runId, { now: '2026-11-30T17:12:00Z', requestId: 'turn-7' });
    if ('notModified' in changed) throw new Error('expected a change');
    expect(changed.event).toEqual({ type: 'conversation.item.create', item: { type: 'message', role: 'system', content: [{ type: 'input_text', text: changed.text }] } });
    expect(changed.text).toContain('harbour lighthouse');
    expect(changed.etag).toMatch(/\.refresh"$/);
    expect(await api.refresh('mars', runId, { etag: changed.etag, now: '2026-11-30T17:14:00Z' })).toMatchObject({ notModified: true });
    const trace = await api.trace(`${runId}:refresh`);
    expect(trace.events.map((event) => [event.status, event.parentRunId, event.requestId ?? null])).toEqual([
      [304, runId, expect.any(String)],
      [200, runId, 'turn-7'],
      [304, runId, expect.any(String)],
    ]);
    await expect(api.refresh('mars', 'no-such-run')).rejects.toMatchObject({ status: 404, code: 'CC_NOT_FOUND' });
    await expect(api.refresh('mars', 'no-such-run')).rejects.toBeInstanceOf(ContextCompilerError);
  });
});
