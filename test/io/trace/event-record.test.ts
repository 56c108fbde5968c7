import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createCaches } from '../../../src/caches.js';
import { createCompiler, type CompileInput, type CompiledContext } from '../../../src/core/index.js';
import { buildHud, missingFile } from '../../../src/core/hud.js';
import { eventRecord, privateTraceMemo, RecordDigests, type Refs, TraceSplices } from '../../../src/io/trace/event-record.js';
import { compiledEventFields, type TraceEventInput } from '../../../src/io/trace/index.js';
import { O200K_BASE } from '../../../src/tokenizer.js';
import { voicePersona } from '../../core/golden/cases.js';
import { deliveredEvent } from '../../helpers/trace-events.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** What a scope of references placed, in order, and how many lookups it was asked for. */
interface Scope {
  refs: Refs;
  /** Each record as its line would hold it: `sha256 json`. */
  placed: string[];
  lookups: { blob: number; block: number; json: number };
}

/**
 * How a scope turns an event's parts into records. A `remembering` one does it as the
 * writers do (`RecordDigests`, memoised by text and by object); a plain one serialises
 * and hashes every structure (cache plan, tools, HUD) and text again.
 */
function recordsOf(remembering: boolean, lookups: Scope['lookups'], data: Refs['data']): Refs {
  const digests = new RecordDigests(privateTraceMemo());
  const refs: Refs = {
    blob: (text) => {
      lookups.blob++;
      return data({ json: JSON.stringify(text), sha: remembering ? digests.text(text) : sha256(text) });
    },
    data,
    block: (block) => {
      lookups.block++;
      return data(digests.block(block));
    },
    source: (source) => data(digests.source(source)),
    json: (value) => {
      lookups.json++;
      if (remembering) return data(digests.object(value));
      const json = JSON.stringify(value);
      return data({ json, sha: sha256(json) });
    },
  };
  return refs;
}

/** References as the file writer makes them: a record's sha256 and where it was first placed (`[sha256, offset, length]`). */
function fileScope(remembering = true): Scope {
  const placed: string[] = [];
  const where = new Map<string, string>();
  let offset = 0;
  const lookups = { blob: 0, block: 0, json: 0 };
  const refs = recordsOf(remembering, lookups, ({ json, sha }) => {
    let ref = where.get(sha);
    if (ref === undefined) {
      where.set(sha, (ref = `["${sha}",${offset},${json.length}]`));
      placed.push(`${sha} ${json}`);
      offset += json.length;
    }
    return ref;
  });
  return { refs, placed, lookups };
}

/** References as the PostgreSQL writer makes them: the sha256 alone, each record kept for the day's insert. */
function databaseScope(remembering = true): Scope {
  const records = new Map<string, string>();
  const lookups = { blob: 0, block: 0, json: 0 };
  const refs = recordsOf(remembering, lookups, ({ json, sha }) => {
    if (!records.has(sha)) records.set(sha, json);
    return `"${sha}"`;
  });
  return {
    refs,
    get placed() {
      return [...records].map(([sha, body]) => `${sha} ${body}`);
    },
    lookups,
  };
}

/**
 * A persona asked minute after minute as the service compiles it: one compiler memo, so a
 * new minute hands out the stable blocks, segment texts and boundaries of the minute before;
 * the same tools object on every call, the HUD kept while the blocks and budget hold (as
 * delivered.ts keeps it), the same sources array (a replayed brain session).
 */
