import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clampLine, cutAtLineBoundary, keepNewest, stripHtmlComments, toAscii, toSingleLine } from '../../src/core/text.js';

const LINE_BREAKS = /[\n\r\u2028\u2029\u0085\u000b\u000c]/;

describe('toSingleLine', () => {
  it('turns newlines, CR, line separators and control characters into single spaces', () => {
    expect(toSingleLine('a\nb\r\nc\u2028d\u2029e\u0085f\u0000g\tg', 100)).toBe('a b c d e f g g');
  });

  it('removes bidi overrides and BOMs that could make a line read differently', () => {
    expect(toSingleLine('\ufeffsafe \u202etxt.exe\u202c', 100)).toBe('safe txt.exe');
  });

  it('collapses whitespace runs, including no-break and ideographic spaces, and trims', () => {
    expect(toSingleLine('  a \u00a0\u3000  b  ', 100)).toBe('a b');
  });

  it('clamps to maxChars with an ellipsis, preferring a word boundary', () => {
    expect(toSingleLine('Answer the landlord about the studio lease', 20)).toBe('Answer the landlord…');
    expect(toSingleLine('abcdefghijklmnopqrstuvwxyz', 10)).toBe('abcdefghi…');
    expect(toSingleLine('short', 10)).toBe('short');
  });

  it('never splits a surrogate pair', () => {
    const clamped = toSingleLine('ab😀😀😀😀', 4);
    expect(clamped).toBe('ab…');
    expect(() => encodeURIComponent(clamped)).not.toThrow();
  });

  it('marks a huge input as cut even when the kept part collapses to little', () => {
    const text = `a${' '.repeat(1_000_000)}b`;
    expect(toSingleLine(text, 10)).toBe('a…');
  });

  it('never returns a line break and never exceeds maxChars', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), fc.integer({ min: 1, max: 120 }), (text, max) => {
        const line = toSingleLine(text, max);
        expect(line).not.toMatch(LINE_BREAKS);
        expect(line.length).toBeLessThanOrEqual(max);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('clampLine', () => {
  it('keeps text that fits and handles tiny limits', () => {
    expect(clampLine('abc', 3)).toBe('abc');
    expect(clampLine('abcd', 1)).toBe('…');
    expect(clampLine('abcd', 0)).toBe('');
  });
});

describe('cutAtLineBoundary', () => {
  const text = 'first line\nsecond line\nthird line';

  it('returns text that fits unchanged', () => {
    expect(cutAtLineBoundary(text, text.length)).toBe(text);
  });

  it('cuts after the last whole line that fits, never mid-line', () => {
    expect(cutAtLineBoundary(text, 25)).toBe('first line\nsecond line');
    expect(cutAtLineBoundary(text, 22)).toBe('first line\nsecond line');
    expect(cutAtLineBoundary(text, 21)).toBe('first line');
  });

  it('clamps the first line when it alone is too long', () => {
    expect(cutAtLineBoundary('a very long first line\nnext', 10)).toBe('a very lo…');
    expect(cutAtLineBoundary('a very long first line\nnext', 9)).toBe('a very…');
  });

  it('always returns whole lines of the input (or a clamped first line) within the limit', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 30 }).map((line) => line.replace(/\n/g, ' ')), { maxLength: 20 }), fc.integer({ min: 1, max: 300 }), (lines, max) => {
        const input = lines.join('\n');
        const cut = cutAtLineBoundary(input, max);
        expect(cut.length).toBeLessThanOrEqual(max);
        if (cut === input) return;
        const firstLine = input.split('\n')[0]!;
        if (firstLine.length > max) {
          expect(cut.endsWith('…')).toBe(true);
          return;
        }
        expect(input.startsWith(cut)).toBe(true);
        expect(input[cut.length] === '\n' || /^\s*$/.test(input.slice(cut.length, input.indexOf('\n', cut.length)))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('keepNewest', () => {
  it('keeps the end of a growing file, starting at a line boundary', () => {
    const text = 'old 1\nold 2\nnew 1\nnew 2';
    expect(keepNewest(text, 100)).toBe(text);
    expect(keepNewest(text, 12)).toBe('new 1\nnew 2');
    expect(keepNewest(text, 14)).toBe('new 1\nnew 2');
    expect(keepNewest(text, 16)).toBe('new 1\nnew 2');
    expect(keepNewest(text, 17)).toBe('old 2\nnew 1\nnew 2');
  });

  it('keeps the end of the last line behind an ellipsis when it alone is too long', () => {
    expect(keepNewest('old\nthe newest line is long', 8)).toBe('…is long');
  });

  it('is always a suffix of the input (or an ellipsis plus one) within the limit', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 1, max: 200 }), (text, max) => {
        const kept = keepNewest(text, max);
        expect(kept.length).toBeLessThanOrEqual(max);
        if (kept.startsWith('…') && !text.endsWith(kept)) expect(text.endsWith(kept.slice(1))).toBe(true);
        else expect(text.endsWith(kept)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('stripHtmlComments', () => {
  it('removes inline and multi-line comments', () => {
    expect(stripHtmlComments('- [ ] Task <!-- id: t-12 -->')).toBe('- [ ] Task ');
    expect(stripHtmlComments('a<!-- x\ny -->b<!--z-->c')).toBe('abc');
  });

  it('hides the rest of the text after an unterminated comment, as rendered markdown does', () => {
    expect(stripHtmlComments('visible <!-- never closed\nhidden')).toBe('visible ');
  });

  it('is linear on many unterminated openers', () => {
    const text = '<!--'.repeat(1_000_000);
    expect(stripHtmlComments(text)).toBe('');
  });
});

describe('toAscii', () => {
  it('transliterates typographic punctuation, spaces, bullets and arrows', () => {
    expect(toAscii('1:1 with Jordan — call “now”… it’s 9–5 • done → next\u00a0ok')).toBe(
      '1:1 with Jordan -- call "now"... it\'s 9-5 - done -> next ok',
    );
  });

  it('strips accents and drops what has no ASCII form, keeping one space between words', () => {
    expect(toAscii('Zoë at the café, ½ price 😀 today')).toBe('Zoe at the cafe, 1/2 price today');
    expect(toAscii('日本語')).toBe('');
  });

  it('returns pure ASCII and keeps every line break', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const ascii = toAscii(text);
        expect(ascii).toMatch(/^[\u0000-\u007f]*$/);
        expect(ascii.split('\n').length).toBe(text.split('\n').length);
      }),
      { numRuns: 1000 },
    );
  });

  it('returns ASCII input unchanged', () => {
    expect(toAscii('plain ascii\nline two')).toBe('plain ascii\nline two');
  });
});
