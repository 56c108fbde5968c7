/**
 * Reading and its cache: a file read through the confinement, bounded (`maxBytes`, cut at a
 * line boundary, the head or the tail kept) and decoded (UTF-8, CRLF to LF, BOM removed); a
 * directory listed through the descriptor the confinement opened. A result is kept with
 * every lookup it relied on and served again while they hold (`revalidate.ts`); a result
 * stamped within a tick of its read is not trusted. Fresh reads of one file asked for in one
 * event-loop turn share one read. A problem is a result (`missing`, `refused`, `error`),
 * never a thrown error, so one bad file degrades one source and never the request.
 */
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import type { Stats } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { loadedFile, type SnapshotFile } from '../../core/hud.js';
import { quoteForWarning } from '../../core/text.js';
import { boundsRefusal, NOT_A_DIRECTORY, NOT_A_FILE, pathRefusal, release, type Confinement, type Opened } from './confine.js';
import { codeOf, sameLookup, tooRecent, TurnBatch, type Revalidator } from './revalidate.js';
import {
  LISTING_NAMES_MAX,
  type BrainCache,
  type BrainFile,
  type BrainLog,
  type CachedFile,
  type CachedListing,
  type ListingRecord,
  type ListingVerifyResult,
  type ListResult,
  type Lookup,
  type ReadOptions,
  type ReadResult,
  type SourceRecord,
  type VerifyResult,
} from './types.js';

/** What one read or listing relied on, for a session's record: a cache entry, a confirmed miss, or nothing (refused for what the path is). */
export type Relied = { kind: 'file'; key: string; entry: CachedFile } | { kind: 'missing'; path: string; lookups: Lookup[] } | { kind: 'listing'; path: string; entry: CachedListing } | { kind: 'none' };

/** What the reading functions share. */
export interface ReaderContext {
  readonly confinement: Confinement;
  readonly revalidator: Revalidator;
  readonly cache: BrainCache;
  readonly log: BrainLog;
  readonly now: () => number;
  readonly defaultMaxBytes: number;
  readonly maxListingEntries: number;
  readonly fresh: TurnBatch<string, FreshRead, ReadResult>;
}

/** A read of the file itself, as `readFresh` makes it. */
export interface FreshRead {
  path: string;
  maxBytes: number;
  keep: 'head' | 'tail';
  within: string | undefined;
}

/** The batch of fresh reads of `ctx`: one read per file and bounds per turn, and a failed read forgotten. */
export function freshReads(ctx: Omit<ReaderContext, 'fresh'>): TurnBatch<string, FreshRead, ReadResult> {
  return new TurnBatch<string, FreshRead, ReadResult>(async (key, read) => {
    try {
      const result = await readFresh(ctx, read, key);
      if (result.status !== 'ok') ctx.cache.files.delete(key);
      return result;
    } catch (error) {
      return { status: 'error', path: read.path, reason: { code: 'io', detail: codeOf(error) } };
    }
  });
}

/** Whether a result read from `opened` may be cached: reached exactly as its lookups say, and no stamp on the way within a tick of the read. */
function trusted(ctx: ReaderContext | Omit<ReaderContext, 'fresh'>, opened: Opened, info: Stats, startedAt: number): boolean {
  const finishedAt = ctx.now();
  return opened.cacheable && !tooRecent(info, startedAt, finishedAt) && !opened.links.some((link) => tooRecent(link, startedAt, finishedAt));
}

