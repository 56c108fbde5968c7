import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { parseInbox } from '../../../src/core/signals/inbox.js';

describe('parseInbox', () => {
  it('counts [unread] and [read] lines and keeps unread senders in file order', () => {
    const inbox = parseInbox('- [unread] Jordan Lee: lunch?\n- [read] Sam: ok\n* [UNREAD] Priya: draft attached\n- [Read] Mom: call me');
    expect(inbox.unreadCount).toBe(2);
    expect(inbox.readCount).toBe(2);
    expect(inbox.unread).toEqual([
      { sender: 'Jordan Lee', text: 'lunch?', line: 1 },
      { sender: 'Priya', text: 'draft attached', line: 3 },
    ]);
  });

  it('has no sender when there is no colon, or when the first colon belongs to a time', () => {
    const inbox = parseInbox('- [unread] a note without sender\n- [unread] Meeting at 12:30 moved');
    expect(inbox.unread.map((message) => message.sender)).toEqual([undefined, undefined]);
    expect(inbox.unread[1]!.text).toBe('Meeting at 12:30 moved');
  });

  it('keeps senders and texts single-line and clamped', () => {
    const [message] = parseInbox(`- [unread] ${'N'.repeat(70)}\u0085x: ${'y'.repeat(1000)}`).unread;
    expect(message!.sender!.length).toBeLessThanOrEqual(80);
    expect(message!.sender).not.toMatch(/[\u0085\n]/);
    expect(message!.text.length).toBeLessThanOrEqual(300);
  });

  it('ignores other statuses, nested items, comments and code', () => {
    const text = '- [archived] x: y\n  - [unread] nested: z\n<!-- - [unread] hidden: h -->\n```\n- [unread] code: c\n```\n- unread: not a status';
    expect(parseInbox(text)).toEqual({ unreadCount: 0, readCount: 0, unread: [] });
  });

  it('degrades to zero on empty text and binary junk, and stays linear on 5 MB', () => {
    expect(parseInbox('').unreadCount).toBe(0);
    expect(parseInbox('\u0000\u0001\ufffd').unreadCount).toBe(0);
    const big = '- [unread] Sender: text\n'.repeat(220_000);
    expect(parseInbox(big).unreadCount).toBe(220_000);
  });

  it('reads the example brain: three unread, two read', () => {
    const inbox = parseInbox(readFileSync(`${EXAMPLE_BRAIN}/messages/inbox.md`, 'utf8'));
    expect(inbox.unreadCount).toBe(3);
    expect(inbox.readCount).toBe(2);
    expect(inbox.unread.map((message) => message.sender)).toEqual(['Jordan Lee', 'Priya', 'Northwind billing']);
  });
});
