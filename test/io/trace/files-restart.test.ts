import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createFileTraceStore } from '../../../src/io/trace/index.js';
import { tempDir } from '../../helpers/app.js';
import { deliveredEvent } from '../../helpers/trace-events.js';

const CHILD = fileURLToPath(new URL('./files-restart-child.ts', import.meta.url));
const DAY = 86_400_000;
/**
 * The second process's heap cap, with room for its index (events and facets within twice
 * `INDEX_BYTES`); the directory holds 20 times that bound of events (≈ 870 bytes of index
 * each), kept small so the test is quick: the bound, not the cap, is what it checks.
 */
const HEAP_CAP_MB = 48;
const INDEX_BYTES = 256 * 1024;
const EVENTS = 6_000;
/** The fewest bytes an indexed event is counted for (`locationBytes`). */
const LEAST_EVENT_BYTES = 480;

// Issue 36, item 1: a second process on a directory the first filled (a restart, another
// worker) ran out of heap on its first read, append or sweep, because another writer's file
// younger than rotateMs + 60 s was never evicted from its index.
describe('a second process on a full trace directory', () => {
  it(`reads, appends and sweeps under a ${HEAP_CAP_MB} MB heap, its index within its bytes, whoever wrote the files`, async () => {
    const dir = join(await tempDir('cc-trace-restart-'), 'traces');
    const start = Date.now();
    let clock = start - 8 * DAY;
    const first = createFileTraceStore(dir, pino({ level: 'silent' }), { retentionMs: 7 * DAY, now: () => clock, maxIndexBytes: INDEX_BYTES, rotateBytes: 4 * 1024 * 1024 });
    // Expired events in a file of their own, for the sweep.
    await Promise.all(Array.from({ length: 20 }, (_, i) => first.append(deliveredEvent(`expired-${i}`, { at: new Date(clock).toISOString() }), { newRun: true })));
    clock = start - 60_000;
    await first.append(deliveredEvent('run-early', { at: new Date(clock).toISOString() }), { newRun: true });
    for (let done = 0; done < EVENTS; done += 1000) {
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) => {
          const n = done + i;
          const at = new Date(clock + Math.floor(n / 1000)).toISOString();
          return first.append(deliveredEvent(`run-${n}`, { at, requestId: n % 10 === 0 ? 'req-shared' : `req-${n}` }), { newRun: true });
        }),
      );
    }
    const writer = first.stats();
    await first.close();

    const { stdout } = await promisify(execFile)(process.execPath, [`--max-old-space-size=${HEAP_CAP_MB}`, '--import', 'tsx', CHILD, dir, String(INDEX_BYTES), 'req-shared', 'run-early'], {
      timeout: 120_000,
      maxBuffer: 1024 * 1024,
    });
    const report = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, number>;
    // Before: every event of the directory (another writer's files younger than rotateMs + 60 s were never evicted).
    expect(report['peakIndexedEvents']).toBeLessThanOrEqual(INDEX_BYTES / LEAST_EVENT_BYTES);
    expect(report['peakIndexBytes']).toBeLessThanOrEqual(2 * INDEX_BYTES);
    expect(report).toMatchObject({ listed: 5, found: 100, oldEvents: 1, afterEvents: 2 });
    expect(report['deleted']).toBeGreaterThanOrEqual(1);
    // The writer's own file too, however large it grew.
    expect(writer.indexedEvents).toBeLessThanOrEqual(INDEX_BYTES / LEAST_EVENT_BYTES);
    expect(writer.indexBytes).toBeLessThanOrEqual(2 * INDEX_BYTES);
    expect(report['indexBytes']).toBeLessThanOrEqual(2 * INDEX_BYTES);
  }, 240_000);
});