async function readFresh(ctx: Omit<ReaderContext, 'fresh'>, { path, maxBytes, keep, within }: FreshRead, key: string): Promise<ReadResult> {
  const { cache } = ctx;
  const startedAt = ctx.now();
  const opened = await ctx.confinement.open(path, within, 'file');
  // A missing file is normal: the lookups that missed it confirm it again.
  if (opened.status === 'missing' && opened.lookups !== undefined) cache.missing.set(path, opened.lookups, 2 * path.length + 128 * opened.lookups.length + 128);
  else cache.missing.delete(path);
  if (opened.status !== 'found') return opened.status === 'missing' ? { status: 'missing', path } : { status: opened.status, path, reason: opened.reason };
  const { handle } = opened;
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { status: 'refused', path, reason: NOT_A_FILE };
    const truncated = info.size > maxBytes;
    const length = truncated ? maxBytes : info.size;
    const position = truncated && keep === 'tail' ? info.size - maxBytes : 0;
    const buffer = Buffer.alloc(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const bytes = buffer.subarray(0, filled);
    if (bytes.subarray(0, 8192).includes(0)) return { status: 'error', path, reason: { code: 'binary', detail: 'binary file (NUL bytes)' } };
    const warnings: string[] = [];
    let window: Buffer = bytes;
    if (truncated) {
      window = keep === 'tail' ? dropPartialFirstLine(bytes) : dropPartialLastLine(bytes);
      warnings.push(`${quoteForWarning(path)} is ${info.size} bytes; kept the ${keep === 'tail' ? 'last' : 'first'} ${window.length}`);
    }
    if (!isUtf8(window)) {
      warnings.push(`${quoteForWarning(path)} is not valid UTF-8; invalid bytes were replaced`);
      ctx.log.warn({ path }, 'brain file is not valid UTF-8');
    }
    let text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(window);
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const result: BrainFile = { status: 'ok', path, text, size: info.size, mtimeMs: info.mtimeMs, sha256, truncated, textBytes: window.length, warnings };
    if (trusted(ctx, opened, info, startedAt)) {
      const lookups = [...opened.lookups, sameLookup(opened.resolved, info)];
      // Weighed as UTF-16 text plus its lookups; the least recently used entries make room.
      cache.files.set(key, { lookups, result }, 2 * result.text.length + 128 * lookups.length + 512);
    }
    return result;
  } catch (error) {
    return { status: 'error', path, reason: { code: 'io', detail: codeOf(error) } };
  } finally {
    release(handle);
  }
}

/** A read, and what it relied on for a session record: a cache entry, a confirmed miss, nothing (a refused path), or null (not replayable). */
export async function readRelied(ctx: ReaderContext, path: string, options: ReadOptions = {}): Promise<{ result: ReadResult; relied: Relied | null }> {
  const { files, missing } = ctx.cache;
  const maxBytes = options.maxBytes ?? ctx.defaultMaxBytes;
  const keep = options.keep ?? 'head';
  const refusal = boundsRefusal(maxBytes, keep) ?? pathRefusal(path, options.within);
  // Refused for what the path and bounds are: the same on any replay.
  if (refusal !== undefined) return { result: { status: 'refused', path, reason: refusal }, relied: { kind: 'none' } };
  // The confinement is part of the key: a text read under the root alone never answers a read that must stay within a directory.
  const key = `${keep}:${maxBytes}:${options.within ?? ''}:${path}`;
  const cached = files.get(key);
  if (cached) {
    if (await ctx.revalidator.stillHolds(cached.lookups)) return { result: cached.result, relied: { kind: 'file', key, entry: cached } };
    // Otherwise a fresh read reports what is there (or wrong) now.
  } else {
    const gone = missing.get(path);
    if (gone !== undefined && (await ctx.revalidator.stillHolds(gone))) return { result: { status: 'missing', path }, relied: { kind: 'missing', path, lookups: gone } };
  }
  const result = await ctx.fresh.call(key, { path, maxBytes, keep, within: options.within });
  if (result.status === 'ok') {
    const entry = files.get(key);
    return { result, relied: entry?.result === result ? { kind: 'file', key, entry } : null };
  }
  const lookups = result.status === 'missing' ? missing.get(path) : undefined;
  return { result, relied: lookups === undefined ? null : { kind: 'missing', path, lookups } };
}

