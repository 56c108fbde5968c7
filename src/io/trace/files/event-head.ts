import { listedFields } from '../event-record.js';
import type { HeadSummary } from './run-lookup.js';

/** How the writer starts an event line: the event's own fields come first, its run id first of them. */
const HEAD_PREFIX = '{"t":"event","event":{';
/** The head is read from at most this many of a line's first bytes (a longer head is parsed whole). */
const HEAD_WINDOW = 1024;

/**
 * The event's own fields a listing filters and orders by, in the order the writer writes
 * them (`ownHead` in event-record.ts); every one of them comes before any other field.
 */
const HEAD_KEYS = ['runId', 'parentRunId', 'at', 'route', 'subject', 'caller', 'surface', 'status', 'outcome', 'requestId', 'traceparent'];

/** What a head's string cannot hold as the writer writes it plainly: an escape, a control character — or a byte past ASCII, decoded again as UTF-8. */
const NOT_PLAIN = /[\\\u0000-\u001f\u0080-\u00ff]/;
const ESCAPED = /[\\\u0000-\u001f]/;

/**
 * An event line's head — its time and the fields filters and ordering need — read from the
 * line's first bytes without parsing the rest: a listing reads thousands of lines of runs
 * that do not make its page, and a whole parse of each (≈ 1.9 KB of references) was most of
 * its time. Linear in the bytes of the head. Null when the line does not start as the writer
 * writes one (a key out of order, an escape, another type): the caller then parses it whole.
 */
export function readHead(line: Buffer): { atMs: number; summary: HeadSummary } | null {
  // Latin-1 maps each byte to one character: positions in `text` are byte offsets in `line`.
  const text = line.toString('latin1', 0, Math.min(line.length, HEAD_WINDOW));
  if (!text.startsWith(HEAD_PREFIX)) return null;
  const values: Array<string | number | { kind: string; id: string } | undefined> = [];
  let at = HEAD_PREFIX.length;
  let rank = -1;
  for (;;) {
    if (text.charCodeAt(at) !== QUOTE) return null;
    const keyEnd = text.indexOf('"', at + 1);
    if (keyEnd === -1 || text.charCodeAt(keyEnd + 1) !== COLON) return null;
    // A key is compared as written: one with an escape is none of these, and ends the head.
    const next = HEAD_KEYS.indexOf(text.slice(at + 1, keyEnd));
    // Past the head: the writer writes every head field before any other.
    if (next === -1) break;
    if (next <= rank) return null;
    rank = next;
    at = keyEnd + 2;
    let end: number;
    if (next === SUBJECT) {
      const subject = readSubject(line, text, at);
      if (subject === null) return null;
      values[next] = subject.value;
      end = subject.end;
    } else if (next === STATUS) {
      end = at;
      while (end - at < 4 && text.charCodeAt(end) >= 0x30 && text.charCodeAt(end) <= 0x39) end++;
      // JSON has no leading zero.
      if (end === at || (text.charCodeAt(at) === 0x30 && end - at > 1)) return null;
      values[next] = Number(text.slice(at, end));
    } else {
      const value = readString(line, text, at);
      if (value === null) return null;
      values[next] = value.value;
      end = value.end;
    }
    const after = text.charCodeAt(end);
    if (after === CLOSE) break;
    if (after !== COMMA) return null;
    at = end + 1;
  }
  const [runId, , time, route, subject, caller, , status, outcome, requestId, traceparent] = values;
  if (typeof runId !== 'string' || typeof time !== 'string' || typeof route !== 'string' || typeof subject !== 'object') return null;
  if (typeof status !== 'number' || typeof outcome !== 'string') return null;
  const atMs = Date.parse(time);
  if (!Number.isFinite(atMs)) return null;
  const summary: HeadSummary = { runId, subject: subject as HeadSummary['subject'], status, outcome: outcome as HeadSummary['outcome'] };
  if (typeof caller === 'string') summary.caller = caller;
  else if (caller !== undefined) return null;
  // As an indexed event lists them (too long, or not a string, and they are left out).
  const listed = listedFields({ requestId, traceparent } as Parameters<typeof listedFields>[0]);
  if (listed.requestId !== undefined) summary.requestId = listed.requestId;
  if (listed.traceparent !== undefined) summary.traceparent = listed.traceparent;
  return { atMs, summary };
}

const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const CLOSE = 0x7d;
const SUBJECT = HEAD_KEYS.indexOf('subject');
const STATUS = HEAD_KEYS.indexOf('status');

/** A plain JSON string at `at`: its text and the position after its closing quote. */
function readString(line: Buffer, text: string, at: number): { value: string; end: number } | null {
  if (text.charCodeAt(at) !== QUOTE) return null;
  const close = text.indexOf('"', at + 1);
  if (close === -1) return null;
  // Read from the bytes, not sliced from `text`: a slice would keep the whole line alive with the run's tally.
  let value = line.toString('latin1', at + 1, close);
  if (NOT_PLAIN.test(value)) {
    if (ESCAPED.test(value)) return null;
    value = line.toString('utf8', at + 1, close);
  }
  return { value, end: close + 1 };
}

/** `{"kind":"…","id":"…"}` exactly. */
function readSubject(line: Buffer, text: string, at: number): { value: { kind: string; id: string }; end: number } | null {
  if (!text.startsWith('{"kind":', at)) return null;
  const kind = readString(line, text, at + 8);
  if (kind === null || !text.startsWith(',"id":', kind.end)) return null;
  const id = readString(line, text, kind.end + 6);
  if (id === null || text.charCodeAt(id.end) !== CLOSE) return null;
  return { value: { kind: kind.value, id: id.value }, end: id.end + 1 };
}