function personaMinutes() {
  const caches = createCaches();
  const { compile } = createCompiler({ memo: caches.compiler, tokenizer: O200K_BASE });
  const input = voicePersona();
  const tools = input.sessionTools! as NonNullable<TraceEventInput['realtime']>['tools'];
  // Each result wraps the persona's same tools object in its own `realtime`.
  const realtimes = new WeakMap<CompiledContext, NonNullable<TraceEventInput['realtime']>>();
  const sources = [
    { path: 'SOUL.md', size: 10, mtimeMs: 1, sha256: 'a'.repeat(64) },
    { path: 'personas/venus.md', size: 20, mtimeMs: 2, sha256: 'b'.repeat(64) },
  ];
  let kept: { usedChars: number; hud: NonNullable<TraceEventInput['hud']> } | undefined;
  let runs = 0;
  const compileAt = (iso: string): CompiledContext => compile({ ...input, clock: { ...input.clock!, now: new Date(iso) } } satisfies CompileInput);
  const deliver = (compiled: CompiledContext, extra: Partial<TraceEventInput> = {}): TraceEventInput => {
    if (kept?.usedChars !== compiled.budget.usedChars) {
      const hud = buildHud({ loaded: [], missing: ['personas/venus.md'].map((path) => missingFile(path).path), blocks: compiled.blocks, budget: compiled.budget });
      kept = { usedChars: compiled.budget.usedChars, hud: hud as NonNullable<TraceEventInput['hud']> };
    }
    runs++;
    let realtime = realtimes.get(compiled);
    if (realtime === undefined) realtimes.set(compiled, (realtime = { voice: 'ash', tools }));
    return {
      runId: `run-${runs}`,
      at: new Date(Date.UTC(2026, 10, 30, 17, 5, runs)).toISOString(),
      route: 'GET /context/venus',
      subject: { kind: 'persona', id: 'venus' },
      surface: 'voice',
      status: 200,
      outcome: 'delivered',
      requestId: `request-${runs}`,
      request: { persona: 'venus', topicId: null, now: `minute ${runs}`, format: 'json' },
      ...compiledEventFields(compiled),
      warnings: [...compiled.warnings],
      realtime,
      hud: kept.hud,
      sources,
      timing: { readMs: 0.2, compileMs: 0.1, untilTraceMs: runs },
      ...extra,
    };
  };
  return { compileAt, deliver, tools };
}

/** `eventRecord`, and what the writers keep of a shared `result` once the event is durable. */
function written(event: TraceEventInput, refs: Refs, splices: TraceSplices, result?: object) {
  const record = eventRecord(event, refs, splices, result);
  if (result !== undefined) splices.keep(result, record.splice);
  return record;
}

/**
 * Writes `event` through a scope that remembers (the writers': memoised digests, and the
 * splice they keep for its shared `result`) and one that writes it afresh, and expects the
 * very same bytes and records from both. The splice is kept once the event is written, as
 * the writers keep it once the event is durable.
 */
function expectSameAsPlain(event: TraceEventInput, remembering: Scope, plain: Scope, splices: TraceSplices, result?: object) {
  const fast = written(event, remembering.refs, splices, result);
  const afresh = eventRecord(event, plain.refs);
  expect(fast.json).toBe(afresh.json);
  expect(fast.chars).toBe(afresh.chars);
  expect(remembering.placed).toEqual(plain.placed);
  return fast;
}

