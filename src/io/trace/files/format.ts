import type { ChainMac, Predecessor } from '../chain.js';

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
 * Header and event lines are chained (chain.ts): `p` is the link of the writer's
 * record before (the previous file's last record, for a header), `c` this record's link
 * over `p` and every byte before `,"p":`. Blob and data lines are not: events name them by
 * sha256, so an event's link covers them. Version 2 files (no chain) are still read.
 */
const TRACE_FORMAT_VERSION = 3;

export const FILE_PREFIX = Buffer.from('{"t":"file"');
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

export interface FileHeaderFields {
  writer: string;
  createdMs: number;
  seq: number;
  mac: ChainMac;
  key: string | null;
  /** The writer's previous file, null for its first. */
  prev: Predecessor | null;
}

/** A header line without its seal (chain.ts `sealText` closes it). */
export function fileHeaderBody(header: FileHeaderFields): string {
  return (
    `{"t":"file","v":${TRACE_FORMAT_VERSION},"writer":${JSON.stringify(header.writer)},"created":"${new Date(header.createdMs).toISOString()}",` +
    `"seq":${header.seq},"mac":"${header.mac}","key":${JSON.stringify(header.key)},"prev":${JSON.stringify(header.prev)}`
  );
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
