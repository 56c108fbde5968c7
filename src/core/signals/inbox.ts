import { toSingleLine } from '../text.js';
import { indentOf, listItemText, markdownLines } from './markdown.js';

/**
 * `messages/inbox.md`: `- [unread] sender: text` and `- [read] sender: text` lines.
 * Documented with examples in docs/brain-formats.md ("Inbox").
 */

export interface InboxMessage {
  /** Text before the first `:` (at most 80 chars), single-line; undefined when there is none. */
  sender: string | undefined;
  text: string;
  line: number;
}

export interface Inbox {
  unreadCount: number;
  readCount: number;
  /** Unread messages in file order. */
  unread: InboxMessage[];
}

export const MAX_SENDER_CHARS = 80;
export const MAX_MESSAGE_CHARS = 300;

const STATUS = /^\[(unread|read)\][ \t]*(.*)$/is;

/** Parses the inbox; statuses are case-insensitive, other lines are ignored. Linear in the text. */
export function parseInbox(text: string): Inbox {
  const unread: InboxMessage[] = [];
  let readCount = 0;
  for (const { number, text: line } of markdownLines(text)) {
    if (indentOf(line) >= 2) continue;
    const item = listItemText(line);
    if (item === undefined) continue;
    const match = STATUS.exec(item);
    if (!match) continue;
    if (match[1]!.toLowerCase() === 'read') {
      readCount++;
      continue;
    }
    const body = match[2]!;
    const colon = body.slice(0, MAX_SENDER_CHARS + 1).indexOf(':');
    // "1:1" or "12:30" right after the sender's first word is a time, not the sender's colon.
    const hasSender = colon > 0 && !/\d$/.test(body.slice(0, colon));
    const sender = hasSender ? toSingleLine(body.slice(0, colon), MAX_SENDER_CHARS) || undefined : undefined;
    unread.push({
      sender,
      text: toSingleLine(hasSender ? body.slice(colon + 1) : body, MAX_MESSAGE_CHARS),
      line: number,
    });
  }
  return { unreadCount: unread.length, readCount, unread };
}
