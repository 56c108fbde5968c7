/**
 * What the brain reader refuses before the file system is touched, the reasons a read gives,
 * and what opening a path inside the root answers (`confine.ts`, `by-path.ts`).
 */
import { constants as fsConstants, type Stats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { MAX_READ_BYTES } from '../../core/types.js';
import { codeOf } from './revalidate.js';
import type { Lookup, Reason } from './types.js';

// O_NONBLOCK: opening a FIFO inside the brain for reading would otherwise wait for a writer
// forever, holding one of libuv's four file threads; regular files ignore the flag.
export const OPEN_FILE = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW;
// O_DIRECTORY: anything else (a FIFO, a device) is refused before it is opened.
export const OPEN_DIRECTORY = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_DIRECTORY;
/** Links followed per path at most, as the kernel does (MAXSYMLINKS). */
export const MAX_LINKS = 40;

export const ROOT_UNREADABLE: Reason = Object.freeze({ code: 'root-unreadable', detail: 'brain root is not readable' });
export const CHANGED: Reason = Object.freeze({ code: 'changed', detail: 'changed while being read' });
export const NOT_A_FILE: Reason = Object.freeze({ code: 'not-a-file', detail: 'not a regular file' });
export const NOT_A_DIRECTORY: Reason = Object.freeze({ code: 'not-a-directory', detail: 'not a directory' });
export const LINK_LOOP: Reason = Object.freeze({ code: 'link-loop', detail: 'symbolic link loop' });

/** A file or directory opened inside the root, and what opening it relied on. */
export interface Opened {
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
export interface Missed {
  status: 'missing';
  lookups: Lookup[] | undefined;
}

export interface Refused {
  status: 'refused' | 'error';
  reason: Reason;
}

export interface Walked {
  status: 'found';
  handle: FileHandle | undefined;
  resolved: string;
  lookups: Lookup[];
  links: Stats[];
}

export const refused = (reason: Reason): Refused => ({ status: 'refused', reason });
export const failed = (code: string): Refused => ({ status: 'error', reason: { code: 'io', detail: code } });

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
export function boundsRefusal(maxBytes: unknown, keep: unknown): Reason | undefined {
  if (typeof maxBytes !== 'number' || !Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > MAX_READ_BYTES) {
    return { code: 'bounds', detail: `maxBytes must be a whole number from 1 to ${MAX_READ_BYTES}` };
  }
  if (keep !== 'head' && keep !== 'tail') return { code: 'bounds', detail: 'keep must be head or tail' };
  return undefined;
}

/** Why a path (and `within`) is refused before the file system is touched. */
export function pathRefusal(path: unknown, within: unknown): Reason | undefined {
  if (typeof path !== 'string') return { code: 'unsafe-path', detail: 'path is not a string' };
  const unsafe = unsafePathReason(path);
  if (unsafe !== undefined) return { code: 'unsafe-path', detail: unsafe };
  if (within !== undefined && (typeof within !== 'string' || unsafePathReason(within) !== undefined || !path.startsWith(`${within}/`))) {
    return { code: 'outside', detail: `not under ${String(within)}/` };
  }
  return undefined;
}

export function outsideReason(within: string | undefined): Reason {
  return { code: 'outside', detail: within === undefined ? 'resolves outside the brain root' : `resolves outside ${within}/` };
}

export async function openAt(path: string, flags: number): Promise<FileHandle | string> {
  try {
    return await open(path, flags);
  } catch (error) {
    return codeOf(error);
  }
}

export async function lstatAt(path: string): Promise<Stats | string> {
  try {
    return await lstat(path);
  } catch (error) {
    return codeOf(error);
  }
}

export function release(handle: FileHandle): void {
  handle.close().catch(() => undefined);
}
