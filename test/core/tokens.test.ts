import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { approxTokens } from '../../src/core/index.js';

describe('approxTokens', () => {
  it('is about UTF-8 bytes / 4 for plain text', () => {
    expect(approxTokens('')).toBe(0);
    expect(approxTokens('abcd')).toBe(1);
    expect(approxTokens('abcde')).toBe(2);
    expect(approxTokens('a'.repeat(400))).toBe(100);
  });

  it('counts UTF-8 bytes, not UTF-16 units', () => {
    expect(approxTokens('é'.repeat(4))).toBe(2); // 2 bytes each
    expect(approxTokens('日本語です')).toBe(4); // 3 bytes each: 15 / 4
    expect(approxTokens('😀😀')).toBe(2); // a surrogate pair is 4 bytes
    expect(approxTokens('\ud800')).toBe(1); // a lone surrogate encodes as U+FFFD (3 bytes)
  });

  it('charges extra for code fences and table pipes', () => {
    const prose = 'x'.repeat(24);
    expect(approxTokens('```' + prose + '```')).toBeGreaterThan(approxTokens('"""' + prose + '"""'));
    expect(approxTokens('| a | b | c |')).toBeGreaterThan(approxTokens('; a ; b ; c ;'));
  });

  it('is deterministic', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => approxTokens(text) === approxTokens(text)));
  });

  it('never decreases when text is appended (monotonic in length)', () => {
    const pieces = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('`', '``', '```', '|', '||', '\ud83d', '\ude00', 'é'));
    fc.assert(
      fc.property(fc.array(pieces, { minLength: 1, maxLength: 20 }), (parts) => {
        let text = '';
        let previous = 0;
        for (const part of parts) {
          text += part;
          const tokens = approxTokens(text);
          expect(tokens).toBeGreaterThanOrEqual(previous);
          previous = tokens;
        }
      }),
      { numRuns: 500 },
    );
  });

  it('grows with every added character of the same kind', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 1, max: 400 }), (n, extra) => {
        expect(approxTokens('a'.repeat(n + extra * 4))).toBeGreaterThan(approxTokens('a'.repeat(n)));
      }),
    );
  });
});
