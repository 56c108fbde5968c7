import { describe, expect, it } from 'vitest';
import { listRunsFromIndex, MAX_LISTING_TALLY_BYTES, type EvictedEvents } from '../../../src/io/trace/files/run-listing.js';
import { RunIndex, type EventLocation } from '../../../src/io/trace/files/run-index.js';
import type { ListedEvent } from '../../../src/io/trace/files/run-lookup.js';

const FILE = 'trace-20260301T120000000Z-w1-000001.jsonl';
const BASE = Date.parse('2026-03-01T12:00:00.000Z');

function location(runId: string, n: number, requestId: string): EventLocation {
  const at = new Date(BASE + n).toISOString();
  return {
    file: FILE,
    fileCreatedMs: BASE,
    offset: n * 100,
    length: 100,
    atMs: BASE + n,
    summary: { runId, at, route: '/compile', subject: { kind: 'worker', id: 'scribe' }, status: 200, outcome: 'delivered', chars: 0, promptSha256: null, compiledFor: null, topicId: null, role: null, engine: null, warnings: 0, requestId },
  };
}

/**
 * One evicted part holding `runs` one-event runs of request `req-shared`, read back as
 * heads (the reader's keep filter is not needed here: every line holds the request).
 */
function evictedRuns(runs: number): { index: RunIndex; evicted: EvictedEvents; read: { heads: number } } {
  const index = new RunIndex({ maxEvents: 1 });
  const entry = index.file(FILE, BASE, false);
  entry.complete = true;
  index.add(entry, location('run-0', 0, 'req-shared'));
  index.add(entry, location('run-1', 1, 'req-shared'));
  index.evictOverBudget();
  const read = { heads: 0 };
  const evicted: EvictedEvents = {
    async read(_part, visit) {
      for (let n = 0; n < runs; n++) {
        read.heads++;
        const { summary, ...where } = location(`run-${n}`, n, 'req-shared');
        const head: ListedEvent = { ...where, summary: { runId: summary.runId, subject: summary.subject, status: summary.status, outcome: summary.outcome, requestId: 'req-shared' } };
        visit(head);
      }
    },
    async summary(event) {
      return location(event.summary.runId, event.atMs - BASE, 'req-shared').summary;
    },
  };
  return { index, evicted, read };
}

describe('a listing by request id holds its tallies within a bound of bytes', () => {
  it('lists the newest of many runs found, exactly, below the bound', async () => {
    const { index, evicted } = evictedRuns(2000);
    const page = await listRunsFromIndex(index, evicted, { requestId: 'req-shared', limit: 3 }, 0);
    expect(page.runs.map((run) => [run.runId, run.events])).toEqual([
      ['run-1999', 1],
      ['run-1998', 1],
      ['run-1997', 1],
    ]);
    expect(page.partial).toBe(false);
  });

  // Before, a listing kept a tally of every run it found, however many: 100,000 runs of one request held ≈ 80 MB.
  it(`refuses past ${MAX_LISTING_TALLY_BYTES / 1024 / 1024} MiB of tallies, saying why, and stops finding runs there`, async () => {
    const { index, evicted, read } = evictedRuns(40_000);
    const refused = await listRunsFromIndex(index, evicted, { requestId: 'req-shared', limit: 3 }, 0).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', detail: expect.stringMatching(/^More runs hold this request id than one listing keeps in memory \(\d+ found so far\)/) });
    const found = Number(/\((\d+) found so far\)/.exec((refused as { detail: string }).detail)![1]);
    expect(found).toBeGreaterThan(5000);
    expect(found).toBeLessThan(20_000);
    // It stopped reading at the bound.
    expect(read.heads).toBeLessThanOrEqual(found + 1);
    // A smaller bound, fewer runs.
    const small = evictedRuns(2000);
    await expect(listRunsFromIndex(small.index, small.evicted, { requestId: 'req-shared', limit: 3 }, 0, undefined, undefined, 64 * 1024)).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
  });
});
