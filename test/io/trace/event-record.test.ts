import { describe, expect, it } from 'vitest';
import { eventRecord, RecordDigests, type Refs, type SharedRecords } from '../../../src/io/trace/event-record.js';
import type { TraceEventInput } from '../../../src/io/trace/index.js';
import { deliveredEvent } from '../../helpers/trace-events.js';

/** References as a file writes them: a record's sha256 and where it was first placed. */
function fileRefs(): Refs {
  const digests = new RecordDigests();
  const placed = new Map<string, string>();
  const place = (sha: string) => {
    if (!placed.has(sha)) placed.set(sha, `["${sha}",${placed.size * 100},100]`);
    return placed.get(sha)!;
  };
  const refs: Refs = {
    blob: (text) => place(digests.text(text)),
    data: ({ sha }) => place(sha),
    block: (block) => refs.data(digests.block.get(block)),
    source: (source) => refs.data(digests.source.get(source)),
    json: (value) => place(digests.text(JSON.stringify(value))),
  };
  return refs;
}

describe('eventRecord of a shared compiled result', () => {
  it('writes every later event of the result byte for byte as it writes an event afresh', () => {
    const result = deliveredEvent('result');
    // A shared result hands out its very objects; each delivery adds its own fields.
    const delivery = (runId: string, extra: Partial<TraceEventInput> = {}): TraceEventInput => ({
      ...result,
      runId,
      at: new Date(Date.UTC(2026, 10, 30, 17, 5, runId.length)).toISOString(),
      request: { persona: 'mars', topicId: null, now: runId },
      warnings: runId.endsWith('2') ? ['topic-missing: topics/x.md does not exist; compiled without a topic'] : [],
      sources: [{ path: 'SOUL.md', size: 10, mtimeMs: 1, sha256: 'a'.repeat(64) }],
      timing: { readMs: 0.2, compileMs: 0, untilTraceMs: runId.length },
      ...extra,
    });
    const refs = fileRefs();
    const shared: SharedRecords = new WeakMap();
    const events = [delivery('run-1'), delivery('run-2'), delivery('run-3', { absent: [{ path: 'personas/mars.md' }] }), delivery('run-4', { status: 304, outcome: 'not-modified' })];
    for (const event of events) {
      const fast = eventRecord(event, refs, shared);
      const afresh = eventRecord(event, refs);
      expect(fast.json).toBe(afresh.json);
      expect(fast.stored).toEqual(afresh.stored);
      expect(JSON.parse(fast.json).segments.system).toHaveLength(result.segments!.system.length);
    }
    expect(shared.get(result.segments!)).toMatchObject({ chars: expect.any(Number) });
  });

  it('writes an event afresh when a part is not the very object the record was made from', () => {
    const result = deliveredEvent('result');
    const refs = fileRefs();
    const shared: SharedRecords = new WeakMap();
    eventRecord(result, refs, shared);
    eventRecord(result, refs, shared);
    const changed = { ...result, budget: { ...result.budget, usedChars: 999 }, promptSha256: 'f'.repeat(64) };
    const written = eventRecord(changed, refs, shared);
    expect(written.json).toBe(eventRecord(changed, refs).json);
    expect(JSON.parse(written.json).budget.usedChars).toBe(999);
  });
});
