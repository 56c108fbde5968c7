/**
 * The viewer's copy of `toAscii` (it is built alone) is the service's, character for
 * character: the viewer rebuilds a persona's realtime session with it, byte for byte.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toAscii as serviceToAscii } from '../../src/core/text.js';
import { toAscii } from '../../ui/src/model.js';

// Typographic characters, accents, emoji and spaces in every arrangement, ASCII between them.
const PIECES = ['a', ' ', '\n', '—', '–', '“', '”', '‘', '’', '…', 'é', 'ß', 'Æ', '😀', '\u00a0', '\u200b', '中', 'ﬁ', '→', '€', '̃', 'x y'];

describe('the viewer\'s toAscii', () => {
  it('is the service\'s on every mapped character and on any mix of typographic text', () => {
    for (let code = 0x80; code < 0x3100; code++) expect(toAscii(`a ${String.fromCharCode(code)} b`)).toBe(serviceToAscii(`a ${String.fromCharCode(code)} b`));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        expect(toAscii(text)).toBe(serviceToAscii(text));
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(toAscii(text)).toBe(serviceToAscii(text));
      }),
    );
  });
});
