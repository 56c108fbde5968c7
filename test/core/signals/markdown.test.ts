import { describe, expect, it } from 'vitest';
import { headingOf, indentOf, isRule, listItemText, looksBinary, markdownLines } from '../../../src/core/signals/markdown.js';

describe('markdown helpers', () => {
  it('yields lines outside fences with CR and comments removed, keeping line numbers', () => {
    const lines = markdownLines('a\r\n<!-- x\ny -->b\n```js\ncode\n```\n~~~\nmore\n~~~\nc');
    expect(lines).toEqual([
      { number: 1, text: 'a' },
      { number: 2, text: '' },
      { number: 3, text: 'b' },
      { number: 10, text: 'c' },
    ]);
  });

  it('reads ATX headings with optional closing hashes, and nothing else', () => {
    expect(headingOf('## P0 — Urgent ##')).toEqual({ level: 2, text: 'P0 — Urgent' });
    expect(headingOf('# C#')).toEqual({ level: 1, text: 'C#' });
    expect(headingOf('#hashtag')).toBeUndefined();
    expect(headingOf('####### seven')).toBeUndefined();
    expect(headingOf('    # indented code')).toBeUndefined();
  });

  it('tells list items, rules and indentation apart', () => {
    expect(listItemText('- item')).toBe('item');
    expect(listItemText('12) item')).toBe('item');
    expect(listItemText('-item')).toBeUndefined();
    expect(isRule('---')).toBe(true);
    expect(isRule(' * * *')).toBe(true);
    expect(isRule('--')).toBe(false);
    expect(isRule('- [ ] task')).toBe(false);
    expect(indentOf('\t  x')).toBe(6);
  });

  it('recognises binary junk but not ordinary or non-Latin text', () => {
    expect(looksBinary('a\u0000b')).toBe(true);
    expect(looksBinary('\ufffd\ufffd\ufffd text')).toBe(true);
    expect(looksBinary('')).toBe(false);
    expect(looksBinary('# Notes\n- déjà vu, 日本語, emoji 😀\n')).toBe(false);
  });
});
