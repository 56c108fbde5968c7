/**
 * The brain reader: the only code that reads the mounted brain. What is read is what was
 * checked, and nothing outside the root is ever opened: on Linux a path is walked one name
 * at a time, each looked up in the directory opened before it (`/proc/self/fd/<fd>/<name>`
 * with `O_NOFOLLOW`, as `openat` would), so the kernel follows no link on the way; a link
 * inside the brain is read and its target walked in its place, confined to the root. The
 * opened descriptor's own path must lie under the root before anything about the object is
 * looked at. Where /proc is absent the path is resolved, opened and checked by device and
 * inode instead (weaker; see SECURITY.md). Reads are bounded (`MAX_READ_BYTES`) and
 * asynchronous. A result is cached with every lookup it relied on (the directories on the
 * way, each link, the file or directory itself by device, inode, size, mtime and ctime)
 * and served again only while `lstat`s of those paths, issued after the read was asked for
 * (reads in the same event-loop turn share them), show the same; a result stamped within a
 * tick of its read is not trusted. A file problem is a result (`missing`, `refused`,
 * `error`), never a thrown error, so one bad file degrades one source and never the request.
 */
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import { constants as fsConstants, lstat as lstatCallback, lstatSync, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, stat, statfs, type FileHandle } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { resolve, sep } from 'node:path';
import { createCacheArea, type CacheArea } from '../caches.js';
import { loadedFile, type SnapshotFile } from '../core/hud.js';
import { quoteForWarning } from '../core/text.js';
import { MAX_READ_BYTES } from '../core/types.js';
import type { TraceListing, TraceSource } from '../../schemas/trace.js';

export interface ReadOptions {
  /** Largest number of bytes read, a whole number from 1 to `MAX_READ_BYTES` (1 MiB); a bigger file is cut at a line boundary. Default 256 KiB. */
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
  /** Bytes of the file `text` came from: `size`, unless truncated (a cut read also drops its partial line). */
  textBytes: number;
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

/**
 * What the trace records of each brain file a compile read (schemas/trace.ts): how it was
 * read (`maxBytes`, `keep`, and `within` when the read was confined), so a later check
 * reads it exactly the same way.
 */
export type SourceRecord = TraceSource & Required<Pick<TraceSource, 'truncated' | 'maxBytes' | 'keep'>>;

/** What the trace records of a directory listing a compile relied on: its files (subdirectories are never relied on). */
export type ListingRecord = TraceListing;

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
  /** Files read successfully, in first-read order, each once (after a replay, the record's own array: never changed). */
  sources(): readonly SourceRecord[];
  /** Paths (files or directories) looked for and found missing, in first-seen order, each once. */
  absent(): readonly string[];
  /** Directories listed, in first-listed order, each once. */
  listings(): readonly ListingRecord[];
  /** Files read successfully, in first-read order, each once, as a HUD snapshot describes them (tokens, line range). */
  loaded(): readonly SnapshotFile[];
  /**
   * What this session's reads relied on, to replay in a later session: every read answered
   * from (or into) the reader's cache, with the lookups that confirm it. Null when a read
   * cannot be replayed (not cached: changed too recently, unreadable, refused by the file
   * system; or a listing of a missing directory).
   */
  record(): SessionRecord | null;
  /**
   * Whether every read of `record` would answer the same now: the reader still holds the
   * very entries it answered from, and `lstat`s issued after this call (shared, as reads
   * share them, by every replay and read of this event-loop turn) confirm their lookups. If
   * so, this session takes them as its reads — its sources, absences and listings — and the
   * caller may reuse whatever it derived from them; if not, nothing is taken and the caller
   * reads as usual.
   */
  replay(record: SessionRecord): Promise<boolean>;
}

/** What one session's reads relied on (`BrainSession.record`); opaque, immutable, valid for the reader that made it. */
export interface SessionRecord {
  readonly reader: object;
  readonly files: ReadonlyArray<{ readonly key: string; readonly entry: CachedFile }>;
  readonly missing: ReadonlyArray<{ readonly path: string; readonly lookups: Lookup[] }>;
  readonly directories: ReadonlyArray<{ readonly path: string; readonly entry: CachedListing }>;
  /** Every lookup of the above, for one batch of `lstat`s. */
  readonly lookups: readonly Lookup[];
  readonly sources: readonly SourceRecord[];
  readonly absent: readonly string[];
  readonly listings: readonly ListingRecord[];
  readonly loaded: readonly SnapshotFile[];
}

export interface Brain extends BrainReader {
  readonly root: string;
  session(): BrainSession;
  /** Tells whether a recorded source still has the same bytes (read the same way: bounds, end kept, confinement). */
  verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep' | 'within'>>): Promise<VerifyResult>;
  /** Tells whether a path found missing exists now (as anything: a file, a directory, a link the reader would refuse). */
  verifyAbsent(path: string): Promise<{ path: string; appeared: boolean }>;
  /** Tells whether a recorded listing's files are still the same, and which came and went. */
  verifyListing(record: ListingRecord): Promise<ListingVerifyResult>;
}

