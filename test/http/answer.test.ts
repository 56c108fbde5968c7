import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCaches } from '../../src/caches.js';
import { createAnswerEncoder, wireOrder } from '../../src/http/answer.js';
import { serializerJsonSchema } from '../../src/http/zod.js';

const Schema = z.object({
  runId: z.string(),
  note: z.string().optional(),
  prompt: z.string(),
  digest: z.string().nullable(),
  sources: z.array(z.object({ path: z.string() })),
  extra: z.object({ voice: z.string() }).optional(),
  warnings: z.array(z.string()),
});
const RESULT = new Set(['prompt', 'digest', 'extra']);

/** What one serializer of the whole schema writes: the bytes every encoder must produce. */
const whole = (schema: z.ZodType, value: unknown) =>
  (fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as (value: unknown) => string)(value);

describe('createAnswerEncoder', () => {
  it('writes the members in the order fast-json-stringify does: required first, then optional, each in schema order', () => {
    expect(wireOrder(Schema)).toEqual(['runId', 'prompt', 'digest', 'sources', 'warnings', 'note', 'extra']);
  });

  it('writes, once or from a shared result’s kept parts, byte for byte what one serializer of the whole schema writes', () => {
    const encoder = createAnswerEncoder(Schema, RESULT);
    for (const result of [
      { prompt: 'Hello "quoted" \u2028 line', digest: null },
      { prompt: '', digest: 'abc', extra: { voice: 'ash' } },
    ]) {
      for (const perRequest of [
        { runId: 'r1', sources: [{ path: 'a.md' }], warnings: [] },
        { runId: 'r2', note: 'n', sources: [], warnings: ['w\n1'] },
      ]) {
        const expected = whole(Schema, { ...perRequest, ...result });
        expect(encoder.body(perRequest, () => result)).toBe(expected);
        expect(encoder.body(perRequest, () => result, encoder.resultParts(result)).toString()).toBe(expected);
      }
    }
  });

  it('writes a result from kept pieces byte for byte as one serializer writes it: joined prompts, nested ones, long strings', () => {
    const Composed = z.object({
      runId: z.string(),
      system: z.string(),
      input: z.string().nullable(),
      all: z.string(),
      note: z.string(),
      session: z.object({ type: z.literal('realtime'), all: z.string(), tools: z.array(z.object({ name: z.string() })) }),
      warnings: z.array(z.string()),
    });
    const encoder = createAnswerEncoder(Composed, new Set(['system', 'input', 'all', 'note', 'session']));
    const memo = createCaches().pieces;
    const stable = ['Identity: "quoted" \u2028 \ud83d\ude00 ', 'x'.repeat(700), '\n\nRules\\ and \u0001 control'];
    const tools = Array.from({ length: 20 }, (_unused, i) => ({ name: `tool_${i}` }));
    for (const minute of ['09:05', '09:06']) {
      const system = [...stable, `\n\nClock ${minute} — “now”`];
      const input = ['{"block":"live-context","text":"é"}\n'];
      const value = { system: system.join(''), input: input.join(''), all: `${system.join('')}\n\n${input.join('')}` };
      const result = { ...value, note: 'n'.repeat(600), session: { type: 'realtime', all: value.all, tools } };
      const composed = [
        { value: value.system, pieces: system },
        { value: value.input, pieces: input },
        { value: value.all, pieces: [...system, '\n\n', ...input] },
      ];
      const perRequest = { runId: `r-${minute}`, warnings: ['w'] };
      const parts = encoder.resultParts(result, { composed, pieces: memo });
      expect(String(encoder.body(perRequest, () => result, parts))).toBe(whole(Composed, { ...perRequest, ...result }));
    }
    // Long pieces are escaped once and kept; short ones (a clock line) cost less to escape than to keep.
    for (const piece of stable) expect(memo.get(piece) instanceof Buffer, piece.slice(0, 20)).toBe(piece.length >= 256);
    expect(memo.stats().entries).toBe(2);
  });

  it('writes arrays of objects item by item, reusing an item handed out again, byte for byte as one serializer writes them', () => {
    const Plan = z.object({
      blocks: z.array(z.object({ kind: z.string(), content: z.string(), note: z.string().optional(), sha: z.string().nullable() })),
      cache: z.object({ key: z.string(), engine: z.string().nullable(), boundaries: z.array(z.object({ at: z.number(), sha: z.string() })), empty: z.array(z.object({ a: z.number() })) }),
    });
    const encoder = createAnswerEncoder(Plan, new Set(['blocks', 'cache']));
    const stable = [
      { kind: 'identity', content: 'Who "you" are \u2028', sha: null },
      { kind: 'rules', content: 'r'.repeat(700), note: 'n\u0001', sha: 'abc' },
    ];
    const boundary = { at: 12, sha: 'def' };
    const written: string[] = [];
    for (const minute of ['09:05', '09:06']) {
      // A new array each minute, holding the very stable items and a new clock item.
      const result = {
        blocks: [...stable, { kind: 'clock', content: `Clock ${minute} — “now”`, sha: minute }],
        cache: { key: 'k', engine: null, boundaries: [boundary, { at: 40, sha: minute }], empty: [] },
      };
      const bytes = String(encoder.body({}, () => result, encoder.resultParts(result)));
      expect(bytes).toBe(whole(Plan, result));
      written.push(bytes);
    }
    // An item changed in place would show: reuse is by identity, so this proves the bytes came from the kept item.
    (stable[0] as { content: string }).content = 'changed';
    const again = { blocks: [...stable], cache: { key: 'k', engine: 'e', boundaries: [boundary], empty: [] } };
    expect(String(encoder.body({}, () => again, encoder.resultParts(again)))).toContain('Who \\"you\\" are');
    expect(written[0]).not.toBe(written[1]);
  });

  describe('a result derived from the parts written for the one before (a persona’s next minute)', () => {
    const Minute = z.object({
      runId: z.string(),
      prompt: z.string(),
      digest: z.string().nullable(),
      blocks: z.array(z.object({ kind: z.string(), content: z.string() })),
      budget: z.object({ used: z.number(), omitted: z.object({ memory: z.number() }), kinds: z.record(z.string(), z.number()) }),
      note: z.string().optional(),
      session: z.object({ all: z.string(), voice: z.string(), tools: z.array(z.object({ name: z.string() })) }),
      warnings: z.array(z.string()),
    });
    const encoder = createAnswerEncoder(Minute, new Set(['prompt', 'digest', 'blocks', 'budget', 'note', 'session']));
    const stable = ['Identity "q" \u2028 ', 'x'.repeat(700), '\n\nRules \ud83d', '\ude00 and more'];
    const items = [{ kind: 'identity', content: 'Who "you" are' }, { kind: 'rules', content: 'r'.repeat(300) }];
    const tools = [{ name: 'lookup' }];

    /** One minute's result: new objects throughout, holding the very stable pieces and items, and data that may repeat. */
    const minute = (clock: string, used: number, memory: number, note: boolean, voice: string, base = stable) => {
      const pieces = [...base, `\n\nClock ${clock}`];
      const prompt = pieces.join('');
      const result = {
        prompt,
        digest: clock === '' ? null : `d-${clock}`,
        blocks: [...items, { kind: 'clock', content: clock }],
        budget: { used, omitted: { memory }, kinds: { identity: 3, clock: used % 3 } },
        ...(note ? { note: 'n'.repeat(used % 700) } : {}),
        session: { all: prompt, voice, tools },
      };
      return { result, composed: [{ value: prompt, pieces }] };
    };

    it('writes byte for byte what one serializer of the whole schema writes, whatever changed from one minute to the next', () => {
      const step = fc.tuple(fc.constantFrom('09:05', '09:06', '', '\u2028'), fc.constantFrom(10, 11, 700), fc.constantFrom(0, 1), fc.boolean(), fc.constantFrom('ash', 'verse'));
      fc.assert(
        fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
          const pieces = createCaches().pieces;
          let previous: ReturnType<typeof encoder.resultParts> | undefined;
          for (const [clock, used, memory, note, voice] of steps) {
            const { result, composed } = minute(clock, used, memory, note, voice);
            const parts = encoder.resultParts(result, { composed, pieces, previous });
            const perRequest = { runId: `r-${clock}`, warnings: [] };
            expect(String(encoder.body(perRequest, () => result, parts))).toBe(whole(Minute, { ...perRequest, ...result }));
            previous = parts;
          }
        }),
        { numRuns: 200 },
      );
    });

    it('writes only what changed: the unchanged pieces, items and same-data members are the very bytes written the minute before', () => {
      // No surrogate pair split between pieces here: such a prompt is written whole.
      const base = ['Identity "q" \u2028 ', 'x'.repeat(700), '\n\nRules \ud83d\ude00 and more'];
      const first = minute('09:05', 10, 0, true, 'ash', base);
      const before = encoder.resultParts(first.result, { composed: first.composed });
      const next = minute('09:06', 10, 0, true, 'ash', base);
      const after = encoder.resultParts(next.result, { composed: next.composed, previous: before });
      const old = new Set(before.flatMap((run) => run ?? []));
      const fresh = after.flatMap((run) => run ?? []).filter((chunk) => !old.has(chunk));
      // The clock's piece in the prompt and in the session, the clock item, and the digest: nothing else is written again.
      expect(fresh.map(String).sort()).toEqual(['"digest":"d-09:06"', '\\n\\nClock 09:06', '\\n\\nClock 09:06', '{"kind":"clock","content":"09:06"}'].sort());
    });

    it('takes a member from `extra` over the result’s own, as a merged object would', () => {
      const { result, composed } = minute('09:05', 10, 0, false, 'ash');
      const { session, ...compiled } = result;
      const parts = encoder.resultParts({ ...compiled, session: { all: 'stale', voice: 'x', tools: [] } }, { composed, extra: { session } });
      expect(String(encoder.body({ runId: 'r', warnings: [] }, () => result, parts))).toBe(whole(Minute, { runId: 'r', warnings: [], ...result }));
    });
  });

  it('a surrogate pair split between two pieces is escaped as one character, as the whole string is', () => {
    const Prompt = z.object({ prompt: z.string() });
    const encoder = createAnswerEncoder(Prompt, new Set(['prompt']));
    const pieces = ['smile \ud83d', '\ude00 there'];
    const result = { prompt: pieces.join('') };
    const parts = encoder.resultParts(result, { composed: [{ value: result.prompt, pieces }], pieces: createCaches().pieces });
    expect(String(encoder.body({}, () => result, parts))).toBe(whole(Prompt, result));
    expect(String(encoder.body({}, () => result, parts))).toContain('😀');
  });

  it('a short string with control characters beside a joined one is written as the schema serializer writes it', () => {
    const Two = z.object({ prompt: z.string(), other: z.string() });
    const encoder = createAnswerEncoder(Two, new Set(['prompt', 'other']));
    const pieces = ['a'.repeat(600), 'b'];
    for (const other of ['\u0000cc:0\u0000', 'x\u0000cc:1\u0000y', '\u0000cc:7\u0000', '\u0000cc:\u0000']) {
      const result = { prompt: pieces.join(''), other };
      const parts = encoder.resultParts(result, { composed: [{ value: result.prompt, pieces }], pieces: createCaches().pieces });
      expect(String(encoder.body({}, () => result, parts)), JSON.stringify(other)).toBe(whole(Two, result));
    }
  });

  it('regression: a member added to the schema is written (the hand-kept writer would have dropped it silently)', () => {
    const encoder = createAnswerEncoder(Schema.extend({ added: z.number() }), RESULT);
    const body = JSON.parse(String(encoder.body({ runId: 'r', sources: [], warnings: [], added: 7 }, () => ({ prompt: 'p', digest: null }))));
    expect(body.added).toBe(7);
  });

  it('writes no member the schema does not name', () => {
    const encoder = createAnswerEncoder(Schema, RESULT);
    const body = JSON.parse(String(encoder.body({ runId: 'r', sources: [], warnings: [], secret: 'x' }, () => ({ prompt: 'p', digest: null, content: 'y' }))));
    expect(Object.keys(body)).toEqual(['runId', 'prompt', 'digest', 'sources', 'warnings']);
  });
});
