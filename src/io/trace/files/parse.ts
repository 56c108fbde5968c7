import { sha256Hex } from '../../../core/digest.js';
import { parseRecordJson } from '../event-rebuild.js';
import type { ChainMac, Predecessor } from '../chain.js';
import { FILE_PREFIX } from './format.js';

/**
 * Reading a trace file's lines back (the format is format.ts): its name, its header, and
 * blob and data lines checked against the sha256 an event names them by.
 */
const FILE_NAME = /^trace-(\d{8}T\d{9}Z)-([A-Za-z0-9-]+)-(\d{6})\.jsonl$/;

export function parseTraceFileName(name: string): { createdMs: number; writerId: string; sequence: number } | null {
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
  return Number.isFinite(createdMs) ? { createdMs, writerId: match[2]!, sequence: Number(match[3]) } : null;
}

/** A header as read back: version 2 headers have only `v`, `writer` and `created`. */
export interface FileHeader {
  v: number;
  writer: string;
  created: string;
  seq?: number;
  mac?: ChainMac;
  key?: string | null;
  prev?: Predecessor | null;
  p?: string;
  c?: string;
}



export function parseFileHeader(line: Buffer): FileHeader | null {
  if (!startsWith(line, FILE_PREFIX)) return null;
  try {
    const header = JSON.parse(line.toString('utf8')) as Partial<FileHeader>;
    if (typeof header.v !== 'number' || typeof header.writer !== 'string' || typeof header.created !== 'string') return null;
    return header as FileHeader;
  } catch {
    return null;
  }
}

/** A header's record of the previous file; its name is one this store writes, so looking it up never leaves TRACE_DIR. */
function isPredecessor(value: unknown): value is Predecessor {
  const prev = value as Partial<Predecessor> | null;
  return (
    typeof prev === 'object' &&
    prev !== null &&
    typeof prev.file === 'string' &&
    parseTraceFileName(prev.file) !== null &&
    typeof prev.newest === 'string' &&
    prev.newest.length <= 32 &&
    Number.isFinite(Date.parse(prev.newest)) &&
    Number.isSafeInteger(prev.bytes) &&
    Number.isSafeInteger(prev.last) &&
    Number.isSafeInteger(prev.events) &&
    (prev.found === undefined || (typeof prev.found === 'object' && prev.found !== null && (prev.found.bytes === null || Number.isSafeInteger(prev.found.bytes))))
  );
}

/** A version 3 header whose chain fields are all well formed. */
export type ChainHeader = FileHeader & { seq: number; mac: ChainMac; key: string | null; prev: Predecessor | null; p: string; c: string };

/** The header as a chained one, or null when it is not version 3 or any chain field is malformed. */
export function chainHeader(header: FileHeader | null): ChainHeader | null {
  if (!header || header.v < 3) return null;
  const hex64 = (value: unknown) => typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
  const key = header.key ?? null;
  const valid =
    Number.isSafeInteger(header.seq) &&
    (header.mac === 'sha256' || header.mac === 'hmac-sha256') &&
    (key === null || (typeof key === 'string' && /^[0-9a-f]{16}$/.test(key))) &&
    (header.prev === null || isPredecessor(header.prev)) &&
    hex64(header.p) &&
    hex64(header.c);
  return valid ? (header as ChainHeader) : null;
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

/** Parses a data line whose JSON text hashes to the sha256 expected; undefined otherwise. */
export function parseDataLine(line: string, expectedSha: string): unknown {
  const prefix = `{"t":"data","sha":"${expectedSha}","data":`;
  const end = line.endsWith('\n') ? line.length - 2 : line.length - 1;
  if (!line.startsWith(prefix) || line[end] !== '}') return undefined;
  return parseRecordJson(line.slice(prefix.length, end), expectedSha);
}
