/**
 * Revalidation: whether a cached read still stands. A result is kept with every lookup it
 * relied on (`Lookup`: each directory on the way, each link followed, the object itself) and
 * served again only while `lstat`s of those paths, made after the read was asked for, show
 * the same. How the stats are made is `RevalidationMode`; calls through the thread pool are
 * batched per event-loop turn (`TurnBatch`), so concurrent requests share one per path
 * without ever joining a call issued before they asked.
 */
import { lstatSync, type Stats } from 'node:fs';
import { sep } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { BrainFs, BrainLog, Lookup, RevalidationMode } from './types.js';

/** A revalidation on the event loop slower than this (all of its stats) moves `auto` off it. */
export const SLOW_REVALIDATION_MS = 100;

/**
 * A result whose timestamps lie within a tick of its read is not trusted (the racy-git
 * rule): a change later in the same tick could leave size and times as they are. Linux
 * stamps files from a clock that lags by up to a jiffy (4–10 ms); a file system that keeps
 * whole seconds (ext3, FAT, some NFS) has a tick of up to 2 s.
 */
const TICK_MS = 20;
const COARSE_TICK_MS = 2000;

/** `statfs` f_type of file systems whose stats may wait on a network or another process (linux/magic.h). */
const REMOTE_FILE_SYSTEMS: ReadonlySet<number> = new Set([
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

export function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? 'unreadable';
}

/** An `lstat` on the event loop: the stats, or the error code. */
export function lstatNow(path: string): Stats | string {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? 'ENOENT';
  } catch (error) {
    return codeOf(error);
  }
}

export function directoryLookup(path: string): Lookup {
  return { path, holds: (info) => typeof info !== 'string' && info.isDirectory() };
}

export function absentLookup(path: string): Lookup {
  return { path, holds: (info) => info === 'ENOENT' };
}

/** The very object seen (a link, file or directory): device, inode, type and mode, size, mtime and ctime. */
export function sameLookup(path: string, seen: Stats): Lookup {
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
export function tooRecent(info: Stats, startedAt: number, finishedAt: number): boolean {
  const tick = info.ctimeMs % 1000 === 0 && info.mtimeMs % 1000 === 0 ? COARSE_TICK_MS : TICK_MS;
  return info.ctimeMs > startedAt - tick || (info.mtimeMs > startedAt - tick && info.mtimeMs < finishedAt + tick);
}

/**
 * Calls asked for in one event-loop turn, issued together at its end (`setImmediate`), each
 * key once: every caller of a key in the turn shares the one call, and none joins a call
 * issued before it asked, so each sees every change completed before then.
 */
export class TurnBatch<K, A, T> {
  private pending = new Map<K, { promise: Promise<T>; settle: (value: T) => void; args: A }>();

  constructor(private readonly issue: (key: K, args: A) => Promise<T>) {}

  call(key: K, args: A): Promise<T> {
    const known = this.pending.get(key);
    if (known !== undefined) return known.promise;
    if (this.pending.size === 0) setImmediate(() => this.flush());
    let settle!: (value: T) => void;
    const promise = new Promise<T>((resolve) => (settle = resolve));
    this.pending.set(key, { promise, settle, args });
    return promise;
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = new Map();
    for (const [key, { settle, args }] of batch) void this.issue(key, args).then(settle);
  }
}

/** Whether the root's file system may make a stat wait (unknown counts as yes). */
async function onRemoteFileSystem(fs: BrainFs, base: string, statfs: NonNullable<BrainFs['statfs']>): Promise<boolean> {
  try {
    return REMOTE_FILE_SYSTEMS.has((await (fs.statfs ?? statfs)(base)).type);
  } catch {
    return true;
  }
}

export interface Revalidator {
  /** Decides, once the root is resolved, where stats are made (`auto`: on the loop unless the root is on a network or FUSE mount). */
  rooted(base: string): Promise<void>;
  /** Whether every lookup still shows the same, by `lstat`s made now (or at the end of this turn). */
  stillHolds(lookups: readonly Lookup[]): Promise<boolean>;
}

export function createRevalidator(fs: BrainFs, log: BrainLog, mode: RevalidationMode, statfs: NonNullable<BrainFs['statfs']>): Revalidator {
  let base = '';
  let onLoop = false;
  const stats = new TurnBatch<string, undefined, Stats | string>(
    (path) => new Promise((resolve) => fs.lstat(`${base}${sep}${path}`, (error, info) => resolve(error ? (error.code ?? 'EUNKNOWN') : info))),
  );

  /** `stillHolds` with stats made on the event loop, now; `auto` leaves the loop for good when they are slow. */
  function holdsNow(lookups: readonly Lookup[]): boolean {
    const began = performance.now();
    let holds = true;
    // Asked for at once, so one stat answers every lookup of a path; an earlier revalidation's would not.
    const seen = new Map<string, Stats | string>();
    for (const lookup of lookups) {
      let info = seen.get(lookup.path);
      if (info === undefined) seen.set(lookup.path, (info = fs.lstatSync!(`${base}${sep}${lookup.path}`)));
      if (!lookup.holds(info)) {
        holds = false;
        break;
      }
    }
    const tookMs = performance.now() - began;
    if (tookMs > SLOW_REVALIDATION_MS && mode === 'auto') {
      onLoop = false;
      log.warn({ tookMs: Math.round(tookMs), stats: lookups.length }, 'brain stats are slow: revalidating through the thread pool from now on (BRAIN_REVALIDATE)');
    }
    return holds;
  }

  return {
    async rooted(root) {
      base = root;
      onLoop = mode === 'sync' || (mode === 'auto' && !(await onRemoteFileSystem(fs, root, statfs)));
    },
    async stillHolds(lookups) {
      if (onLoop) return holdsNow(lookups);
      // Directories are shared by every path under them: a turn stats each once.
      const infos = await Promise.all(lookups.map((lookup) => stats.call(lookup.path, undefined)));
      return lookups.every((lookup, i) => lookup.holds(infos[i]!));
    },
  };
}