/** The one log method the reader needs (a pino logger fits). */
export interface BrainLog {
  warn(obj: object, msg: string): void;
}

/** The file system calls of the hot path and the descriptor check; tests count calls through them. */
export interface BrainFs {
  /** What revalidation uses off the event loop (callback style: cheaper per call than the promise API). */
  lstat(path: string, callback: (error: NodeJS.ErrnoException | null, stats: Stats) => void): void;
  /** What revalidation uses on the event loop: the stats, or the error code. Without it, revalidation is always `async`. */
  lstatSync?(path: string): Stats | string;
  /** The root's file system type (`statfs` f_type), for `auto` to tell a network or FUSE mount. */
  statfs?(path: string): Promise<{ type: number }>;
  /** Reads `/proc/self/fd/<fd>` (where a descriptor is); a test makes it fail to exercise the reader used where /proc is absent. */
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
  /** The clock file times are compared with, to tell a change too recent to trust (`Date.now` by default). */
  now?: () => number;
  /** How cached results are revalidated (`BRAIN_REVALIDATE`); `auto` by default. */
  revalidate?: RevalidationMode;
}

/**
 * How a cached result's `lstat`s are made. `sync`: on the event loop, ≈ 2 µs of CPU a stat
 * on a local file system against ≈ 9 µs through libuv's thread pool (a persona request
 * makes about ten). `async`: through the thread pool, so a stalled network mount cannot
 * freeze the process (its probes included). `auto`: `sync` unless the root is on a network
 * or FUSE file system, and `async` for good once one revalidation on the loop takes over
 * `SLOW_REVALIDATION_MS`. Either way the stats are made after the read was asked for, so a
 * read sees every change completed before it.
 */
export type RevalidationMode = 'auto' | 'sync' | 'async';

/** A revalidation on the event loop slower than this (all of its stats) moves `auto` off it. */
export const SLOW_REVALIDATION_MS = 100;

/** `statfs` f_type of file systems whose stats may wait on a network or another process (linux/magic.h). */
const REMOTE_FILE_SYSTEMS = new Set([
  0x6969, // NFS
  0x517b, // SMB
  0xfe534d42, // SMB2
  0xff534d42, // CIFS
  0x65735546, // FUSE (sshfs, s3fs, gcsfuse, ...)
  0x00c36400, // Ceph
  0x01021997, // 9p (v9fs)
  0x5346414f, // AFS
  0x6b414653, // kAFS
  0x01161970, // GFS2
  0x7461636f, // OCFS2
  0x0bd00bd0, // Lustre
  0x47504653, // GPFS
]);

function lstatNow(path: string): Stats | string {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? 'ENOENT';
  } catch (error) {
    return codeOf(error);
  }
}

/** The reader's cache areas, bounded by their owner (`createCaches().brain`). */
export interface BrainCache {
  files: CacheArea<string, CachedFile>;
  listings: CacheArea<string, CachedListing>;
}

export const DEFAULT_MAX_BYTES = 256 * 1024;

// O_NONBLOCK: opening a FIFO inside the brain for reading would otherwise wait for a writer
// forever, holding one of libuv's four file threads; regular files ignore the flag.
const OPEN_FILE = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW;
// O_DIRECTORY: anything else (a FIFO, a device) is refused before it is opened.
const OPEN_DIRECTORY = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_DIRECTORY;
/** Links followed per path at most, as the kernel does (MAXSYMLINKS). */
const MAX_LINKS = 40;
/**
 * A result whose timestamps lie within a tick of its read is not trusted (the racy-git
 * rule): a change later in the same tick could leave size and times as they are. Linux
 * stamps files from a clock that lags by up to a jiffy (4–10 ms); a file system that keeps
 * whole seconds (ext3, FAT, some NFS) has a tick of up to 2 s.
 */
const TICK_MS = 20;
const COARSE_TICK_MS = 2000;

interface Pending<T> {
  promise: Promise<T>;
  settle(value: T): void;
}

/** What a cached result relied on: a brain path (through real directories only) and what an `lstat` of it must show for the result to stand. */
export interface Lookup {
  path: string;
  holds(info: Stats | string): boolean;
}

function directoryLookup(path: string): Lookup {
  return { path, holds: (info) => typeof info !== 'string' && info.isDirectory() };
}

function absentLookup(path: string): Lookup {
  return { path, holds: (info) => info === 'ENOENT' };
}

/** The very object seen (a link, file or directory): device, inode, type and mode, size, mtime and ctime. */
function sameLookup(path: string, seen: Stats): Lookup {
  const { dev, ino, mode, size, mtimeMs, ctimeMs } = seen;
  return {
    path,
    holds: (info) =>
      typeof info !== 'string' && info.ino === ino && info.dev === dev && info.mode === mode && info.size === size && info.mtimeMs === mtimeMs && info.ctimeMs === ctimeMs,
  };
}

/**
 * Whether a change after a read (from `startedAt` to `finishedAt`) could leave `info` as it
 * is. A ctime cannot be set from user space, so one older than a tick before the read proves
 * that any later change shows; one from the future proves nothing. An mtime in the future
 * (`touch -d`, `rsync -t` from a clock ahead) is harmless: the next write moves it.
 */
