import { sha256Hex } from '../../../core/digest.js';
import { parseRecordJson } from '../event-record.js';
import {
  ChainWalk,
  linkHolds,
  readerFor,
  unseal,
  type ChainFinding,
  type ChainMac,
  type ChainSigner,
  type ChainStatus,
  type Predecessor,
} from '../chain.js';

/**
 * The on-disk format of the trace store (docs/traces.md): append-only JSONL files, one
 * writer per file, each file self-contained. Four record kinds, always with `t` first so
 * a scanner can skip blob and data lines without parsing them:
 *
 *   {"t":"file","v":3,"writer":"<writerId>","created":"<ISO>","seq":1,"mac":"sha256"|"hmac-sha256",
 *    "key":"<key id>"|null,"prev":{…}|null,"p":"<link>","c":"<link>"}   first line of every file
 *   {"t":"blob","sha":"<sha256>","text":"..."}                    a segment's text, once per file
 *   {"t":"data","sha":"<sha256>","data":{...}}                    a repeated structure (block summary,
 *                                                                  source record, cache plan), once per file;
 *                                                                  sha256 of the exact JSON text after "data":
 *   {"t":"event","event":{...},"p":"<link>","c":"<link>"}         one trace event
 *
 * Header and event lines are chained (trace-chain.ts): `p` is the link of the writer's
 * record before (the previous file's last record, for a header), `c` this record's link
 * over `p` and every byte before `,"p":`. Blob and data lines are not: events name them by
 * sha256, so an event's link covers them. Version 2 files (no chain) are still read.
 */
const TRACE_FORMAT_VERSION = 3;

const FILE_NAME = /^trace-(\d{8}T\d{9}Z)-([A-Za-z0-9-]+)-(\d{6})\.jsonl$/;

export const BLOB_PREFIX = Buffer.from('{"t":"blob"');
export const DATA_PREFIX = Buffer.from('{"t":"data"');
export const EVENT_PREFIX = Buffer.from('{"t":"event"');

/** A reference from an event to a blob or data record in the same file: sha256, byte offset, byte length (with newline). */
export type RecordRef = [sha256: string, offset: number, length: number];

function compactStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, '');
}

/** `trace-20260105T101112345Z-<writerId>-000001.jsonl`: sorts by creation time, unique per writer. */
export function traceFileName(createdMs: number, writerId: string, sequence: number): string {
  return `trace-${compactStamp(createdMs)}-${writerId}-${String(sequence).padStart(6, '0')}.jsonl`;
}

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

export interface FileHeaderFields {
  writer: string;
  createdMs: number;
  seq: number;
  mac: ChainMac;
  key: string | null;
  /** The writer's previous file, null for its first. */
  prev: Predecessor | null;
}

/** A header line without its seal (trace-chain.ts `sealText` closes it). */
export function fileHeaderBody(header: FileHeaderFields): string {
  return (
    `{"t":"file","v":${TRACE_FORMAT_VERSION},"writer":${JSON.stringify(header.writer)},"created":"${new Date(header.createdMs).toISOString()}",` +
    `"seq":${header.seq},"mac":"${header.mac}","key":${JSON.stringify(header.key)},"prev":${JSON.stringify(header.prev)}`
  );
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

export const FILE_PREFIX = Buffer.from('{"t":"file"');

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

/** What a full read of one file's chain found. */
export interface FileChain {
  /** The version 3 header (null for version 2, or when the file has none). */
  header: ChainHeader | null;
  /** Each event line's status, by byte offset. */
  events: Map<number, ChainStatus>;
  /** Why an event line is `broken`, by byte offset: it concerns that event's run. */
  altered: Map<number, string>;
  /** About the file as a whole (a break, a bad header; or a note on how it is signed): concerns every run in it. */
  findings: ChainFinding[];
}

const MAX_BREAKS_REPORTED = 5;

/** An event line's `at`, for a finding a person can place; its offset when the line has none. */
function eventTime(line: Buffer, offset: number): string {
  return /"at":"([^"\\]{1,64})"/.exec(line.toString('latin1', 0, Math.min(line.length, 512)))?.[1] ?? `byte ${offset}`;
}

/**
 * Checks one file's chain, line by line in file order (only complete lines: a torn last line
 * is never seen). The header must match the file's name and hold its own link; every
 * event line must hold its link and continue from the line before it.
 */
