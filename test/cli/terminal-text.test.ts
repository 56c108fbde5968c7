import { describe, expect, it } from 'vitest';
import { terminalJson, terminalText } from '../../src/cli/terminal-text.js';

/** Anything a terminal acts on: ESC, BEL, C0 but tab and newline, DEL, C1, bidi controls. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('terminalText', () => {
  it('shows escape sequences as one marker each, and drops their parameters', () => {
    expect(terminalText('red \u001b[31;1mALERT\u001b[0m done')).toBe('red ⟨U+001B⟩ALERT⟨U+001B⟩ done');
    // OSC: set the window title, write the clipboard (OSC 52), a hyperlink; ended by BEL or ST.
    expect(terminalText('a\u001b]0;pwned\u0007b')).toBe('a⟨U+001B⟩b');
    expect(terminalText('a\u001b]52;c;ZXZpbA==\u001b\\b')).toBe('a⟨U+001B⟩b');
    expect(terminalText('\u001b]8;;http://evil.example\u001b\\link\u001b]8;;\u001b\\')).toBe('⟨U+001B⟩link⟨U+001B⟩');
    // The C1 forms, and an escape that reset the terminal.
    expect(terminalText('x\u009b2Jy\u009d0;t\u009cz')).toBe('x⟨U+009B⟩y⟨U+009D⟩z');
    expect(terminalText('\u001bc')).toBe('⟨U+001B⟩');
  });

  it('keeps newline and tab, and shows every other control and each bidi control as a marker', () => {
    expect(terminalText('line 1\n\tline 2')).toBe('line 1\n\tline 2');
    expect(terminalText('over\rwrite\u0008\u007f')).toBe('over⟨U+000D⟩write⟨U+0008⟩⟨U+007F⟩');
    expect(terminalText('Pay the invoice of $\u202e0001\u202c today')).toBe('Pay the invoice of $⟨U+202E⟩0001⟨U+202C⟩ today');
    expect(terminalText('plain text, émoji 🪐 and ⟨brackets⟩')).toBe('plain text, émoji 🪐 and ⟨brackets⟩');
  });

  it('never lets an unterminated or truncated sequence swallow the text after a newline', () => {
    expect(terminalText('a\u001b]0;never ended\nnext line')).toBe('a⟨U+001B⟩\nnext line');
    expect(terminalText('a\u001b[12')).toBe('a⟨U+001B⟩');
    expect(terminalText('end\u001b')).toBe('end⟨U+001B⟩');
  });

  it('leaves nothing a terminal acts on, whatever the input (every code unit below U+00A0 and the bidi ones)', () => {
    const all = Array.from({ length: 0xa0 }, (_, i) => String.fromCharCode(i)).join('') + '\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069';
    for (let i = 0; i < all.length; i++) expect(terminalText(all.slice(i) + all.slice(0, i))).not.toMatch(UNSAFE);
  });

  it('is linear: 8 times the input is about 8 times the work, never more', () => {
    // The process's CPU time, not the clock's: time spent waiting for a core on a busy machine is
    // not counted. The best of five runs each: cache misses after a switch slow some runs, never speed one up.
    const time = (text: string) => {
      let best = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 5; i++) {
        const start = process.cpuUsage();
        terminalText(text);
        const spent = process.cpuUsage(start);
        best = Math.min(best, spent.user + spent.system);
      }
      return best;
    };
    const unit = '\u001b[' + '1;'.repeat(50) + '\u001b]' + 'x'.repeat(50);
    time(unit.repeat(1000));
    const ratio = time(unit.repeat(8000)) / time(unit.repeat(1000));
    expect(ratio).toBeLessThan(24);
  });
});

describe('terminalJson', () => {
  it('escapes DEL, C1 and bidi controls as \\u escapes: the same data once parsed, nothing raw on the terminal', () => {
    const value = { warning: 'tools.json: Unrecognized key: "\u001b]0;pwned\u0007"', c1: '\u009b2J', bidi: '$\u202e0001' };
    const json = terminalJson(value);
    expect(json).not.toMatch(UNSAFE);
    expect(json).toContain('\\u009b');
    expect(JSON.parse(json)).toEqual(value);
  });
});
