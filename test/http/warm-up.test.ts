/**
 * Ready means warm (issue 32): before `/readyz` answers 200 each persona is compiled once
 * and its answer written, so the first connect after a start reads nothing afresh — while
 * `/healthz` answers throughout, however slow the brain, and nothing is traced.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, lstat, readFileSync } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { lstatNow } from '../../src/io/brain/revalidate.js';
import type { BrainFs } from '../../src/io/brain.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

/** The brain's file system, counting the files opened (each open checks where its descriptor is) and holding them until `release()`. */
function gatedFs(hooks: { lstatSync?: (path: string) => void; opened?: (path: string) => void } = {}) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const counts = { opens: 0 };
  const fs: BrainFs = {
    lstat,
    lstatSync: (path) => {
      hooks.lstatSync?.(path);
      return lstatNow(path);
    },
    readlink: async (path) => {
      counts.opens++;
      await gate;
      const target = await readlink(path);
      hooks.opened?.(target);
      return target;
    },
  };
  return { fs, counts, release };
}

async function untilReady(app: Awaited<ReturnType<typeof buildTestApp>>['app']) {
  for (let i = 0; i < 600; i++) {
    const response = await app.inject('/readyz');
    if (response.statusCode === 200) return response.json();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('never ready');
}

describe('warm-up', () => {
  it('holds /readyz at 503 (warm) while a slow brain is read, never /healthz; then the first connect reads no file afresh and nothing was traced', async () => {
    const gated = gatedFs();
    const built = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain() }, { warmUp: true, brainFs: gated.fs });
    const { app } = built;
    // The warm-up is waiting on the brain: the process is alive, not ready. Waited for, not a fixed
    // 50 ms: under load the warm-up had not reached the brain by then (opens 0).
    await vi.waitFor(() => expect(gated.counts.opens).toBeGreaterThan(0), { timeout: 30_000, interval: 10 });
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    const waiting = await app.inject('/readyz');
    expect(waiting.statusCode).toBe(503);
    expect(waiting.json().checks).toContainEqual({ name: 'warm', ok: false, reason: expect.stringContaining('warming up') });

    gated.release();
    const ready = await untilReady(app);
    expect(ready.checks).toContainEqual({ name: 'warm', ok: true });
    const warmed = built.logs.find((line) => line['msg'] === 'warmed up');
    // Two rounds: the first reads everything, the second finds the brain as the first left it.
    expect(warmed).toMatchObject({ tasks: ['personas'], rounds: 2, settled: true });
    expect(built.rawLogs()).not.toContain('You are Mars');
    expect((await app.inject('/runs')).json().runs).toEqual([]);

    const opened = gated.counts.opens;
    for (const persona of ['mars', 'venus']) {
      const response = await app.inject(`/context/${persona}`);
      expect(response.statusCode).toBe(200);
    }
    // Every file the connects rely on was read by the warm-up and only revalidated now.
    expect(gated.counts.opens).toBe(opened);
    expect((await app.inject('/runs')).json().runs).toHaveLength(2);
  }, 60_000);

  it('warms again when the brain changes while it is read at start, until a round finds it unchanged', async () => {
    const brainRoot = await copyExampleBrain();
    let changed = false;
    // SOUL.md changes just before it is revalidated after the first round, which is over once
    // venus (warmed after mars) has opened her calendar: a later round finds it changed and
    // reads it again, and the one after finds the brain as that one left it. (Mars's second
    // provider revalidates SOUL.md within the first round, which must not count.)
    let firstRoundDone = false;
    const gated = gatedFs({
      opened: (target) => {
        if (target.includes('/calendar/')) firstRoundDone = true;
      },
      lstatSync: (path) => {
        if (changed || !firstRoundDone || !path.endsWith('SOUL.md')) return;
        changed = true;
        appendFileSync(join(brainRoot, 'SOUL.md'), '\n- A line synced in while the service started.\n');
        // The brain reads a file changed within its revalidation tick (20 ms) afresh until it is
        // older; rounds come faster than that, so the change is let age past it first, as a sync
        // that finished a moment before would be.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
      },
    });
    gated.release();
    const built = await buildTestApp({ BRAIN_ROOT: brainRoot }, { warmUp: true, brainFs: gated.fs });
    const { app } = built;
    await untilReady(app);
    expect(changed).toBe(true);
    // Settled on a round after the change was read: at least three (which round first revalidates
    // SOUL.md after the first is the brain session's business), never on the stale read.
    const warmed = built.logs.find((line) => line['msg'] === 'warmed up');
    expect(warmed, JSON.stringify(warmed)).toMatchObject({ settled: true });
    expect(warmed!['rounds']).toBeGreaterThanOrEqual(3);
    const opened = gated.counts.opens;
    // The connect relies on the SOUL.md of now, which the third round read.
    const soul = (await app.inject('/context/mars')).json().sources.find((source: { path: string }) => source.path === 'SOUL.md');
    expect(soul.sha256).toBe(createHash('sha256').update(readFileSync(join(brainRoot, 'SOUL.md'))).digest('hex'));
    expect(gated.counts.opens).toBe(opened);
  }, 60_000);

  it('has no warm check when the app is built without a warm-up', async () => {
    const { app } = await buildTestApp();
    const ready = await app.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json().checks.map((check: { name: string }) => check.name)).not.toContain('warm');
  });
});