export class FileChainScan {
  private header: FileChain['header'] = null;
  private unchained = false;
  private walk: ChainWalk | null = null;
  private seenFirst = false;
  private breaks = 0;
  private readonly events = new Map<number, ChainStatus>();
  private readonly altered = new Map<number, string>();
  private readonly findings: ChainFinding[] = [];

  constructor(
    private readonly name: string,
    private readonly signer: ChainSigner,
  ) {}

  private broken(text: string): void {
    this.findings.push({ broken: true, text: `${this.name}: ${text}` });
  }

  /** Feeds the next complete line (newline excluded) and its byte offset. */
  line(line: Buffer, offset: number): void {
    const first = !this.seenFirst;
    this.seenFirst = true;
    if (first && startsWith(line, FILE_PREFIX)) {
      this.readHeader(line);
      return;
    }
    if (first) this.broken('it has no file header: its start was removed or altered');
    if (!startsWith(line, EVENT_PREFIX)) return;
    if (this.unchained) {
      this.events.set(offset, 'unchained');
      return;
    }
    if (!this.walk) {
      this.events.set(offset, 'broken');
      this.altered.set(offset, `${this.name}: the event at ${eventTime(line, offset)} cannot be checked: the file's header is missing or unreadable`);
      return;
    }
    const before = this.walk.breaks.length;
    const sealed = unseal(line);
    const status = this.walk.next(sealed);
    this.events.set(offset, status);
    if (status === 'broken') {
      const what = sealed ? 'was altered or forged: its link does not hold' : 'carries no link: it was inserted';
      this.altered.set(offset, `${this.name}: the event at ${eventTime(line, offset)} ${what}`);
    }
    if (this.walk.breaks.length > before && this.breaks++ < MAX_BREAKS_REPORTED) {
      this.broken(`the chain breaks before the event at ${eventTime(line, offset)}: an event was removed, inserted or reordered there`);
    }
  }

  private readHeader(line: Buffer): void {
    const header = parseFileHeader(line);
    if (header && header.v < 3) {
      this.unchained = true;
      this.findings.push({ broken: false, text: `${this.name} predates chaining (format ${header.v}): nothing in it can be checked beyond its digests` });
      return;
    }
    const sealed = unseal(line);
    const chained = chainHeader(header);
    const named = parseTraceFileName(this.name);
    if (!chained || !sealed) {
      this.broken('its header is unreadable');
      return;
    }
    const reader = readerFor(this.signer, chained.mac, chained.key);
    if (reader.status === 'unverifiable') {
      const why = this.signer.keyId === null ? 'no TRACE_SIGNING_KEY is configured here' : 'TRACE_SIGNING_KEY is another key';
      this.findings.push({ broken: false, text: `${this.name} is signed with key ${chained.key ?? '?'}, and ${why}: its links cannot be checked` });
    } else if (reader.status === 'linked' && this.signer.keyId !== null) {
      this.findings.push({ broken: false, text: `${this.name} was written without a signing key: anyone who can write TRACE_DIR could have written it` });
    }
    if (reader.check && !linkHolds(reader.check, sealed)) this.broken('its header was altered');
    if (!named || named.writerId !== chained.writer || named.sequence !== chained.seq || new Date(named.createdMs).toISOString() !== chained.created) {
      this.broken('its header does not match its name: it was copied or renamed');
    }
    this.header = { ...chained, p: sealed.previous, c: sealed.link };
    this.walk = new ChainWalk(sealed.link, reader);
  }

  result(): FileChain {
    if (this.breaks > MAX_BREAKS_REPORTED) this.broken(`and ${this.breaks - MAX_BREAKS_REPORTED} more breaks`);
    return { header: this.header, events: this.events, altered: this.altered, findings: this.findings };
  }
}

export function blobLine(sha: string, text: string): string {
  return `{"t":"blob","sha":"${sha}","text":${JSON.stringify(text)}}\n`;
}

/** `json` is stored verbatim, so its sha256 can be checked against the bytes on disk. */
export function dataLine(sha: string, json: string): string {
  return `{"t":"data","sha":"${sha}","data":${json}}\n`;
}

/** An event line without its seal: `json` is the stored event (event-record.ts `eventRecord`). */
export function eventBody(json: string): string {
  return `{"t":"event","event":${json}`;
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