describe('eventRecord, minute after minute', () => {
  for (const [name, makeScope] of [
    ['file', fileScope],
    ['database', databaseScope],
  ] as const) {
    it(`writes each event byte for byte as a plain write of it, with the same records, spliced or not (${name} references)`, () => {
      const { compileAt, deliver, tools } = personaMinutes();
      const remembering = makeScope(true);
      // The plain write: a fresh scope fed the same events, without splices or memos.
      const plain = makeScope(false);
      const splices = new TraceSplices();
      const minutes = ['2026-11-30T16:58:00Z', '2026-11-30T16:59:00Z', '2026-11-30T17:00:00Z', '2026-11-30T17:01:00Z', '2026-12-02T07:59:00Z', '2026-12-02T08:00:00Z'].map(compileAt);
      const events: TraceEventInput[] = [];
      for (const compiled of minutes) events.push(deliver(compiled));
      // A minute asked again (the same result), a later minute after it, and a delivery that was not modified.
      events.push(deliver(minutes[2]!), deliver(compileAt('2026-11-30T17:02:00Z')), deliver(minutes[2]!, { status: 304, outcome: 'not-modified' }));
      // The same tools in another voice.
      events.push(deliver(compileAt('2026-11-30T17:03:00Z'), { realtime: { voice: 'verse', tools } }));
      for (const event of events) {
        const { json } = expectSameAsPlain(event, remembering, plain, splices, event.segments);
        const parsed = JSON.parse(json) as { segments: { system: unknown[] }; cache: unknown };
        expect(parsed.segments.system).toHaveLength(event.segments!.system.length);
      }
      // Past local midnight the clock line's length changed, and with it the budget and the HUD.
      expect(new Set(events.map((event) => event.hud)).size).toBeGreaterThan(1);
    });
  }

  it('splices the record a shared result kept: an event written again looks up its sources alone', () => {
    const { compileAt, deliver } = personaMinutes();
    const scope = fileScope();
    const splices = new TraceSplices();
    const compiled = compileAt('2026-11-30T17:05:00Z');
    const first = written(deliver(compiled), scope.refs, splices, compiled);
    expect(scope.lookups.block).toBe(compiled.blocks.length);
    // Kept from the second event on: most results are delivered once.
    expect(first.splice).toBeUndefined();
    expect(written(deliver(compiled), scope.refs, splices, compiled).splice).toBeDefined();
    const before = { ...scope.lookups };
    const again = written(deliver(compiled), scope.refs, splices, compiled);
    expect(scope.lookups).toEqual(before);
    expect(again.splice).toBeUndefined();
    // Another scope (a new trace file) refers to its own records: written afresh.
    eventRecord(deliver(compiled), scope.refs, new TraceSplices(), compiled);
    expect(scope.lookups.block).toBe(before.block + compiled.blocks.length);
  });

  it('serialises and hashes a new minute\'s cache plan as JSON.stringify and sha256 do', () => {
    const { compileAt } = personaMinutes();
    const digests = new RecordDigests(privateTraceMemo());
    for (const { cache } of [compileAt('2026-11-30T17:05:00Z'), compileAt('2026-11-30T17:06:00Z')]) {
      expect(digests.object(cache)).toEqual({ json: JSON.stringify(cache), sha: sha256(JSON.stringify(cache)) });
    }
  });
});

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
    const { refs } = fileScope();
    const splices = new TraceSplices();
    // The shared result as delivery hands it over: frozen, so a writer that kept anything on it would throw.
    const shared = Object.freeze({ compiled: result });
    const events = [delivery('run-1'), delivery('run-2'), delivery('run-3', { absent: [{ path: 'personas/mars.md' }] }), delivery('run-4', { status: 304, outcome: 'not-modified' })];
    for (const event of events) {
      const fast = written(event, refs, splices, shared);
      const afresh = eventRecord(event, refs);
      expect(fast.json).toBe(afresh.json);
      expect(fast.chars).toBe(afresh.chars);
      expect(JSON.parse(fast.json).segments.system).toHaveLength(result.segments!.system.length);
    }
    expect(splices.get(shared)).toMatchObject({ chars: expect.any(Number) });
    expect(Object.keys(shared)).toEqual(['compiled']);
  });

  it('writes an event afresh when its HUD is not the one the splice was written with', () => {
    const result = deliveredEvent('result');
    const { refs } = fileScope();
    const splices = new TraceSplices();
    written(result, refs, splices, result);
    written(result, refs, splices, result);
    expect(splices.get(result)).toBeTruthy();
    const changed = { ...result, hud: { ...result.hud!, usedChars: 999 } };
    const again = eventRecord(changed, refs, splices, result);
    expect(again.json).toBe(eventRecord(changed, refs).json);
    expect(again.splice).toBeDefined();
  });
});
