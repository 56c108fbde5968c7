import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCaches } from '../../src/caches.js';
import { createCompiler } from '../../src/core/compile.js';
import { createAnswerEncoder, wireOrder } from '../../src/http/answer.js';
import { serializerJsonSchema } from '../../src/http/serializer.js';
import { voicePersona } from '../core/golden/cases.js';

const Schema = z.object({
  runId: z.string(),
  note: z.string().optional(),
  prompt: z.string(),
  digest: z.string().nullable(),
  sources: z.array(z.object({ path: z.string() })),
  extra: z.object({ voice: z.string() }).optional(),
  warnings: z.array(z.string()),
});
const ResultSchema = Schema.pick({ prompt: true, digest: true, extra: true });

/** What one serializer of the whole schema writes: the bytes every encoder must produce. */
const whole = (schema: z.ZodType, value: unknown) =>
  (fastJson(serializerJsonSchema(schema) as unknown as Parameters<typeof fastJson>[0]) as (value: unknown) => string)(value);

describe('createAnswerEncoder', () => {
  it('writes the members in the order fast-json-stringify does: required first, then optional, each in schema order', () => {
    expect(wireOrder(Schema)).toEqual(['runId', 'prompt', 'digest', 'sources', 'warnings', 'note', 'extra']);
  });

  it('writes, once or from a shared result’s kept parts, byte for byte what one serializer of the whole schema writes', () => {
    const encoder = createAnswerEncoder(Schema, ResultSchema);
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

  it('writes byte for byte what one serializer of the whole schema writes, whatever the result holds: escapes, pairs, nulls, absent members, arrays of objects', () => {
    const Answer = z.object({
      runId: z.string(),
      prompt: z.string(),
      digest: z.string().nullable(),
      blocks: z.array(z.object({ kind: z.string(), content: z.string(), note: z.string().optional() })),
      budget: z.object({ used: z.number(), omitted: z.object({ memory: z.number() }), kinds: z.record(z.string(), z.number()) }),
      note: z.string().optional(),
      session: z.object({ all: z.string(), voice: z.string(), tools: z.array(z.object({ name: z.string() })) }),
      warnings: z.array(z.string()),
    });
    const encoder = createAnswerEncoder(Answer, Answer.pick({ prompt: true, digest: true, blocks: true, budget: true, note: true, session: true }));
    const text = fc.constantFrom('', 'plain', 'Identity "q" \u2028 ', 'x'.repeat(700), 'Rules \ud83d\ude00 and more', 'lone \ud83d', '\u0000cc:0\u0000', 'tab\tnew\nline é');
    const result = fc.record(
      {
        prompt: text,
        digest: fc.option(text, { nil: null }),
        blocks: fc.array(fc.record({ kind: text, content: text, note: text }, { requiredKeys: ['kind', 'content'] }), { maxLength: 4 }),
        budget: fc.record({ used: fc.integer(), omitted: fc.record({ memory: fc.nat() }), kinds: fc.dictionary(text, fc.integer(), { maxKeys: 3 }) }),
        note: text,
        session: fc.record({ all: text, voice: text, tools: fc.array(fc.record({ name: text }), { maxLength: 3 }) }),
      },
      { requiredKeys: ['prompt', 'digest', 'blocks', 'budget', 'session'] },
    );
    fc.assert(
      fc.property(result, fc.array(text, { maxLength: 3 }), (value, warnings) => {
        const perRequest = { runId: 'r', warnings };
        const expected = whole(Answer, { ...perRequest, ...value });
        expect(encoder.body(perRequest, () => value)).toBe(expected);
        expect(String(encoder.body(perRequest, () => value, encoder.resultParts(value)))).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the kept parts of a result again as they were, for every request that delivers it', () => {
    const encoder = createAnswerEncoder(Schema, ResultSchema);
    const result = { prompt: 'Hello', digest: 'abc', extra: { voice: 'ash' } };
    const parts = encoder.resultParts(result);
    const bodies = ['r1', 'r2'].map((runId) => String(encoder.body({ runId, sources: [], warnings: [] }, () => ({ prompt: 'never read', digest: null }), parts)));
    expect(bodies).toEqual(['r1', 'r2'].map((runId) => whole(Schema, { runId, sources: [], warnings: [], ...result })));
  });

  it('writes the prompts from the pieces they are joined from, byte for byte, each piece’s JSON written once and kept by the encoder', () => {
    const Prompts = z.object({
      runId: z.string(),
      systemPrompt: z.string(),
      inputPrompt: z.string().nullable(),
      instructions: z.string(),
      session: z.object({ type: z.literal('realtime'), instructions: z.string(), voice: z.string() }),
      warnings: z.array(z.string()),
    });
    const encoder = createAnswerEncoder(Prompts, Prompts.pick({ systemPrompt: true, inputPrompt: true, instructions: true, session: true }));
    const compiler = createCompiler({ memo: createCaches().compiler });
    const input = voicePersona();
    const kept: Buffer[] = [];
    for (const minute of ['2026-11-30T17:05:00Z', '2026-11-30T17:06:00Z']) {
      const compiled = compiler.compile({ ...input, clock: { ...input.clock!, now: new Date(minute) }, liveContext: { source: 'builtin:test', text: 'Lone \ud83d and a pair \ud83d\ude00 "quoted" \u2028' } });
      const result = { ...compiled, session: { type: 'realtime', instructions: compiled.instructions, voice: 'ash' } };
      const perRequest = { runId: `r-${minute}`, warnings: [] };
      const parts = encoder.resultParts(result, compiled);
      expect(String(encoder.body(perRequest, () => result, parts))).toBe(whole(Prompts, { ...perRequest, ...result }));
      // The stable prefix's JSON: in the system prompt, the instructions and the session's copy of them.
      const counted = new Map<Uint8Array, number>();
      for (const chunk of parts.flatMap((run) => run ?? [])) counted.set(chunk, (counted.get(chunk) ?? 0) + 1);
      const stable = [...counted].find(([chunk, times]) => times === 3 && chunk.length > 100);
      expect(stable).toBeDefined();
      kept.push(stable![0] as Buffer);
    }
    // The next minute shares the stable prefix, and its JSON.
    expect(kept[1]).toBe(kept[0]);
  });

  it('writes a frozen member (a persona’s tools, the same array at every minute) from its JSON kept by the value, byte for byte, in the result and in an object holding a prompt', () => {
    const Tool = z.object({ type: z.literal('function'), name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) });
    const Tools = z.object({
      runId: z.string(),
      instructions: z.string(),
      blocks: z.array(z.object({ kind: z.string() })),
      tools: z.array(Tool),
      session: z.object({ instructions: z.string(), tools: z.array(Tool) }),
      warnings: z.array(z.string()),
    });
    const encoder = createAnswerEncoder(Tools, Tools.pick({ instructions: true, blocks: true, tools: true, session: true }));
    const tools = Object.freeze([Object.freeze({ type: 'function' as const, name: 'search', description: 'Find "pages" \u2014 fast\n', parameters: Object.freeze({ type: 'object' }) })]);
    const chunksOf = (minute: string) => {
      const instructions = `Stable text.\n\n${minute}`;
      const result = { instructions, blocks: [{ kind: 'clock' }], tools, session: { instructions, tools } };
      const perRequest = { runId: `r-${minute}`, warnings: [] };
      const parts = encoder.resultParts(result, { systemPrompt: instructions, inputPrompt: null, instructions, prompt: { stable: { text: 'Stable text.' }, tail: `\n\n${minute}`, input: null } });
      expect(String(encoder.body(perRequest, () => result, parts))).toBe(whole(Tools, { ...perRequest, ...result }));
      return new Set(parts.flatMap((run) => run ?? []));
    };
    const first = chunksOf('17:05');
    const second = chunksOf('17:06');
    // The tools' JSON, once as a member of the answer and once of the session: the very chunks of the minute before.
    const shared = [...second].filter((chunk) => first.has(chunk) && Buffer.from(chunk).toString().includes('"search"'));
    expect(shared.map((chunk) => Buffer.from(chunk).toString().split(':')[0])).toEqual(['"tools"', '"tools"']);
    // A member that is not frozen (the blocks, new at every minute) is written again.
    expect([...second].filter((chunk) => first.has(chunk) && Buffer.from(chunk).toString().includes('clock'))).toEqual([]);
  });

  it('regression: a member added to the schema is written (the hand-kept writer would have dropped it silently)', () => {
    const encoder = createAnswerEncoder(Schema.extend({ added: z.number() }), ResultSchema);
    const body = JSON.parse(String(encoder.body({ runId: 'r', sources: [], warnings: [], added: 7 }, () => ({ prompt: 'p', digest: null }))));
    expect(body.added).toBe(7);
  });

  it('writes no member the schema does not name', () => {
    const encoder = createAnswerEncoder(Schema, ResultSchema);
    const body = JSON.parse(String(encoder.body({ runId: 'r', sources: [], warnings: [], secret: 'x' }, () => ({ prompt: 'p', digest: null, content: 'y' }))));
    expect(Object.keys(body)).toEqual(['runId', 'prompt', 'digest', 'sources', 'warnings']);
  });
});
