/**
 * The brain reader: the only code that reads the mounted brain. What is read is what was
 * checked: a path is resolved (links inside the brain are followed), opened without
 * following a link, and the opened descriptor itself must lie under the root (its path
 * through `/proc/self/fd`, else its device and inode against the path resolved again), so
 * a file or directory swapped for a link out of the root between the check and the read
 * is refused, never read. Reads are bounded and asynchronous; results read through no link
 * at all are cached by (path, device, inode, size, mtime) and revalidated with `lstat`s of
 * the path and each parent directory that began after the read was asked for (reads of
 * one path in the same event-loop turn share them), so a cached text is served only while
 * its path still leads to the same file without any link. A file problem is a result
 * (`missing`, `refused`, `error`), never a thrown error, so one bad file degrades one
 * source and never the request.
 */
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { constants as fsConstants, lstat as lstatCallback, type Stats } from 'node:fs';
import { open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { sep } from 'node:path';
import { createCacheArea, type CacheArea } from '../caches.js';

export interface ReadOptions {
  /** Largest number of bytes read; a bigger file is cut at a line boundary. Default 256 KiB. */
  maxBytes?: number;
  /** Which end of an over-size file to keep: `head` (default) or `tail` (for files that grow at the end). */
  keep?: 'head' | 'tail';
  /**
   * A directory of the brain (e.g. `topics`) the file must really lie in: a path outside it,
   * or a link that resolves anywhere else (even elsewhere inside the brain), is refused.
   */
  within?: string;
}

export interface BrainFile {
  status: 'ok';
  path: string;
  /** UTF-8 text, CRLF normalised to LF, BOM removed, invalid bytes as U+FFFD. */
  text: string;
  /** Size of the whole file in bytes. */
  size: number;
  mtimeMs: number;
  /** sha256 hex of the bytes read (the whole file unless `truncated`). */
  sha256: string;
  truncated: boolean;
  /** Problems that degraded this file without failing it (invalid UTF-8, truncation). */
  warnings: string[];
}

export type ReadResult =
  | BrainFile
  | { status: 'missing'; path: string }
  | { status: 'refused'; path: string; reason: string }
  | { status: 'error'; path: string; reason: string };

export type ListResult =
  | { status: 'ok'; path: string; files: string[]; directories: string[] }
  | { status: 'missing'; path: string }
  | { status: 'refused'; path: string; reason: string }
  | { status: 'error'; path: string; reason: string };

/** What the trace records of each brain file a compile read. */
export interface SourceRecord {
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
  truncated: boolean;
  maxBytes: number;
  keep: 'head' | 'tail';
}

/** What the trace records of a directory listing a compile relied on: its files (subdirectories are never relied on). */
export interface ListingRecord {
  path: string;
  /** How many files the directory held. */
  count: number;
  /** sha256 of the sorted file names, each followed by a newline. */
  sha256: string;
  /** The sorted names themselves, when there are at most `LISTING_NAMES_MAX`. */
  names?: string[];
}

/** Up to this many file names a listing record keeps, so a check can say which files came and went. */
export const LISTING_NAMES_MAX = 64;

export type VerifyResult =
  | { status: 'unchanged'; path: string; sha256: string }
  | { status: 'changed'; path: string; sha256: string }
  | { status: 'missing'; path: string }
  | { status: 'refused' | 'error'; path: string; reason: string };

/** A recorded listing against the directory now; `added` and `removed` when the record kept its names. */
export interface ListingVerifyResult {
  path: string;
  changed: boolean;
  /** Files in the directory now (0 when it is gone); null when it cannot be listed. */
  currentCount: number | null;
  currentSha256: string | null;
  added?: string[];
  removed?: string[];
}

export interface BrainReader {
  read(path: string, options?: ReadOptions): Promise<ReadResult>;
  list(path: string): Promise<ListResult>;
}

/** A per-request view of the brain that remembers what a compile relied on, for the trace. */
export interface BrainSession extends BrainReader {
  /** Files read successfully, in first-read order, each once. */
  sources(): SourceRecord[];
  /** Paths (files or directories) looked for and found missing, in first-seen order, each once. */
  absent(): string[];
  /** Directories listed, in first-listed order, each once. */
  listings(): ListingRecord[];
}

export interface Brain extends BrainReader {
  readonly root: string;
  session(): BrainSession;
  /** Tells whether a recorded source still has the same bytes (read the same way). */
  verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep'>>): Promise<VerifyResult>;
  /** Tells whether a path found missing exists now (as anything: a file, a directory, a link the reader would refuse). */
  verifyAbsent(path: string): Promise<{ path: string; appeared: boolean }>;
  /** Tells whether a recorded listing's files are still the same, and which came and went. */
  verifyListing(record: ListingRecord): Promise<ListingVerifyResult>;
}

/** The one log method the reader needs (a pino logger fits). */
export interface BrainLog {
  warn(obj: object, msg: string): void;
}

/** The file system call revalidation uses (callback style: cheaper per call than the promise API); tests count calls through it. */
export interface BrainFs {
  lstat(path: string, callback: (error: NodeJS.ErrnoException | null, stats: Stats) => void): void;
  /** Reads `/proc/self/fd/<fd>`; a test makes it fail to exercise the device and inode check used where /proc is absent. */
  readlink?(path: string): Promise<string>;
}

export interface BrainOptions {
  /** Default `maxBytes` for reads that do not pass one. */
  maxBytes?: number;
  /** Where read files and listings are kept (the app's cache set); without one, a private cache of `cacheBytes`. */
  cache?: BrainCache;
  /** Upper bound on the bytes of text kept in a private read cache. */
  cacheBytes?: number;
  fs?: BrainFs;
}

/** The reader's cache areas, bounded by their owner (`createCaches().brain`). */
export interface BrainCache {
  files: CacheArea<string, CachedFile>;
  listings: CacheArea<string, CachedListing>;
}

export const DEFAULT_MAX_BYTES = 256 * 1024;

interface Pending<T> {
  promise: Promise<T>;
  settle(value: T): void;
}

/** A path resolved inside the root: its real path, the path as given (under the real root), and the prefix its descriptor must have. */
interface Confined {
  real: string;
  literal: string;
  scope: string;
}

export interface CachedFile {
  ino: number;
  dev: number;
  size: number;
  mtimeMs: number;
  result: BrainFile;
}

export interface CachedListing {
  ino: number;
  dev: number;
  mtimeMs: number;
  result: ListResult & { status: 'ok' };
}

/**
 * Why a relative brain path is unsafe, or undefined when it is acceptable: no absolute
 * paths, no `..` or `.` segments, no empty segments, no backslashes, no NUL or controls.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path.length === 0) return 'empty path';
  if (path.length > 1024) return 'path too long';
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'control character in path';
  if (path.includes('\\')) return 'backslash in path';
  if (path.startsWith('/')) return 'absolute path';
  for (const segment of path.split('/')) {
    if (segment === '..') return 'parent segment (..) in path';
    if (segment === '.' || segment === '') return 'empty or "." segment in path';
  }
  return undefined;
}

function outsideReason(within: string | undefined): string {
  return within === undefined ? 'resolves outside the brain root' : `resolves outside ${within}/`;
}

/** What a failed open means for the read: a miss, a link swapped in since the path was resolved, or an error. */
function openFailure(path: string, code: string): { status: 'missing'; path: string } | { status: 'refused' | 'error'; path: string; reason: string } {
  if (code === 'ENOENT') return { status: 'missing', path };
  if (code === 'ELOOP') return { status: 'refused', path, reason: 'replaced by a symbolic link while being read' };
  return { status: 'error', path, reason: code };
}

/** Builds the brain reader for `root`. Nothing is read until the first call. */
export function createBrain(root: string, log: BrainLog, options: BrainOptions = {}): Brain {
  const defaultMaxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const fs: BrainFs = options.fs ?? { lstat: lstatCallback };
  const readDescriptorLink = fs.readlink ?? readlink;
  // All the bench brain holds outside people/ and companies/ (what the routes may read) is under 9 MB of text.
  const { files, listings } = options.cache ?? {
    files: createCacheArea<string, CachedFile>('brain.files', options.cacheBytes ?? 32 * 1024 * 1024),
    listings: createCacheArea<string, CachedListing>('brain.listings', 2 * 1024 * 1024),
  };
  // The reader hands out the same listing object while a directory is unchanged: digested once per version.
  const listingRecords = new WeakMap<ListResult, ListingRecord>();
  // Paths last found missing: a missing file is normal, and one stat (ENOENT) confirms it again.
  const missing = new Set<string>();
  let realRoot: Promise<string> | undefined;
  /** The resolved root once known; every cached entry was read under it. */
  let resolvedRoot: string | undefined;
  /** Whether `/proc/self/fd` shows where a descriptor is (Linux); unknown until the first check. */
  let procFd: boolean | undefined;

  function rootPath(): Promise<string> {
    // Resolved once; a failure is not remembered, so a root mounted later is picked up.
    realRoot ??= realpath(root).then(
      (resolved) => (resolvedRoot = resolved),
      (error: unknown) => {
        realRoot = undefined;
        throw error;
      },
    );
    return realRoot;
  }

  // Freshness: file system calls are not issued when a read asks for them but at the end of
  // the current event-loop turn (setImmediate), and every read of the same path (stat) or
  // key (fresh read) asked for in that turn shares the one call. A read never joins a call
  // issued before it was asked for, so it sees every change completed before then, exactly
  // as if it had made its own; concurrent requests cost one stat per file per turn.
  let pendingStats = new Map<string, Pending<Stats | string>>();
  let pendingReads = new Map<string, Pending<ReadResult> & { path: string; maxBytes: number; keep: 'head' | 'tail'; within: string | undefined }>();
  let batchScheduled = false;

  function issueBatch(): void {
    batchScheduled = false;
    const stats = pendingStats;
    const reads = pendingReads;
    pendingStats = new Map();
    pendingReads = new Map();
    for (const [path, pending] of stats) {
      fs.lstat(`${resolvedRoot}${sep}${path}`, (error, info) => pending.settle(error ? (error.code ?? 'EUNKNOWN') : info));
    }
    for (const [key, read] of reads) {
      readFresh(read.path, read.maxBytes, read.keep, read.within, key).then(
        (result) => {
          if (result.status !== 'ok') forget(key);
          if (result.status !== 'missing') missing.delete(read.path);
          else if (resolvedRoot !== undefined) {
            if (missing.size >= 4096) missing.clear();
            missing.add(read.path);
          }
          read.settle(result);
        },
        (error: unknown) => read.settle({ status: 'error', path: read.path, reason: (error as NodeJS.ErrnoException).code ?? 'unreadable' }),
      );
    }
  }

  function pending<T>(): Pending<T> {
    let settle!: (value: T) => void;
    const promise = new Promise<T>((resolve) => (settle = resolve));
    if (!batchScheduled) {
      batchScheduled = true;
      setImmediate(issueBatch);
    }
    return { promise, settle };
  }

  /**
   * An `lstat` of a path read before (a link, even one that points back to the same file,
   * never matches a cached entry), or the error code it failed with.
   */
  function revalidationStat(path: string): Promise<Stats | string> {
    let check = pendingStats.get(path);
    if (!check) pendingStats.set(path, (check = pending()));
    return check.promise;
  }

  /**
   * Whether `path` still leads to the cached object through no link: every parent is a
   * directory (not a link to one) and the object itself `matches`. Parents are shared by
   * every path under them, so a turn stats each directory once too.
   */
  async function stillDirect(path: string, matches: (info: Stats) => boolean): Promise<boolean> {
    const own = revalidationStat(path);
    const parents: Array<Promise<Stats | string>> = [];
    for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) parents.push(revalidationStat(path.slice(0, slash)));
    const info = await own;
    if (typeof info === 'string' || !matches(info)) return false;
    return (await Promise.all(parents)).every((parent) => typeof parent !== 'string' && parent.isDirectory());
  }

  /** A read of the file itself (not from the cache). */
  function freshRead(path: string, maxBytes: number, keep: 'head' | 'tail', within: string | undefined, key: string): Promise<ReadResult> {
    let read = pendingReads.get(key);
    if (!read) pendingReads.set(key, (read = { ...pending<ReadResult>(), path, maxBytes, keep, within }));
    return read.promise;
  }

  /**
   * The real path of `path` if it lies inside the root (and inside `within`), with the
   * prefix (`scope`) the opened descriptor must have too, else a refusal or a miss.
   */
  async function confine(path: string, within?: string): Promise<Confined | { status: 'missing' } | { status: 'refused' | 'error'; reason: string }> {
    const unsafe = unsafePathReason(path);
    if (unsafe) return { status: 'refused', reason: unsafe };
    if (within !== undefined && (unsafePathReason(within) !== undefined || !path.startsWith(`${within}/`))) {
      return { status: 'refused', reason: `not under ${within}/` };
    }
    let base: string;
    try {
      base = await rootPath();
    } catch {
      return { status: 'error', reason: 'brain root is not readable' };
    }
    const scope = within === undefined ? `${base}${sep}` : `${base}${sep}${within}${sep}`;
    const literal = `${base}${sep}${path}`;
    try {
      const real = await realpath(literal);
      if (!real.startsWith(scope)) return { status: 'refused', reason: outsideReason(within) };
      return { real, literal, scope };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
      if (code === 'ELOOP') return { status: 'refused', reason: 'symbolic link loop' };
      return { status: 'error', reason: code ?? 'unreadable' };
    }
  }

  /**
   * Where an opened descriptor really is, if that is inside `confined.scope`, else
   * undefined: its path through `/proc/self/fd` (Linux: the kernel's own answer), else the
   * path resolved again, accepted only when it is the same file (device and inode) as the
   * descriptor — so a file or directory swapped between the check and the open is caught.
   */
  async function verifiedPath(handle: FileHandle, info: Stats, confined: Confined): Promise<string | undefined> {
    if (procFd !== false) {
      try {
        const opened = await readDescriptorLink(`/proc/self/fd/${handle.fd}`);
        procFd = true;
        return opened.startsWith(confined.scope) ? opened : undefined;
      } catch {
        // Once /proc has answered, a failure is not a reason to trust the weaker check.
        if (procFd === true) return undefined;
        procFd = false;
      }
    }
    try {
      const again = await realpath(confined.literal);
      if (!again.startsWith(confined.scope)) return undefined;
      const now = await stat(again);
      return now.dev === info.dev && now.ino === info.ino ? again : undefined;
    } catch {
      return undefined;
    }
  }

  /** Opens a confined path without following a final link; an error code on failure. */
  async function openConfined(confined: Confined, directory: boolean): Promise<FileHandle | string> {
    try {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever,
      // holding one of libuv's four file threads; regular files ignore the flag.
      const flags = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW | (directory ? fsConstants.O_DIRECTORY : 0);
      return await open(confined.real, flags);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code ?? 'unreadable';
    }
  }

  function forget(key: string): void {
    files.delete(key);
  }

  function remember(key: string, entry: CachedFile): void {
    // Weighed as UTF-16 text; the least recently used entries make room.
    files.set(key, entry, 2 * entry.result.text.length + 512);
  }

  async function readFresh(path: string, maxBytes: number, keep: 'head' | 'tail', within: string | undefined, key: string): Promise<ReadResult> {
    const confined = await confine(path, within);
    if (!('real' in confined)) return { path, ...confined } as ReadResult;
    const handle = await openConfined(confined, false);
    if (typeof handle === 'string') return openFailure(path, handle);
    try {
      const info = await handle.stat();
      if (!info.isFile()) return { status: 'refused', path, reason: 'not a regular file' };
      const where = await verifiedPath(handle, info, confined);
      if (where === undefined) return { status: 'refused', path, reason: outsideReason(within) };
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
      if (bytes.subarray(0, 8192).includes(0)) return { status: 'error', path, reason: 'binary file (NUL bytes)' };
      const warnings: string[] = [];
      let window: Buffer = bytes;
      if (truncated) {
        window = keep === 'tail' ? dropPartialFirstLine(bytes) : dropPartialLastLine(bytes);
        warnings.push(`${path} is ${info.size} bytes; kept the ${keep === 'tail' ? 'last' : 'first'} ${window.length}`);
      }
      const valid = isUtf8(window);
      if (!valid) {
        warnings.push(`${path} is not valid UTF-8; invalid bytes were replaced`);
        log.warn({ path }, 'brain file is not valid UTF-8');
      }
      let text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false }).decode(window);
      if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
      const result: BrainFile = {
        status: 'ok',
        path,
        text,
        size: info.size,
        mtimeMs: info.mtimeMs,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        truncated,
        warnings,
      };
      // Only a file read through no link at all can be revalidated by lstat; one behind a link is read afresh each turn.
      if (where === confined.literal) remember(key, { ino: info.ino, dev: info.dev, size: info.size, mtimeMs: info.mtimeMs, result });
      return result;
    } catch (error) {
      return { status: 'error', path, reason: (error as NodeJS.ErrnoException).code ?? 'unreadable' };
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  async function read(path: string, options: ReadOptions = {}): Promise<ReadResult> {
    const maxBytes = Math.max(1, options.maxBytes ?? defaultMaxBytes);
    const keep = options.keep ?? 'head';
    // The confinement is part of the key: a text read under the root alone never answers a read that must stay within a directory.
    const key = `${keep}:${maxBytes}:${options.within ?? ''}:${path}`;
    const cached = files.get(key);
    if (cached) {
      const same = (info: Stats) =>
        info.isFile() && info.ino === cached.ino && info.dev === cached.dev && info.size === cached.size && info.mtimeMs === cached.mtimeMs;
      if (await stillDirect(path, same)) return cached.result;
      // Otherwise a fresh read reports what is there (or wrong) now.
    } else if (missing.has(path)) {
      const info = await revalidationStat(path);
      if (info === 'ENOENT' || info === 'ENOTDIR') return { status: 'missing', path };
    }
    return freshRead(path, maxBytes, keep, options.within, key);
  }

  async function list(path: string): Promise<ListResult> {
    const cached = listings.get(path);
    if (cached) {
      const same = (info: Stats) => info.isDirectory() && info.ino === cached.ino && info.dev === cached.dev && info.mtimeMs === cached.mtimeMs;
      if (await stillDirect(path, same)) return cached.result;
    }
    const confined = await confine(path);
    if (!('real' in confined)) return { path, ...confined } as ListResult;
    const handle = await openConfined(confined, true);
    if (typeof handle === 'string') return handle === 'ENOTDIR' ? { status: 'refused', path, reason: 'not a directory' } : openFailure(path, handle);
    try {
      const info = await handle.stat();
      if (!info.isDirectory()) return { status: 'refused', path, reason: 'not a directory' };
      const where = await verifiedPath(handle, info, confined);
      if (where === undefined) return { status: 'refused', path, reason: outsideReason(undefined) };
      // On Linux the entries are read through the checked descriptor itself; elsewhere the
      // directory's identity is checked again once they are read.
      const entries = await readdir(procFd === true ? `/proc/self/fd/${handle.fd}` : where, { withFileTypes: true });
      if (procFd !== true && (await verifiedPath(handle, info, confined)) !== where) return { status: 'refused', path, reason: outsideReason(undefined) };
      const filesIn: string[] = [];
      const directories: string[] = [];
      for (const entry of entries) {
        if (entry.isDirectory()) directories.push(entry.name);
        else if (entry.isFile() || entry.isSymbolicLink()) filesIn.push(entry.name);
      }
      const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      const result = { status: 'ok' as const, path, files: filesIn.sort(byName), directories: directories.sort(byName) };
      if (where === confined.literal) {
        const names = filesIn.length + directories.length;
        listings.set(path, { ino: info.ino, dev: info.dev, mtimeMs: info.mtimeMs, result }, 96 * names + 256);
      }
      return result;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return { status: 'missing', path };
      return { status: 'error', path, reason: code ?? 'unreadable' };
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  async function verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep'>>): Promise<VerifyResult> {
    const readOptions: ReadOptions = { keep: source.keep ?? 'head' };
    if (source.maxBytes !== undefined) readOptions.maxBytes = source.maxBytes;
    const result = await read(source.path, readOptions);
    if (result.status !== 'ok') return result;
    return { status: result.sha256 === source.sha256 ? 'unchanged' : 'changed', path: source.path, sha256: result.sha256 };
  }

  async function verifyAbsent(path: string): Promise<{ path: string; appeared: boolean }> {
    // An unsafe path was never looked for, so it cannot have appeared; an unreadable root shows nothing.
    if (unsafePathReason(path) !== undefined) return { path, appeared: false };
    const confined = await confine(path);
    return { path, appeared: 'real' in confined || confined.status === 'refused' };
  }

  async function verifyListing(record: ListingRecord): Promise<ListingVerifyResult> {
    const now = await list(record.path);
    if (now.status === 'refused' || now.status === 'error') return { path: record.path, changed: true, currentCount: null, currentSha256: null };
    // A directory gone holds no files, as one that was never there.
    const current = now.status === 'ok' ? listingOf(now) : listingRecord(record.path, []);
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

  function session(): BrainSession {
    const recorded = new Map<string, SourceRecord>();
    const absent = new Set<string>();
    const listed = new Map<string, ListingRecord>();
    return {
      async read(path, readOptions = {}) {
        const result = await read(path, readOptions);
        if (result.status === 'ok' && !recorded.has(path)) {
          recorded.set(path, {
            path,
            size: result.size,
            mtimeMs: result.mtimeMs,
            sha256: result.sha256,
            truncated: result.truncated,
            maxBytes: Math.max(1, readOptions.maxBytes ?? defaultMaxBytes),
            keep: readOptions.keep ?? 'head',
          });
        } else if (result.status === 'missing') absent.add(path);
        return result;
      },
      async list(path) {
        const result = await list(path);
        if (result.status === 'ok' && !listed.has(path)) listed.set(path, listingOf(result));
        else if (result.status === 'missing') absent.add(path);
        return result;
      },
      sources: () => [...recorded.values()],
      absent: () => [...absent],
      listings: () => [...listed.values()],
    };
  }

  function listingOf(result: ListResult & { status: 'ok' }): ListingRecord {
    let record = listingRecords.get(result);
    if (!record) listingRecords.set(result, (record = listingRecord(result.path, result.files)));
    return record;
  }

  return { root, read, list, verify, verifyAbsent, verifyListing, session };
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
