import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
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