/** A listing, and what it relied on for a session record (as `readRelied`). */
export async function listRelied(ctx: ReaderContext, path: string): Promise<{ result: ListResult; relied: Relied | null }> {
  const refusal = pathRefusal(path, undefined);
  if (refusal !== undefined) return { result: { status: 'refused', path, reason: refusal }, relied: { kind: 'none' } };
  const cached = ctx.cache.listings.get(path);
  if (cached && (await ctx.revalidator.stillHolds(cached.lookups))) return { result: cached.result, relied: { kind: 'listing', path, entry: cached } };
  const result = await listFresh(ctx, path);
  const entry = result.status === 'ok' ? ctx.cache.listings.get(path) : undefined;
  return { result, relied: entry !== undefined && entry.result === result ? { kind: 'listing', path, entry } : null };
}

async function listFresh(ctx: ReaderContext, path: string): Promise<ListResult> {
  const startedAt = ctx.now();
  const opened = await ctx.confinement.open(path, undefined, 'directory');
  if (opened.status !== 'found') return opened.status === 'missing' ? { status: 'missing', path } : { status: opened.status, path, reason: opened.reason };
  const { handle } = opened;
  try {
    const info = await handle.stat();
    if (!info.isDirectory()) return { status: 'refused', path, reason: NOT_A_DIRECTORY };
    // On Linux the entries are read through the walked descriptor itself; elsewhere the
    // directory's identity is checked again once they are read.
    const { files, directories, over } = await newestEntries(opened.recheck === undefined ? `/proc/self/fd/${handle.fd}` : opened.where, ctx.maxListingEntries);
    if (opened.recheck !== undefined && !(await opened.recheck())) return { status: 'refused', path, reason: { code: 'outside', detail: 'resolves outside the brain root' } };
    const max = ctx.maxListingEntries.toLocaleString('en-US');
    const warnings = over
      ? [`${quoteForWarning(path)} has more than ${max} entries (BRAIN_LISTING_MAX_ENTRIES); only the last ${max} by name (the newest, for dated names) were listed`]
      : [];
    if (over) ctx.log.warn({ path, maxListingEntries: ctx.maxListingEntries }, 'brain directory listed in part');
    const result = { status: 'ok' as const, path, files, directories, warnings };
    if (trusted(ctx, opened, info, startedAt)) {
      const lookups = [...opened.lookups, sameLookup(opened.resolved, info)];
      // Weighed as the names' UTF-16 text plus an array slot and string header each.
      let bytes = 128 * lookups.length + 256;
      for (const name of files) bytes += 2 * name.length + 40;
      for (const name of directories) bytes += 2 * name.length + 40;
      ctx.cache.listings.set(path, { lookups, result }, bytes);
    } else ctx.cache.listings.delete(path);
    return result;
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ENOENT') return { status: 'missing', path };
    return { status: 'error', path, reason: { code: 'io', detail: code } };
  } finally {
    release(handle);
  }
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The last `max` of `names` by name, sorted; `names` is cut to them. */
function keepLast(names: string[], max: number): string[] {
  names.sort(byName);
  if (names.length > max) names.splice(0, names.length - max);
  return names;
}

/**
 * A directory's files and subdirectories streamed (never one array of every entry), each
 * kept to the last `max` by name: names are collected up to twice that, then sorted and cut,
 * so memory is bounded by `max` whatever the directory holds, and the loop yields between
 * batches, so a huge directory does not hold the event loop.
 */
async function newestEntries(where: string, max: number): Promise<{ files: string[]; directories: string[]; over: boolean }> {
  const files: string[] = [];
  const directories: string[] = [];
  let over = false;
  const dir = await opendir(where, { bufferSize: 256 });
  for await (const entry of dir) {
    const names = entry.isDirectory() ? directories : entry.isFile() || entry.isSymbolicLink() ? files : undefined;
    if (names === undefined) continue;
    names.push(entry.name);
    if (names.length >= 2 * max) {
      keepLast(names, max);
      over = true;
    }
  }
  over ||= files.length > max || directories.length > max;
  return { files: keepLast(files, max), directories: keepLast(directories, max), over };
}

/** Whether a recorded source still has the same bytes (read the same way: bounds, end kept, confinement). */
export async function verify(ctx: ReaderContext, source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep' | 'within'>>): Promise<VerifyResult> {
  // A recorded bound is read as recorded, and refused (by the read) when no reader would have used it.
  const readOptions: ReadOptions = { keep: source.keep ?? 'head' };
  if (source.maxBytes !== undefined) readOptions.maxBytes = source.maxBytes;
  if (source.within !== undefined) readOptions.within = source.within;
  const { result } = await readRelied(ctx, source.path, readOptions);
  if (result.status !== 'ok') return result;
  return { status: result.sha256 === source.sha256 ? 'unchanged' : 'changed', path: source.path, sha256: result.sha256 };
}

/** Whether a recorded listing's files are still the same, and which came and went. */
export async function verifyListing(ctx: ReaderContext, record: ListingRecord): Promise<ListingVerifyResult> {
  const { result: now, relied } = await listRelied(ctx, record.path);
  if (now.status === 'refused' || now.status === 'error') return { path: record.path, changed: true, currentCount: null, currentSha256: null };
  // A directory gone holds no files, as one that was never there.
  const current = now.status === 'ok' ? listingOf(now, relied) : listingRecord(record.path, []);
  const result: ListingVerifyResult = { path: record.path, changed: current.sha256 !== record.sha256, currentCount: current.count, currentSha256: current.sha256 };
  if (record.names !== undefined) {
    const names = now.status === 'ok' ? now.files : [];
    const then = new Set(record.names);
    const present = new Set(names);
    result.added = names.filter((name) => !then.has(name));
    result.removed = record.names.filter((name) => !present.has(name));
  }
  return result;
}

/** A file read as the HUD describes it, kept on its cache entry (counted once per version and bounds). */
export function hudFileOf(result: BrainFile, keep: 'head' | 'tail', relied: Relied | null): SnapshotFile {
  const entry = relied?.kind === 'file' ? relied.entry : undefined;
  if (entry?.hudFile !== undefined) return entry.hudFile;
  const file = loadedFile({ path: result.path, size: result.size, sha256: result.sha256, bytes: result.textBytes, truncated: result.truncated, keep, text: result.text });
  if (entry !== undefined) entry.hudFile = file;
  return file;
}

/** A listing as the trace records it, kept on its cache entry (digested once per version). */
export function listingOf(result: ListResult & { status: 'ok' }, relied: Relied | null): ListingRecord {
  const entry = relied?.kind === 'listing' ? relied.entry : undefined;
  if (entry?.record !== undefined) return entry.record;
  const record = listingRecord(result.path, result.files);
  if (entry !== undefined) entry.record = record;
  return record;
}

/** The record of a listing: count, digest and (for a small directory) the names of its files. */
export function listingRecord(path: string, files: readonly string[]): ListingRecord {
  const digest = createHash('sha256');
  for (const name of files) digest.update(`${name}\n`);
  const record: ListingRecord = { path, count: files.length, sha256: digest.digest('hex') };
  if (files.length <= LISTING_NAMES_MAX) record.names = [...files];
  return record;
}

/** The bytes after the first newline (a tail read starts mid-line, maybe mid-character). */
function dropPartialFirstLine(bytes: Buffer): Buffer {
  const newline = bytes.indexOf(0x0a);
  if (newline >= 0) return bytes.subarray(newline + 1);
  let start = 0;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start);
}

/** The bytes up to the last newline (a head read ends mid-line, maybe mid-character). */
function dropPartialLastLine(bytes: Buffer): Buffer {
  const newline = bytes.lastIndexOf(0x0a);
  if (newline >= 0) return bytes.subarray(0, newline + 1);
  let end = bytes.length;
  let back = 0;
  while (end > 0 && back < 4 && (bytes[end - 1]! & 0xc0) === 0x80) {
    end--;
    back++;
  }
  // `end - 1` is now a lead byte (or ASCII); drop it if its sequence is incomplete.
  if (end > 0) {
    const lead = bytes[end - 1]!;
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (need > back + 1) return bytes.subarray(0, end - 1);
  }
  return bytes;
}