function tooRecent(info: Stats, startedAt: number, finishedAt: number): boolean {
  const tick = info.ctimeMs % 1000 === 0 && info.mtimeMs % 1000 === 0 ? COARSE_TICK_MS : TICK_MS;
  return info.ctimeMs > startedAt - tick || (info.mtimeMs > startedAt - tick && info.mtimeMs < finishedAt + tick);
}

/** A file or directory opened inside the root, and what opening it relied on. */
interface Opened {
  status: 'found';
  handle: FileHandle;
  /** Its brain path, links resolved ('' for the root). */
  resolved: string;
  /** Its absolute path, for the checks that go by path where /proc is absent. */
  where: string;
  /** The directories, links and misses on the way, to revalidate a cached result with. */
  lookups: Lookup[];
  /** The links on the way, whose times must be old enough too. */
  links: Stats[];
  /** Whether a result may be cached: the descriptor lies exactly where the lookups lead. */
  cacheable: boolean;
  /** Where /proc is absent: whether the path still leads to the opened object (after a listing). */
  recheck?: () => Promise<boolean>;
}

/** A miss, with the lookups that found it when they can confirm it again. */
interface Missed {
  status: 'missing';
  lookups: Lookup[] | undefined;
}

interface Refused {
  status: 'refused' | 'error';
  reason: string;
}

interface Walked {
  status: 'found';
  handle: FileHandle | undefined;
  resolved: string;
  lookups: Lookup[];
  links: Stats[];
}

/** A path resolved by `realpath` where /proc is absent: its real path, the path as given (under the real root), and the prefix the opened object must have. */
interface Confined {
  real: string;
  literal: string;
  scope: string;
}

export interface CachedFile {
  lookups: Lookup[];
  result: BrainFile;
}

/** What one read or listing of a session relied on (see `BrainSession.record`). */
type Relied =
  | { kind: 'file'; key: string; entry: CachedFile }
  | { kind: 'missing'; path: string; lookups: Lookup[] }
  | { kind: 'listing'; path: string; entry: CachedListing }
  | { kind: 'none' };

export interface CachedListing {
  lookups: Lookup[];
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

/** Why a read's bounds are refused: a forged trace may hold anything, and no reader uses more than `MAX_READ_BYTES`. */
function boundsRefusal(maxBytes: unknown, keep: unknown): string | undefined {
  if (typeof maxBytes !== 'number' || !Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > MAX_READ_BYTES) {
    return `maxBytes must be a whole number from 1 to ${MAX_READ_BYTES}`;
  }
  if (keep !== 'head' && keep !== 'tail') return 'keep must be head or tail';
  return undefined;
}

/** Why a path (and `within`) is refused before the file system is touched. */
function pathRefusal(path: unknown, within: unknown): string | undefined {
  if (typeof path !== 'string') return 'path is not a string';
  const unsafe = unsafePathReason(path);
  if (unsafe !== undefined) return unsafe;
  if (within !== undefined && (typeof within !== 'string' || unsafePathReason(within) !== undefined || !path.startsWith(`${within}/`))) {
    return `not under ${String(within)}/`;
  }
  return undefined;
}

function outsideReason(within: string | undefined): string {
  return within === undefined ? 'resolves outside the brain root' : `resolves outside ${within}/`;
}

const CHANGED = 'changed while being read';

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? 'unreadable';
}

async function openAt(path: string, flags: number): Promise<FileHandle | string> {
  try {
    return await open(path, flags);
  } catch (error) {
    return codeOf(error);
  }
}

async function lstatAt(path: string): Promise<Stats | string> {
  try {
    return await lstat(path);
  } catch (error) {
    return codeOf(error);
  }
}

function release(handle: FileHandle): void {
  handle.close().catch(() => undefined);
}

