import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { asciiInstructions, asciiTools, realtimeSession } from '../../../src/core/persona/session.js';
import { toAscii } from '../../../src/core/text.js';

// ASCII words, spaces and line breaks around typographic characters, accents and emoji.
const PIECES = ['a', 'word', ' ', '  ', '\n', '\n\n', '—', '“', '”', '…', 'é', 'ß', '😀', '\u00a0', '\u200b', '中', '̃', '{"text":"', '"}'];

describe('realtimeSession', () => {
  it('makes the instructions realtime-safe ASCII, exactly as toAscii does, and keeps an ASCII prompt as it is', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 60 }), (pieces) => {
        const text = pieces.join('');
        expect(asciiInstructions(text)).toBe(toAscii(text));
        expect(realtimeSession(text, 'coral', []).instructions).toMatch(/^[\u0000-\u007f]*$/);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(asciiInstructions(text)).toBe(toAscii(text));
      }),
    );
    const ascii = 'Current date and time: Monday 30 November 2026, 17:05 (UTC, UTC+00:00)';
    expect(realtimeSession(ascii, 'ash', []).instructions).toBe(ascii);
  });

  it('gives the session tools ASCII descriptions, and the very same array when they already are', () => {
    const tool = { type: 'function' as const, name: 'search', description: 'Look it up — fast.', parameters: { type: 'object' as const, properties: {}, additionalProperties: false as const } };
    const ascii = [{ ...tool, description: 'Look it up.' }];
    expect(asciiTools(ascii)).toBe(ascii);
    expect(asciiTools([tool])).toEqual([{ ...tool, description: 'Look it up -- fast.' }]);
  });
});
