import { createHash } from 'node:crypto';
import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, TEST_TOKEN } from '../helpers/app.js';
import { HEAVY_TEST_MS, LOAD_BOUND_MS } from '../helpers/bounds.js';

const TODAY = 'memory/2026-11-30.md';
const APPENDS = 60;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * Brain churn: while a writer appends to today's memory file, every answer reflects
 * each append completed before its request began. The answer names the bytes it was compiled
 * from (its `sources[]` sha256 of the file), so each is checked against the file's versions:
 * it must be the version after the appends completed before the request was sent, or a later
 * one — never an earlier one, whatever the caches kept.
 */
describe('brain churn (a writer appending to today’s memory while the persona is asked for)', () => {
  it('answers from a version of the file that holds every append completed before the request began', { timeout: HEAVY_TEST_MS }, async () => {
    const brain = await copyExampleBrain();
    const { app } = await buildTestApp({ BRAIN_ROOT: brain, CONTEXT_COMPILER_TOKENS: TEST_TOKEN, RATE_LIMIT_MAX: '1000000' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const dispatcher = new Agent({ connections: 8, pipelining: 1 });

    // The file's versions: versions[k] is its sha256 after k appends.
    const file = join(brain, TODAY);
    let content = await readFile(file);
    const versions = [sha256(content)];
    let completed = 0;
    const checked: Array<{ before: number; version: number }> = [];
    let writing = true;
    const writer = (async () => {
      for (let k = 1; k <= APPENDS; k++) {
        const line = Buffer.from(`- ${String(k).padStart(4, '0')} I feel a small hope about the churn line that just landed.\n`);
        await appendFile(file, line);
        content = Buffer.concat([content, line]);
        versions.push(sha256(content));
        completed = k;
        // Apart by more than the reader's 20 ms "too recent to trust" window, so between appends
        // the file is cached and served after a stat: the path a stale stat would break.
        await new Promise((resolve) => setTimeout(resolve, 25 + (k % 4) * 5));
        // And not before five answers came back since this append began: the race is counted
        // in answers, not in how many a busy machine fits into the gap (a hang bound aside).
        const bound = Date.now() + LOAD_BOUND_MS;
        while (checked.length < 5 * k && Date.now() < bound) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      writing = false;
    })();

    const ask = async (minute: number) => {
      const before = completed;
      const now = `2026-11-30T17:${String(minute % 60).padStart(2, '0')}:00Z`;
      const response = await request(`http://127.0.0.1:${port}/context/mars?now=${now}`, { dispatcher, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      const body = (await response.body.json()) as { sources: Array<{ path: string; sha256: string }>; liveContext: string };
      expect(response.statusCode).toBe(200);
      const read = body.sources.find((source) => source.path === TODAY);
      expect(read, 'today’s memory was read').toBeDefined();
      const version = versions.indexOf(read!.sha256);
      expect(version, `a version the writer wrote (${read!.sha256})`).toBeGreaterThanOrEqual(0);
      checked.push({ before, version });
    };
    // Eight callers at once for as long as the writer writes, half at one fixed minute (the
    // compile memo's case), half at a new minute each time.
    await Promise.all(
      Array.from({ length: 8 }, async (_unused, caller) => {
        for (let i = 0; writing; i++) await ask(caller % 2 === 0 ? 5 : caller * 7 + i);
      }),
    );
    await writer;
    await dispatcher.close();

    const stale = checked.filter(({ before, version }) => version < before);
    expect(stale, 'answers compiled from a version older than the appends completed before them').toEqual([]);
    // The run really raced the writer: answers saw many versions, and most requests began after some append.
    expect(new Set(checked.map(({ version }) => version)).size).toBeGreaterThan(APPENDS / 2);
    expect(checked.length).toBeGreaterThan(4 * APPENDS);
  });
});
