import { describe, expect, it } from 'vitest';
import { EvictedLinesBuilder } from '../../../src/io/trace/files/evicted-lines.js';
import type { IndexedFile } from '../../../src/io/trace/files/run-index.js';
import type { ListedEvent } from '../../../src/io/trace/files/run-lookup.js';
import { summarize } from '../../../src/io/trace/files/run-index.js';
import { deliveredEvent } from '../../helpers/trace-events.js';

const BASE = Date.parse('2026-03-01T12:00:00.000Z');
const entry = { name: 'trace-20260301T120000000Z-w1-000001.jsonl', createdMs: BASE } as IndexedFile;

function head(n: number): ListedEvent {
  return {
    file: entry.name,
    fileCreatedMs: BASE,
    offset: n * 1000,
    length: 900 + n,
    atMs: BASE + n,
    summary: {
      runId: `run-${n % 7}`,
      subject: { kind: 'persona', id: n % 2 === 0 ? 'mars' : 'venus' },
      status: n % 3 === 0 ? 304 : 200,
      outcome: 'delivered',
      ...(n % 5 === 0 ? {} : { caller: `caller-${n % 2}` }),
      ...(n % 4 === 0 ? {} : { requestId: `req-${n}` }),
      ...(n % 6 === 0 ? { traceparent: `00-${'a'.repeat(32)}-00f067aa0ba902b7-01` } : {}),
    },
  };
}

describe('the lines of an evicted part, as remembered for listings', () => {
  it('gives back each line as it was added, oldest first, and only those the filter keeps', () => {
    const builder = new EvictedLinesBuilder(entry, 100_000, 1024 * 1024);
    const added = Array.from({ length: 50 }, (_, n) => head(n));
    for (const event of added) builder.add(event);
    const lines = builder.finish()!;
    expect(lines.lines).toBe(50);
    const all: ListedEvent[] = [];
    lines.visit((event) => all.push(event));
    expect(all).toEqual(added);
    const kept: ListedEvent[] = [];
    lines.visit((event) => kept.push(event), (summary) => summary.runId === 'run-3');
    expect(kept).toEqual(added.filter((event) => event.summary.runId === 'run-3'));
  });

  it('gives a line back with its whole summary once a page read it, counting what that holds', () => {
    const builder = new EvictedLinesBuilder(entry, 100_000, 1024 * 1024);
    for (let n = 0; n < 3; n++) builder.add(head(n));
    const lines = builder.finish()!;
    const before = lines.bytesHeld;
    const whole = summarize({ ...deliveredEvent('run-1'), at: new Date(BASE + 1).toISOString() } as Parameters<typeof summarize>[0], 0);
    expect(lines.keepWhole(1000, whole)).toBeGreaterThan(0);
    expect(lines.keepWhole(1000, whole)).toBe(0);
    expect(lines.bytesHeld).toBeGreaterThan(before);
    const seen: ListedEvent[] = [];
    lines.visit((event) => seen.push(event));
    expect(seen[1]!.summary).toBe(whole);
    expect(lines.wholeSummary(1000)).toBe(whole);
    expect(lines.wholeSummary(0)).toBeUndefined();
  });

  it('gives up past its bound of bytes, whatever the part holds, and weighs its lines as they come', () => {
    const small = new EvictedLinesBuilder(entry, 100_000, 16 * 1024);
    for (let n = 0; n < 10_000; n++) small.add(head(n));
    expect(small.finish()).toBeNull();
    const sizes = [100, 1000].map((count) => {
      const builder = new EvictedLinesBuilder(entry, 100_000, 64 * 1024 * 1024);
      for (let n = 0; n < count; n++) builder.add({ ...head(n), summary: { ...head(n).summary, runId: `run-${n}` } });
      return builder.finish()!.bytesHeld;
    });
    // Linear in the lines: ten times the lines, about ten times the bytes.
    expect(sizes[1]! / sizes[0]!).toBeGreaterThan(6);
    expect(sizes[1]! / sizes[0]!).toBeLessThan(11);
  });

  it('stops with the signal', () => {
    const builder = new EvictedLinesBuilder(entry, 100_000, 1024 * 1024);
    for (let n = 0; n < 10; n++) builder.add(head(n));
    const gone = new AbortController();
    gone.abort(new Error('the client closed the connection'));
    expect(() => builder.finish()!.visit(() => {}, undefined, gone.signal)).toThrow(/closed/);
  });
});
