/**
 * The brain reader's shapes (`src/io/brain.ts` builds it from `confine.ts`, `revalidate.ts`,
 * `read.ts` and `session.ts`): what a read answers, what a session records, and the options
 * and file system calls a reader is built with.
 */
import type { Stats } from 'node:fs';
import type { AreasOf } from '../../cache-area.js';
import { area } from '../../core/area.js';
import type { SnapshotFile } from '../../core/hud.js';
import type { TraceListing, TraceSource } from '../../../schemas/trace.js';

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

/**
 * Why the reader refused a path or could not read it: a stable code a caller may act on,
 * and the words a warning says it in (never what lies outside the root). `io` is an errno
 * (`detail` is its code), `root-unreadable` the brain root itself.
 */
export interface Reason {
  readonly code: 'unsafe-path' | 'bounds' | 'outside' | 'not-a-file' | 'not-a-directory' | 'changed' | 'link-loop' | 'binary' | 'root-unreadable' | 'io';
  readonly detail: string;
}

/** A file or directory the reader could not give: refused for what it is or where it leads, or failed on the way. */
export type Unread = { status: 'refused' | 'error'; path: string; reason: Reason };

export type ReadResult = BrainFile | { status: 'missing'; path: string } | Unread;

/**
 * A directory's files and subdirectories, each sorted by name. Past `maxListingEntries` of
 * either, only the last by name are kept (the newest, where names start with a date) and
 * `warnings` says so.
 */
export type ListResult = { status: 'ok'; path: string; files: string[]; directories: string[]; warnings: readonly string[] } | { status: 'missing'; path: string } | Unread;

/** Files (and, apart, subdirectories) a listing keeps by default (`BRAIN_LISTING_MAX_ENTRIES`). */
export const DEFAULT_LISTING_MAX_ENTRIES = 10_000;

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
  | Unread;

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
  /** Files read successfully, in first-read order, each once, as the HUD describes them (tokens, line range). */
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
  /** The record this session replayed, if its reads came from one. */
  replayed(): SessionRecord | undefined;
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
  /** Where read files and listings are kept (the app's cache set); without one, areas of its own, sized as the default cache set sizes them. */
  cache?: BrainCache;
  fs?: BrainFs;
  /** The clock file times are compared with, to tell a change too recent to trust (`Date.now` by default). */
  now?: () => number;
  /** How cached results are revalidated (`BRAIN_REVALIDATE`); `auto` by default. */
  revalidate?: RevalidationMode;
  /** Files (and subdirectories) a listing keeps, the last by name (`BRAIN_LISTING_MAX_ENTRIES`). */
  maxListingEntries?: number;
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


/** What a cached result relied on: a brain path (through real directories only) and what an `lstat` of it must show for the result to stand. */
export interface Lookup {
  path: string;
  holds(info: Stats | string): boolean;
}

export interface CachedFile {
  lookups: Lookup[];
  result: BrainFile;
  /** The file as the HUD describes it, for the way it was read (computed once per version). */
  hudFile?: SnapshotFile;
}

export interface CachedListing {
  lookups: Lookup[];
  result: ListResult & { status: 'ok' };
  /** The listing as the trace records it (digested once per version). */
  record?: ListingRecord;
}

/** The reader's cache areas: the cache set's (`createCaches().brain`), or made from this table by a reader built without one. */
export const BRAIN_AREAS = {
  /** The largest: all the bench brain holds outside people/ and companies/ (what the routes may read) is under 9 MB of text. */
  files: area<string, CachedFile>('brain.files', 0.28),
  /** Two listings of BRAIN_LISTING_MAX_ENTRIES (mars's memory/, venus's meetings/) of dated names, about 0.9 MB each. */
  listings: area<string, CachedListing>('brain.listings', 0.06),
  /** Paths last found missing, with the lookups that confirm the miss again. */
  missing: area<string, Lookup[]>('brain.missing', 0.005),
};
export type BrainCache = AreasOf<typeof BRAIN_AREAS>;

export const DEFAULT_MAX_BYTES = 256 * 1024;
