/**
 * The brain reader: the only code that reads the mounted brain. Every path is confined
 * under the root after symlinks are resolved; reads are bounded and asynchronous; results
 * are cached by (path, inode, size, mtime) and revalidated with a `stat` that began after
 * the read was asked for (reads of one path in the same event-loop turn share it).
 * A file problem is a result (`missing`, `refused`, `error`), never a thrown error, so one
 * bad file degrades one source and never the request.
 */
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { constants as fsConstants, stat as statCallback, type Stats } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { sep } from 'node:path';
import { resolveTimeZone, type ResolvedTimeZone } from '../core/time.js';

export interface ReadOptions {
  /** Largest number of bytes read; a bigger file is cut at a line boundary. Default 256 KiB. */
  maxBytes?: number;
  /** Which end of an over-size file to keep: `head` (default) or `tail` (for files that grow at the end). */
  keep?: 'head' | 'tail';
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

export type VerifyResult =
  | { status: 'unchanged'; path: string; sha256: string }
  | { status: 'changed'; path: string; sha256: string }
  | { status: 'missing'; path: string }
  | { status: 'refused' | 'error'; path: string; reason: string };

export interface BrainReader {
  read(path: string, options?: ReadOptions): Promise<ReadResult>;
  list(path: string): Promise<ListResult>;
}

/** A per-request view of the brain that remembers every file it read, for the trace. */
export interface BrainSession extends BrainReader {
  /** Files read successfully, in first-read order, each once. */
  sources(): SourceRecord[];
}

export interface Brain extends BrainReader {
  readonly root: string;
  session(): BrainSession;
  /** Tells whether a recorded source still has the same bytes (read the same way). */
  verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep'>>): Promise<VerifyResult>;
}

/** The one log method the reader needs (a pino logger fits). */
export interface BrainLog {
  warn(obj: object, msg: string): void;
}

/** The file system call revalidation uses (callback style: cheaper per call than the promise API); tests count calls through it. */
export interface BrainFs {
  stat(path: string, callback: (error: NodeJS.ErrnoException | null, stats: Stats) => void): void;
}

export interface BrainOptions {
  /** Default `maxBytes` for reads that do not pass one. */
  maxBytes?: number;
  /** Upper bound on the bytes of text kept in the read cache. */
  cacheBytes?: number;
  fs?: BrainFs;
}

export const DEFAULT_MAX_BYTES = 256 * 1024;

interface Pending<T> {
  promise: Promise<T>;
  settle(value: T): void;
}

interface CachedFile {
  ino: number;
  dev: number;
  size: number;
  mtimeMs: number;
  result: BrainFile;
}

interface CachedListing {
  ino: number;
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

/** Builds the brain reader for `root`. Nothing is read until the first call. */
export function createBrain(root: string, log: BrainLog, options: BrainOptions = {}): Brain {
  const defaultMaxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  // All the bench brain holds outside people/ and companies/ (what the routes may read) is under 9 MB of text.
  const cacheLimit = options.cacheBytes ?? 16 * 1024 * 1024;
  const fs: BrainFs = options.fs ?? { stat: statCallback };
  const files = new Map<string, CachedFile>();
  const listings = new Map<string, CachedListing>();
  // Paths last found missing: a missing file is normal, and one stat (ENOENT) confirms it again.
  const missing = new Set<string>();
  let cachedBytes = 0;
  let realRoot: Promise<string> | undefined;
  /** The resolved root once known; every cached entry was read under it. */
  let resolvedRoot: string | undefined;

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
  let pendingReads = new Map<string, Pending<ReadResult> & { path: string; maxBytes: number; keep: 'head' | 'tail' }>();
  let batchScheduled = false;

  function issueBatch(): void {
    batchScheduled = false;
    const stats = pendingStats;
    const reads = pendingReads;
    pendingStats = new Map();
    pendingReads = new Map();
    for (const [path, pending] of stats) {
      fs.stat(`${resolvedRoot}${sep}${path}`, (error, info) => pending.settle(error ? (error.code ?? 'EUNKNOWN') : info));
    }
    for (const [key, read] of reads) {
      readFresh(read.path, read.maxBytes, read.keep, key).then(
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
   * A stat of a path read before (following links, so a retargeted link changes the
   * inode), or the error code it failed with.
   */
  function revalidationStat(path: string): Promise<Stats | string> {
    let check = pendingStats.get(path);
    if (!check) pendingStats.set(path, (check = pending()));
    return check.promise;
  }

  /** A read of the file itself (not from the cache). */
  function freshRead(path: string, maxBytes: number, keep: 'head' | 'tail', key: string): Promise<ReadResult> {
    let read = pendingReads.get(key);
    if (!read) pendingReads.set(key, (read = { ...pending<ReadResult>(), path, maxBytes, keep }));
    return read.promise;
  }

  /** The real path of `path` if it lies inside the root, else a refusal or a miss. */
  async function confine(path: string): Promise<{ real: string } | { status: 'missing' } | { status: 'refused' | 'error'; reason: string }> {
    const unsafe = unsafePathReason(path);
    if (unsafe) return { status: 'refused', reason: unsafe };
    let base: string;
    try {
      base = await rootPath();
    } catch {
      return { status: 'error', reason: 'brain root is not readable' };
    }
    try {
      const real = await realpath(`${base}${sep}${path}`);
      if (!real.startsWith(`${base}${sep}`)) return { status: 'refused', reason: 'resolves outside the brain root' };
      return { real };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing' };
      if (code === 'ELOOP') return { status: 'refused', reason: 'symbolic link loop' };
      return { status: 'error', reason: code ?? 'unreadable' };
    }
  }

  function forget(key: string): void {
    const previous = files.get(key);
    if (previous) {
      files.delete(key);
      cachedBytes -= previous.result.text.length;
    }
  }

  function remember(key: string, entry: CachedFile): void {
    forget(key);
    const bytes = entry.result.text.length;
    if (bytes > cacheLimit) return;
    while (cachedBytes + bytes > cacheLimit && files.size > 0) {
      const [oldestKey, oldest] = files.entries().next().value as [string, CachedFile];
      files.delete(oldestKey);
      cachedBytes -= oldest.result.text.length;
    }
    files.set(key, entry);
    cachedBytes += bytes;
  }

  async function readFresh(path: string, maxBytes: number, keep: 'head' | 'tail', key: string): Promise<ReadResult> {
    const confined = await confine(path);
    if (!('real' in confined)) return { path, ...confined } as ReadResult;
    let handle;
    try {
      // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever,
      // holding one of libuv's four file threads; regular files ignore the flag.
      handle = await open(confined.real, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return { status: 'missing', path };
      return { status: 'error', path, reason: code ?? 'unreadable' };
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) return { status: 'refused', path, reason: 'not a regular file' };
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
      remember(key, { ino: info.ino, dev: info.dev, size: info.size, mtimeMs: info.mtimeMs, result });
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
    const key = `${keep}:${maxBytes}:${path}`;
    const cached = files.get(key);
    if (cached) {
      const info = await revalidationStat(path);
      if (typeof info !== 'string' && info.ino === cached.ino && info.dev === cached.dev && info.size === cached.size && info.mtimeMs === cached.mtimeMs) {
        return cached.result;
      }
      // Otherwise a fresh read reports what is there (or wrong) now.
    } else if (missing.has(path)) {
      const info = await revalidationStat(path);
      if (info === 'ENOENT' || info === 'ENOTDIR') return { status: 'missing', path };
    }
    return freshRead(path, maxBytes, keep, key);
  }

  async function list(path: string): Promise<ListResult> {
    const cached = listings.get(path);
    if (cached) {
      const info = await revalidationStat(path);
      if (typeof info !== 'string' && info.ino === cached.ino && info.mtimeMs === cached.mtimeMs) return cached.result;
    }
    const confined = await confine(path);
    if (!('real' in confined)) return { path, ...confined } as ListResult;
    try {
      const info = await stat(confined.real);
      if (!info.isDirectory()) return { status: 'refused', path, reason: 'not a directory' };
      const entries = await readdir(confined.real, { withFileTypes: true });
      const filesIn: string[] = [];
      const directories: string[] = [];
      for (const entry of entries) {
        if (entry.isDirectory()) directories.push(entry.name);
        else if (entry.isFile() || entry.isSymbolicLink()) filesIn.push(entry.name);
      }
      const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      const result = { status: 'ok' as const, path, files: filesIn.sort(byName), directories: directories.sort(byName) };
      if (listings.size >= 4096) listings.clear();
      listings.set(path, { ino: info.ino, mtimeMs: info.mtimeMs, result });
      return result;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return { status: 'missing', path };
      return { status: 'error', path, reason: code ?? 'unreadable' };
    }
  }

  async function verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep'>>): Promise<VerifyResult> {
    const readOptions: ReadOptions = { keep: source.keep ?? 'head' };
    if (source.maxBytes !== undefined) readOptions.maxBytes = source.maxBytes;
    const result = await read(source.path, readOptions);
    if (result.status !== 'ok') return result;
    return { status: result.sha256 === source.sha256 ? 'unchanged' : 'changed', path: source.path, sha256: result.sha256 };
  }

  function session(): BrainSession {
    const recorded = new Map<string, SourceRecord>();
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
        }
        return result;
      },
      list,
      sources: () => [...recorded.values()],
    };
  }

  return { root, read, list, verify, session };
}

/**
 * Memoises `derive` per brain file: the brain hands out the same `BrainFile` object for as
 * long as the file's identity (inode, size, mtime) is unchanged, so a value derived from a
 * file (parsed notes, a checked policy) is computed once per version of its bytes. The
 * file and the derived value are shared between requests and must not be mutated.
 */
export function memoizePerFile<T>(derive: (file: BrainFile) => T): (file: BrainFile) => T {
  const derived = new WeakMap<BrainFile, { value: T }>();
  return (file) => {
    let entry = derived.get(file);
    if (!entry) derived.set(file, (entry = { value: derive(file) }));
    return entry.value;
  };
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

// Parsed once per version of heartbeat-state.json (and default zone); the result is shared and never mutated.
const heartbeatZone = memoizePerFile((file: BrainFile) => {
  const byDefault = new Map<string, ResolvedTimeZone>();
  return (defaultTimeZone: string): ResolvedTimeZone => {
    let resolved = byDefault.get(defaultTimeZone);
    if (!resolved) byDefault.set(defaultTimeZone, (resolved = resolveTimeZone({ defaultTimeZone, heartbeatText: file.text })));
    return resolved;
  };
});

/**
 * The operator's time zone (SPEC §4): the request's, else `memory/heartbeat-state.json`'s
 * `currentLocation.timezone`, else the default. The file is read only when the request names
 * no zone; parsing and validation are core's `resolveTimeZone`, so a broken file is a
 * warning and never a failure (an invalid request zone is a 400 problem).
 */
export async function readHeartbeatTimezone(
  reader: BrainReader,
  options: { requested?: string | undefined; defaultTimeZone: string },
): Promise<ResolvedTimeZone> {
  if (options.requested !== undefined) return resolveTimeZone(options);
  const path = 'memory/heartbeat-state.json';
  const result = await reader.read(path, { maxBytes: 64 * 1024 });
  if (result.status === 'ok') return heartbeatZone(result)(options.defaultTimeZone);
  const resolved = resolveTimeZone({ defaultTimeZone: options.defaultTimeZone });
  if (result.status !== 'missing') resolved.warnings.push(`${path}: could not be read (${result.reason}); using ${resolved.timeZone}`);
  return resolved;
}
