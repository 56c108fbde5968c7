import { createHash } from 'node:crypto';

/**
 * The on-disk format of the trace store (docs/traces.md): append-only JSONL files, one
 * writer per file, each file self-contained. Four record kinds, always with `t` first so
 * a scanner can skip blob and data lines without parsing them:
 *
 *   {"t":"file","v":2,"writer":"<writerId>","created":"<ISO>"}   first line of every file
 *   {"t":"blob","sha":"<sha256>","text":"..."}                    a segment's text, once per file
 *   {"t":"data","sha":"<sha256>","data":{...}}                    a repeated structure (block summary,
 *                                                                  source record, cache plan), once per file;
 *                                                                  sha256 of the exact JSON text after "data":
 *   {"t":"event","event":{...}}                                   one trace event
 */
export const TRACE_FORMAT_VERSION = 2;

const FILE_NAME = /^trace-(\d{8}T\d{9}Z)-([A-Za-z0-9-]+)-(\d{6})\.jsonl$/;

export const BLOB_PREFIX = Buffer.from('{"t":"blob"');
export const DATA_PREFIX = Buffer.from('{"t":"data"');
export const EVENT_PREFIX = Buffer.from('{"t":"event"');

/** A reference from an event to a blob or data record in the same file: sha256, byte offset, byte length (with newline). */
export type RecordRef = [sha256: string, offset: number, length: number];
export type SegmentRef = RecordRef;

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function compactStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, '');
}

/** `trace-20260105T101112345Z-<writerId>-000001.jsonl`: sorts by creation time, unique per writer. */
export function traceFileName(createdMs: number, writerId: string, sequence: number): string {
  return `trace-${compactStamp(createdMs)}-${writerId}-${String(sequence).padStart(6, '0')}.jsonl`;
}

export function parseTraceFileName(name: string): { createdMs: number; writerId: string } | null {
  const match = FILE_NAME.exec(name);
  if (!match) return null;
  const s = match[1]!;
  const createdMs = Date.UTC(
    Number(s.slice(0, 4)),
    Number(s.slice(4, 6)) - 1,
    Number(s.slice(6, 8)),
    Number(s.slice(9, 11)),
    Number(s.slice(11, 13)),
    Number(s.slice(13, 15)),
    Number(s.slice(15, 18)),
  );
  return Number.isFinite(createdMs) ? { createdMs, writerId: match[2]! } : null;
}

/** A writer id safe in a file name: host (pod name) and pid, plus randomness against pid reuse. */
export function makeWriterId(hostname: string, pid: number, random: string): string {
  const host = hostname.replace(/[^A-Za-z0-9-]/g, '-').replace(/-+/g, '-').slice(0, 63) || 'host';
  return `${host}-${pid}-${random}`;
}

export function fileHeaderLine(writerId: string, createdMs: number): string {
  return `{"t":"file","v":${TRACE_FORMAT_VERSION},"writer":${JSON.stringify(writerId)},"created":"${new Date(createdMs).toISOString()}"}\n`;
}

export function blobLine(sha: string, text: string): string {
  return `{"t":"blob","sha":"${sha}","text":${JSON.stringify(text)}}\n`;
}

/** `json` is stored verbatim, so its sha256 can be checked against the bytes on disk. */
export function dataLine(sha: string, json: string): string {
  return `{"t":"data","sha":"${sha}","data":${json}}\n`;
}

/** `references` is ready JSON (`,"name":value` members) appended to the event object's own fields. */
export function eventLine(stored: object, references = ''): string {
  const own = JSON.stringify(stored);
  return `{"t":"event","event":${own.slice(0, -1)}${references}}}\n`;
}

export function startsWith(line: Buffer, prefix: Buffer): boolean {
  return line.length >= prefix.length && line.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** Parses a blob line and checks its text against the sha it claims and the sha expected. */
export function parseBlobLine(line: string, expectedSha: string): string | null {
  try {
    const record = JSON.parse(line) as { t?: unknown; sha?: unknown; text?: unknown };
    if (record.t !== 'blob' || record.sha !== expectedSha || typeof record.text !== 'string') return null;
    return sha256Hex(record.text) === expectedSha ? record.text : null;
  } catch {
    return null;
  }
}

/** Parses a data line whose JSON text hashes to the sha expected; undefined otherwise. */
export function parseDataLine(line: string, expectedSha: string): unknown {
  const head = `{"t":"data","sha":"${expectedSha}","data":`;
  const end = line.endsWith('\n') ? line.length - 2 : line.length - 1;
  if (!line.startsWith(head) || line[end] !== '}') return undefined;
  const json = line.slice(head.length, end);
  if (sha256Hex(json) !== expectedSha) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The JSON text and sha256 of small records that repeat from event to event (block
 * summaries, source records) as new objects with the same values, found without
 * serialising them again: looked up by `id`, then compared with `same`. The JSON is that
 * of `pick(record)`. Bounded: it starts over when full.
 */
export class RecordMemo<R> {
  private readonly entries = new Map<unknown, Array<{ record: R; json: string; sha: string }>>();
  private count = 0;

  constructor(
    private readonly id: (record: R) => unknown,
    private readonly same: (known: R, record: R) => boolean,
    private readonly pick: (record: R) => R,
    private readonly maxEntries = 4096,
  ) {}

  get(record: R): { json: string; sha: string } {
    const key = this.id(record);
    const candidates = this.entries.get(key);
    if (candidates) for (const entry of candidates) if (this.same(entry.record, record)) return entry;
    const picked = this.pick(record);
    const json = JSON.stringify(picked);
    const entry = { record: picked, json, sha: sha256Hex(json) };
    if (this.count >= this.maxEntries) {
      this.entries.clear();
      this.count = 0;
    }
    const list = this.entries.get(key);
    if (list) list.push(entry);
    else this.entries.set(key, [entry]);
    this.count++;
    return entry;
  }
}