/** Builds the brain reader for `root`. Nothing is read until the first call. */
export function createBrain(root: string, log: BrainLog, options: BrainOptions = {}): Brain {
  const defaultMaxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const fs: BrainFs = options.fs ?? { lstat: lstatCallback, lstatSync: lstatNow, statfs };
  const readDescriptorLink = fs.readlink ?? readlink;
  const revalidate = fs.lstatSync === undefined ? 'async' : (options.revalidate ?? 'auto');
  /** Whether revalidation stats on the event loop: decided when the root is resolved (`auto`). */
  let statsOnLoop = false;
  const now = options.now ?? Date.now;
  const configuredRoot = resolve(root);
  // All the bench brain holds outside people/ and companies/ (what the routes may read) is under 9 MB of text.
  const { files, listings } = options.cache ?? {
    files: createCacheArea<string, CachedFile>('brain.files', options.cacheBytes ?? 32 * 1024 * 1024),
    listings: createCacheArea<string, CachedListing>('brain.listings', 2 * 1024 * 1024),
  };
  // The reader hands out the same listing object while a directory is unchanged: digested once per version.
  const listingRecords = new WeakMap<ListResult, ListingRecord>();
  // And the same result while a file is unchanged: its tokens and lines are counted once per version and read bound.
  const snapshots = new WeakMap<BrainFile, { keep: 'head' | 'tail'; file: SnapshotFile }>();
  // Paths last found missing: a missing file is normal, and the lookups that missed it confirm it again.
  const missing = new Map<string, Lookup[]>();
  let realRoot: Promise<string> | undefined;
  /** The resolved root once known; every cached entry was read under it. */
  let resolvedRoot: string | undefined;
  /** Whether `/proc/self/fd` shows where a descriptor is (Linux); known once the root is resolved. */
  let procFd: boolean | undefined;

  function rootPath(): Promise<string> {
    // Resolved once; a failure is not remembered, so a root mounted later is picked up.
    realRoot ??= (async () => {
      const resolved = await realpath(root);
      procFd ??= await descriptorsShowPaths(resolved);
      statsOnLoop = revalidate === 'sync' || (revalidate === 'auto' && !(await onRemoteFileSystem(resolved)));
      return (resolvedRoot = resolved);
    })().catch((error: unknown) => {
      realRoot = undefined;
      throw error;
    });
    return realRoot;
  }

  /** Whether the root's file system may make a stat wait (unknown counts as yes). */
  async function onRemoteFileSystem(base: string): Promise<boolean> {
    try {
      return REMOTE_FILE_SYSTEMS.has((await (fs.statfs ?? statfs)(base)).type);
    } catch {
      return true;
    }
  }

  /** Whether `/proc/self/fd/<fd>` names the root for a descriptor of it: the walk and the descriptor check rely on it. */
  async function descriptorsShowPaths(base: string): Promise<boolean> {
    const handle = await open(base, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
    try {
      return (await readDescriptorLink(`/proc/self/fd/${handle.fd}`)) === base;
    } catch {
      return false;
    } finally {
      release(handle);
    }
  }

  // Freshness: calls through the thread pool (fresh reads, and revalidation stats unless
  // they run on the loop: `statsOnLoop`) are not issued when a read asks for them but at the
  // end of the current event-loop turn (setImmediate), and every read of the same path (stat)
  // or key (fresh read) asked for in that turn shares the one call. A read never joins a call
  // issued before it was asked for, so it sees every change completed before then, exactly
  // as if it had made its own; concurrent requests cost one call per path per turn.
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
          read.settle(result);
        },
        (error: unknown) => read.settle({ status: 'error', path: read.path, reason: codeOf(error) }),
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

  /** An `lstat` of a brain path, or the error code it failed with. */
  function revalidationStat(path: string): Promise<Stats | string> {
    let check = pendingStats.get(path);
    if (!check) pendingStats.set(path, (check = pending()));
    return check.promise;
  }

  /**
   * Whether every lookup a result relied on still shows the same: the walk would take the
   * same way (the same directories, the same links) to the same object. Directories are
   * shared by every path under them: through the thread pool a turn stats each once; on the
   * loop each revalidation stats each once (a replayed day lists `memory/` for every daily file).
   */
  async function stillHolds(lookups: Lookup[]): Promise<boolean> {
    if (statsOnLoop) return holdsNow(lookups);
    const infos = await Promise.all(lookups.map((lookup) => revalidationStat(lookup.path)));
    return lookups.every((lookup, i) => lookup.holds(infos[i]!));
  }

  /** `stillHolds` with stats made on the event loop, now; `auto` leaves the loop for good when they are slow. */
  function holdsNow(lookups: Lookup[]): boolean {
    const began = performance.now();
    let holds = true;
    // Asked for at once, so one stat answers every lookup of a path; an earlier revalidation's would not.
    const seen = new Map<string, Stats | string>();
    for (const lookup of lookups) {
      let info = seen.get(lookup.path);
      if (info === undefined) seen.set(lookup.path, (info = fs.lstatSync!(`${resolvedRoot}${sep}${lookup.path}`)));
      if (!lookup.holds(info)) {
        holds = false;
        break;
      }
    }
    const tookMs = performance.now() - began;
    if (tookMs > SLOW_REVALIDATION_MS && revalidate === 'auto') {
      statsOnLoop = false;
      log.warn({ tookMs: Math.round(tookMs), stats: lookups.length }, 'brain stats are slow: revalidating through the thread pool from now on (BRAIN_REVALIDATE)');
    }
    return holds;
  }

  /** A read of the file itself (not from the cache). */
  function freshRead(path: string, maxBytes: number, keep: 'head' | 'tail', within: string | undefined, key: string): Promise<ReadResult> {
    let read = pendingReads.get(key);
    if (!read) pendingReads.set(key, (read = { ...pending<ReadResult>(), path, maxBytes, keep, within }));
    return read.promise;
  }

  /** The part of an absolute link target below the root (named by its real path or as configured), or undefined when it leads anywhere else. */
  function belowRoot(target: string, base: string): string | undefined {
    for (const prefix of [base, configuredRoot]) {
      if (target === prefix) return '';
      const withSep = prefix.endsWith(sep) ? prefix : `${prefix}${sep}`;
      if (target.startsWith(withSep)) return target.slice(withSep.length);
    }
    return undefined;
  }

  /**
   * Walks `path` from the root one name at a time (Linux): each name is looked up in the
   * directory opened before it, as `/proc/self/fd/<fd>/<name>` with `O_NOFOLLOW`, so the
   * kernel follows no link on the way and nothing outside the root is opened or even looked
   * up. A link is read (`lstat`, then `readlink`) and its target walked in its place,
   * confined to the root, at most `MAX_LINKS` per path; `..` returns to the directory walked
   * before, never to the kernel's parent. The last name is opened as a file or a directory,
   * or (`probe`) only looked at.
   */
  async function walk(path: string, mode: 'file' | 'directory' | 'probe', base: string): Promise<Walked | Missed | Refused> {
    const remaining = path.split('/');
    const held: FileHandle[] = [];
    const names: string[] = [];
    const lookups = new Map<string, Lookup>();
    const links: Stats[] = [];
    const found = (handle: FileHandle | undefined, resolved: string): Walked => ({ status: 'found', handle, resolved, lookups: [...lookups.values()], links });
    try {
      while (remaining.length > 0) {
        const name = remaining.shift()!;
        if (name === '' || name === '.') continue;
        if (name === '..') {
          if (held.length === 0) return { status: 'refused', reason: outsideReason(undefined) };
          names.pop();
          release(held.pop()!);
          continue;
        }
        const inBrain = names.length === 0 ? name : `${names.join('/')}/${name}`;
        const parent = held[held.length - 1];
        // The root's own path is the operator's (resolved once); every name below it is looked up in a held directory.
        const at = parent === undefined ? `${base}${sep}${name}` : `/proc/self/fd/${parent.fd}/${name}`;
        const last = remaining.length === 0;
        let entry: Stats | string;
        if (last && mode === 'probe') {
          entry = await lstatAt(at);
          if (typeof entry !== 'string' && !entry.isSymbolicLink()) return found(undefined, inBrain);
        } else {
          const opened = await openAt(at, last && mode === 'file' ? OPEN_FILE : OPEN_DIRECTORY);
          if (typeof opened !== 'string') {
            if (last) return found(opened, inBrain);
            held.push(opened);
            names.push(name);
            lookups.set(inBrain, directoryLookup(inBrain));
            continue;
          }
          // O_NOFOLLOW met a link (ELOOP; ENOTDIR with O_DIRECTORY), or this is not a directory: the entry tells which.
          entry = opened === 'ELOOP' || opened === 'ENOTDIR' ? await lstatAt(at) : opened;
          if (typeof entry !== 'string' && !entry.isSymbolicLink()) {
            if (opened === 'ELOOP' || entry.isDirectory()) return { status: 'refused', reason: CHANGED };
            if (last && mode === 'directory') return { status: 'refused', reason: 'not a directory' };
            return { status: 'missing', lookups: undefined };
          }
        }
        if (typeof entry === 'string') {
          if (entry !== 'ENOENT') return { status: 'error', reason: entry };
          lookups.set(inBrain, absentLookup(inBrain));
          return { status: 'missing', lookups: [...lookups.values()] };
        }
        // A link inside the brain: its target is walked in its place.
        if (links.length >= MAX_LINKS) return { status: 'refused', reason: 'symbolic link loop' };
        let target: string;
        try {
          target = await readlink(at);
        } catch (error) {
          const code = codeOf(error);
          return code === 'ENOENT' ? { status: 'missing', lookups: undefined } : code === 'EINVAL' ? { status: 'refused', reason: CHANGED } : { status: 'error', reason: code };
        }
        // Identity first, target second: a link replaced in between leaves an identity that no longer holds.
        lookups.set(inBrain, sameLookup(inBrain, entry));
        links.push(entry);
        if (target.startsWith(sep)) {
          const below = belowRoot(target, base);
          if (below === undefined) return { status: 'refused', reason: outsideReason(undefined) };
          while (held.length > 0) release(held.pop()!);
          names.length = 0;
          target = below;
        }
        remaining.unshift(...target.split('/'));
      }
      // The walk ended on a directory: the root or one walked into (`..`, a link to a directory, a trailing slash).
      if (mode === 'file') return { status: 'refused', reason: 'not a regular file' };
      if (mode === 'probe') return found(undefined, names.join('/'));
      const handle = held.pop() ?? (await openAt(base, OPEN_DIRECTORY));
      if (typeof handle === 'string') return { status: 'error', reason: handle };
      return found(handle, names.join('/'));
    } finally {
      for (const handle of held) release(handle);
    }
  }

  /**
   * Opens `path` as a file or directory inside the root (and inside `within`), or says why
   * not. The descriptor's own path (`/proc/self/fd/<fd>`) must lie there too before anything
   * about the object is looked at, so a refusal never tells what lies outside.
   */
  async function openInside(path: string, within: string | undefined, mode: 'file' | 'directory'): Promise<Opened | Missed | Refused> {
    let base: string;
    try {
      base = await rootPath();
    } catch {
      return { status: 'error', reason: 'brain root is not readable' };
    }
    if (procFd !== true) return openByPath(path, within, mode, base);
    const walked = await walk(path, mode, base);
    if (walked.status === 'refused' && walked.reason === outsideReason(undefined)) return { status: 'refused', reason: outsideReason(within) };
    if (walked.status !== 'found') return walked;
    const handle = walked.handle!;
    const scope = within === undefined ? '' : `${within}/`;
    const expected = walked.resolved === '' ? base : `${base}${sep}${walked.resolved}`;
    let where: string | undefined;
    if (walked.resolved.startsWith(scope)) {
      try {
        where = await readDescriptorLink(`/proc/self/fd/${handle.fd}`);
      } catch {
        // Once /proc has answered, a failure is not a reason to trust anything weaker.
      }
    }
    if (where === undefined || (where !== expected && !where.startsWith(`${base}${sep}${scope}`))) {
      release(handle);
      return { status: 'refused', reason: outsideReason(within) };
    }
    return { status: 'found', handle, resolved: walked.resolved, where, lookups: walked.lookups, links: walked.links, cacheable: where === expected };
  }

  /**
   * Where /proc is absent (macOS, for development): the path is resolved, opened without
   * following a final link, and accepted only when resolving it again leads to the same
   * device and inode. Weaker than the walk: a directory on the way swapped during the open is
   * followed by the kernel (the object is then refused, but it was opened). See SECURITY.md.
   */
  async function openByPath(path: string, within: string | undefined, mode: 'file' | 'directory', base: string): Promise<Opened | Missed | Refused> {
    const confined = await confine(path, within, base);
    if (!('real' in confined)) return confined;
    let handle: FileHandle;
    try {
      handle = await open(confined.real, mode === 'file' ? OPEN_FILE : OPEN_DIRECTORY);
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT') return { status: 'missing', lookups: undefined };
      if (code === 'ELOOP') return { status: 'refused', reason: CHANGED };
      if (code === 'ENOTDIR' && mode === 'directory') return { status: 'refused', reason: 'not a directory' };
      return { status: 'error', reason: code };
    }
    const recheck = async (): Promise<boolean> => {
      try {
        const info = await handle.stat();
        const again = await realpath(confined.literal);
        if (!again.startsWith(confined.scope)) return false;
        const current = await stat(again);
        return current.dev === info.dev && current.ino === info.ino;
      } catch {
        return false;
      }
    };
    if (!(await recheck())) {
      release(handle);
      return { status: 'refused', reason: outsideReason(within) };
    }
    const lookups: Lookup[] = [];
    for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) lookups.push(directoryLookup(path.slice(0, slash)));
    // Only an object reached through no link at all can be revalidated by these lookups.
    return { status: 'found', handle, resolved: path, where: confined.real, lookups, links: [], cacheable: confined.real === confined.literal, recheck };
  }

  /** The real path of `path` if it lies inside the root (and inside `within`), else a refusal or a miss. */
  async function confine(path: string, within: string | undefined, base: string): Promise<Confined | Missed | Refused> {
    const scope = within === undefined ? `${base}${sep}` : `${base}${sep}${within}${sep}`;
    const literal = `${base}${sep}${path}`;
    try {
      const real = await realpath(literal);
      if (!real.startsWith(scope)) return { status: 'refused', reason: outsideReason(within) };
      return { real, literal, scope };
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing', lookups: [absentLookup(path)] };
      if (code === 'ELOOP') return { status: 'refused', reason: 'symbolic link loop' };
      return { status: 'error', reason: code };
    }
  }

  function forget(key: string): void {
    files.delete(key);
  }

  function remember(key: string, entry: CachedFile): void {
    // Weighed as UTF-16 text plus its lookups; the least recently used entries make room.
    files.set(key, entry, 2 * entry.result.text.length + 128 * entry.lookups.length + 512);
  }

  /** Whether a result read from `opened` may be cached: reached exactly as its lookups say, and no stamp on the way within a tick of the read. */
  function trusted(opened: Opened, info: Stats, startedAt: number): boolean {
    const finishedAt = now();
    return opened.cacheable && !tooRecent(info, startedAt, finishedAt) && !opened.links.some((link) => tooRecent(link, startedAt, finishedAt));
  }

  async function readFresh(path: string, maxBytes: number, keep: 'head' | 'tail', within: string | undefined, key: string): Promise<ReadResult> {
    const startedAt = now();
    const opened = await openInside(path, within, 'file');
    if (opened.status === 'missing' && opened.lookups !== undefined) {
      if (missing.size >= 4096) missing.clear();
      missing.set(path, opened.lookups);
    } else missing.delete(path);
    if (opened.status !== 'found') return opened.status === 'missing' ? { status: 'missing', path } : { status: opened.status, path, reason: opened.reason };
    const { handle } = opened;
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
        warnings.push(`${quoteForWarning(path)} is ${info.size} bytes; kept the ${keep === 'tail' ? 'last' : 'first'} ${window.length}`);
      }
      const valid = isUtf8(window);
      if (!valid) {
        warnings.push(`${quoteForWarning(path)} is not valid UTF-8; invalid bytes were replaced`);
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
        textBytes: window.length,
        warnings,
      };
      if (trusted(opened, info, startedAt)) remember(key, { lookups: [...opened.lookups, sameLookup(opened.resolved, info)], result });
      return result;
    } catch (error) {
      return { status: 'error', path, reason: codeOf(error) };
    } finally {
      release(handle);
    }
  }

  async function read(path: string, options: ReadOptions = {}): Promise<ReadResult> {
    return (await readRelied(path, options)).result;
  }

  /** A read, and what it relied on for a session record: a cache entry, a confirmed miss, nothing (a refused path), or null (not replayable). */
  async function readRelied(path: string, options: ReadOptions = {}): Promise<{ result: ReadResult; relied: Relied | null }> {
    const maxBytes = options.maxBytes ?? defaultMaxBytes;
    const keep = options.keep ?? 'head';
    const refusal = boundsRefusal(maxBytes, keep) ?? pathRefusal(path, options.within);
    // Refused for what the path and bounds are: the same on any replay.
    if (refusal !== undefined) return { result: { status: 'refused', path, reason: refusal }, relied: { kind: 'none' } };
    // The confinement is part of the key: a text read under the root alone never answers a read that must stay within a directory.
    const key = `${keep}:${maxBytes}:${options.within ?? ''}:${path}`;
    const cached = files.get(key);
    if (cached) {
      if (await stillHolds(cached.lookups)) return { result: cached.result, relied: { kind: 'file', key, entry: cached } };
      // Otherwise a fresh read reports what is there (or wrong) now.
    } else {
      const gone = missing.get(path);
      if (gone !== undefined && (await stillHolds(gone))) return { result: { status: 'missing', path }, relied: { kind: 'missing', path, lookups: gone } };
    }
    const result = await freshRead(path, maxBytes, keep, options.within, key);
    if (result.status === 'ok') {
      const entry = files.get(key);
      return { result, relied: entry?.result === result ? { kind: 'file', key, entry } : null };
    }
    const lookups = result.status === 'missing' ? missing.get(path) : undefined;
    return { result, relied: lookups === undefined ? null : { kind: 'missing', path, lookups } };
  }

  async function list(path: string): Promise<ListResult> {
    return (await listRelied(path)).result;
  }

  /** A listing, and what it relied on for a session record (as `readRelied`). */
  async function listRelied(path: string): Promise<{ result: ListResult; relied: Relied | null }> {
    const refusal = pathRefusal(path, undefined);
    if (refusal !== undefined) return { result: { status: 'refused', path, reason: refusal }, relied: { kind: 'none' } };
    const cached = listings.get(path);
    if (cached && (await stillHolds(cached.lookups))) return { result: cached.result, relied: { kind: 'listing', path, entry: cached } };
    const result = await listFresh(path);
    const entry = result.status === 'ok' ? listings.get(path) : undefined;
    return { result, relied: entry !== undefined && entry.result === result ? { kind: 'listing', path, entry } : null };
  }

  async function listFresh(path: string): Promise<ListResult> {
    const startedAt = now();
    const opened = await openInside(path, undefined, 'directory');
    if (opened.status !== 'found') return opened.status === 'missing' ? { status: 'missing', path } : { status: opened.status, path, reason: opened.reason };
    const { handle } = opened;
    try {
      const info = await handle.stat();
      if (!info.isDirectory()) return { status: 'refused', path, reason: 'not a directory' };
      // On Linux the entries are read through the walked descriptor itself; elsewhere the
      // directory's identity is checked again once they are read.
      const entries = await readdir(opened.recheck === undefined ? `/proc/self/fd/${handle.fd}` : opened.where, { withFileTypes: true });
      if (opened.recheck !== undefined && !(await opened.recheck())) return { status: 'refused', path, reason: outsideReason(undefined) };
      const filesIn: string[] = [];
      const directories: string[] = [];
      for (const entry of entries) {
        if (entry.isDirectory()) directories.push(entry.name);
        else if (entry.isFile() || entry.isSymbolicLink()) filesIn.push(entry.name);
      }
      const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      const result = { status: 'ok' as const, path, files: filesIn.sort(byName), directories: directories.sort(byName) };
      if (trusted(opened, info, startedAt)) {
        const lookups = [...opened.lookups, sameLookup(opened.resolved, info)];
        const names = filesIn.length + directories.length;
        listings.set(path, { lookups, result }, 96 * names + 128 * lookups.length + 256);
      } else listings.delete(path);
      return result;
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT') return { status: 'missing', path };
      return { status: 'error', path, reason: code };
    } finally {
      release(handle);
    }
  }

  async function verify(source: Pick<SourceRecord, 'path' | 'sha256'> & Partial<Pick<SourceRecord, 'maxBytes' | 'keep' | 'within'>>): Promise<VerifyResult> {
    // A recorded bound is read as recorded, and refused (by `read`) when no reader would have used it.
    const readOptions: ReadOptions = { keep: source.keep ?? 'head' };
    if (source.maxBytes !== undefined) readOptions.maxBytes = source.maxBytes;
    if (source.within !== undefined) readOptions.within = source.within;
    const result = await read(source.path, readOptions);
    if (result.status !== 'ok') return result;
    return { status: result.sha256 === source.sha256 ? 'unchanged' : 'changed', path: source.path, sha256: result.sha256 };
  }

  async function verifyAbsent(path: string): Promise<{ path: string; appeared: boolean }> {
    // An unsafe path was never looked for, so it cannot have appeared; an unreadable root shows nothing.
    if (pathRefusal(path, undefined) !== undefined) return { path, appeared: false };
    let base: string;
    try {
      base = await rootPath();
    } catch {
      return { path, appeared: false };
    }
    // A link the reader would refuse counts: something is there.
    if (procFd === true) {
      const walked = await walk(path, 'probe', base);
      return { path, appeared: walked.status === 'found' || walked.status === 'refused' };
    }
    const confined = await confine(path, undefined, base);
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

  function snapshotOf(result: BrainFile, keep: 'head' | 'tail'): SnapshotFile {
    const known = snapshots.get(result);
    if (known?.keep === keep) return known.file;
    const file = loadedFile({ path: result.path, size: result.size, sha256: result.sha256, bytes: result.textBytes, truncated: result.truncated, keep, text: result.text });
    snapshots.set(result, { keep, file });
    return file;
  }

  function session(): BrainSession {
    const recorded = new Map<string, SourceRecord>();
    const snapshot = new Map<string, SnapshotFile>();
    const absent = new Set<string>();
    const listed = new Map<string, ListingRecord>();
    const relied: Array<Relied | null> = [];
    let replayed: SessionRecord | undefined;
    return {
      async read(path, readOptions = {}) {
        const { result, relied: on } = await readRelied(path, readOptions);
        relied.push(on);
        if (result.status === 'ok' && !recorded.has(path)) {
          const record: SourceRecord = {
            path,
            size: result.size,
            mtimeMs: result.mtimeMs,
            sha256: result.sha256,
            truncated: result.truncated,
            maxBytes: readOptions.maxBytes ?? defaultMaxBytes,
            keep: readOptions.keep ?? 'head',
          };
          if (readOptions.within !== undefined) record.within = readOptions.within;
          recorded.set(path, record);
          snapshot.set(path, snapshotOf(result, record.keep));
        } else if (result.status === 'missing') absent.add(path);
        return result;
      },
      async list(path) {
        const { result, relied: on } = await listRelied(path);
        relied.push(on);
        if (result.status === 'ok' && !listed.has(path)) listed.set(path, listingOf(result));
        else if (result.status === 'missing') absent.add(path);
        return result;
      },
      // A replay's reads come first, as they were made first; reads made after it follow.
      sources: () => merged(replayed?.sources, recorded, (source) => source.path),
      absent: () => merged(replayed?.absent, absent, (path) => path),
      listings: () => merged(replayed?.listings, listed, (listing) => listing.path),
      loaded: () => merged(replayed?.loaded, snapshot, (file) => file.path),
      record() {
        if (replayed !== undefined) return relied.length === 0 ? replayed : null;
        const files: Array<{ key: string; entry: CachedFile }> = [];
        const misses: Array<{ path: string; lookups: Lookup[] }> = [];
        const directories: Array<{ path: string; entry: CachedListing }> = [];
        const lookups: Lookup[] = [];
        for (const on of relied) {
          if (on === null) return null;
          if (on.kind === 'file') {
            files.push({ key: on.key, entry: on.entry });
            lookups.push(...on.entry.lookups);
          } else if (on.kind === 'missing') {
            misses.push({ path: on.path, lookups: on.lookups });
            lookups.push(...on.lookups);
          } else if (on.kind === 'listing') {
            directories.push({ path: on.path, entry: on.entry });
            lookups.push(...on.entry.lookups);
          }
        }
        return Object.freeze({
          reader: brain,
          files,
          missing: misses,
          directories,
          lookups,
          sources: Object.freeze([...recorded.values()]),
          absent: Object.freeze([...absent]),
          listings: Object.freeze([...listed.values()]),
          loaded: Object.freeze([...snapshot.values()]),
        });
      },
      async replay(record) {
        if (record.reader !== brain) return false;
        for (const { key, entry } of record.files) if (files.get(key) !== entry) return false;
        for (const { path, lookups } of record.missing) if (missing.get(path) !== lookups) return false;
        for (const { path, entry } of record.directories) if (listings.get(path) !== entry) return false;
        if (!(await stillHolds(record.lookups as Lookup[]))) return false;
        replayed = record;
        return true;
      },
    };
  }

  /** `first` (a replayed record's own array, handed out as it is when nothing was read after it), then the items of `then` it lacks. */
  function merged<T>(first: readonly T[] | undefined, then: ReadonlyMap<string, T> | ReadonlySet<T>, key: (item: T) => string): readonly T[] {
    const items = [...then.values()] as T[];
    if (first === undefined) return items;
    if (items.length === 0) return first;
    const seen = new Set(first.map(key));
    const all = [...first];
    for (const item of items) if (!seen.has(key(item))) all.push(item);
    return all;
  }

  function listingOf(result: ListResult & { status: 'ok' }): ListingRecord {
    let record = listingRecords.get(result);
    if (!record) listingRecords.set(result, (record = listingRecord(result.path, result.files)));
    return record;
  }

  const brain: Brain = { root, read, list, verify, verifyAbsent, verifyListing, session };
  return brain;
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
