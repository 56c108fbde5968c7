/**
 * Confinement: the security core of the brain reader, with no caching. What is read is what
 * was checked, and nothing outside the root is ever opened: on Linux a path is walked one
 * name at a time, each looked up in the directory opened before it (`/proc/self/fd/<fd>/<name>`
 * with `O_NOFOLLOW`, as `openat` would), so the kernel follows no link on the way; a link
 * inside the brain is read and its target walked in its place, confined to the root. The
 * opened descriptor's own path must lie under the root before anything about the object is
 * looked at. Where /proc is absent the path is resolved, opened and checked by device and
 * inode instead (weaker; see SECURITY.md). Every walk returns the lookups it relied on, for
 * revalidation (`revalidate.ts`).
 */
import { constants as fsConstants, type Stats } from 'node:fs';
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { confine, openByPath } from './by-path.js';
import { absentLookup, codeOf, directoryLookup, sameLookup } from './revalidate.js';
import { CHANGED, failed, LINK_LOOP, lstatAt, MAX_LINKS, NOT_A_DIRECTORY, NOT_A_FILE, OPEN_DIRECTORY, OPEN_FILE, openAt, outsideReason, refused, release, ROOT_UNREADABLE, type Missed, type Opened, type Refused, type Walked } from './rules.js';
import type { Lookup } from './types.js';

export { boundsRefusal, pathRefusal, release, unsafePathReason, ROOT_UNREADABLE, CHANGED, NOT_A_FILE, NOT_A_DIRECTORY, type Opened } from './rules.js';

/** The root, resolved: its real path, the path as configured, and whether `/proc/self/fd` shows where a descriptor is. */
interface Root {
  base: string;
  configured: string;
  procFd: boolean;
  readDescriptorLink(path: string): Promise<string>;
}

export interface Confinement {
  /** The root's real path, resolved once (a failure is not remembered, so a root mounted later is picked up). */
  root(): Promise<string>;
  /** `path` opened as a file or directory inside the root (and inside `within`), or why not. */
  open(path: string, within: string | undefined, mode: 'file' | 'directory'): Promise<Opened | Missed | Refused>;
  /** Whether anything is at `path` now: a file, a directory, a link the reader would refuse. */
  present(path: string): Promise<boolean>;
}

/** The confinement of `root`; `rooted` is told the real root once it is resolved. */
export function createConfinement(root: string, readDescriptorLink: (path: string) => Promise<string>, rooted: (base: string) => Promise<void>): Confinement {
  let resolving: Promise<Root> | undefined;
  const configured = resolve(root);
  const resolved = (): Promise<Root> => {
    resolving ??= (async () => {
      const base = await realpath(root);
      const procFd = await descriptorsShowPaths(base, readDescriptorLink);
      await rooted(base);
      return { base, configured, procFd, readDescriptorLink };
    })().catch((error: unknown) => {
      resolving = undefined;
      throw error;
    });
    return resolving;
  };
  return {
    root: async () => (await resolved()).base,
    async open(path, within, mode) {
      let base: Root;
      try {
        base = await resolved();
      } catch {
        return { status: 'error', reason: ROOT_UNREADABLE };
      }
      return openInside(base, path, within, mode);
    },
    async present(path) {
      let base: Root;
      try {
        base = await resolved();
      } catch {
        // An unreadable root shows nothing.
        return false;
      }
      // A link the reader would refuse counts: something is there.
      if (base.procFd) {
        const walked = await walk(path, 'probe', base.base, base.configured);
        return walked.status === 'found' || walked.status === 'refused';
      }
      const confined = await confine(path, undefined, base.base);
      return 'real' in confined || confined.status === 'refused';
    },
  };
}

/** Whether `/proc/self/fd/<fd>` names the root for a descriptor of it: the walk and the descriptor check rely on it. */
async function descriptorsShowPaths(base: string, readDescriptorLink: (path: string) => Promise<string>): Promise<boolean> {
  const handle = await open(base, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
  try {
    return (await readDescriptorLink(`/proc/self/fd/${handle.fd}`)) === base;
  } catch {
    return false;
  } finally {
    release(handle);
  }
}


/** The part of an absolute link target below the root (named by its real path or as configured), or undefined when it leads anywhere else. */
function belowRoot(target: string, base: string, configuredRoot: string): string | undefined {
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
async function walk(path: string, mode: 'file' | 'directory' | 'probe', base: string, configuredRoot: string): Promise<Walked | Missed | Refused> {
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
        if (held.length === 0) return refused(outsideReason(undefined));
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
          if (opened === 'ELOOP' || entry.isDirectory()) return refused(CHANGED);
          if (last && mode === 'directory') return refused(NOT_A_DIRECTORY);
          return { status: 'missing', lookups: undefined };
        }
      }
      if (typeof entry === 'string') {
        if (entry !== 'ENOENT') return failed(entry);
        lookups.set(inBrain, absentLookup(inBrain));
        return { status: 'missing', lookups: [...lookups.values()] };
      }
      // A link inside the brain: its target is walked in its place.
      if (links.length >= MAX_LINKS) return refused(LINK_LOOP);
      let target: string;
      try {
        target = await readlink(at);
      } catch (error) {
        const code = codeOf(error);
        return code === 'ENOENT' ? { status: 'missing', lookups: undefined } : code === 'EINVAL' ? refused(CHANGED) : failed(code);
      }
      // Identity first, target second: a link replaced in between leaves an identity that no longer holds.
      lookups.set(inBrain, sameLookup(inBrain, entry));
      links.push(entry);
      if (target.startsWith(sep)) {
        const below = belowRoot(target, base, configuredRoot);
        if (below === undefined) return refused(outsideReason(undefined));
        while (held.length > 0) release(held.pop()!);
        names.length = 0;
        target = below;
      }
      remaining.unshift(...target.split('/'));
    }
    // The walk ended on a directory: the root or one walked into (`..`, a link to a directory, a trailing slash).
    if (mode === 'file') return refused(NOT_A_FILE);
    if (mode === 'probe') return found(undefined, names.join('/'));
    const handle = held.pop() ?? (await openAt(base, OPEN_DIRECTORY));
    if (typeof handle === 'string') return failed(handle);
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
async function openInside(root: Root, path: string, within: string | undefined, mode: 'file' | 'directory'): Promise<Opened | Missed | Refused> {
  const { base, procFd, readDescriptorLink } = root;
  if (!procFd) return openByPath(path, within, mode, base);
  const walked = await walk(path, mode, base, root.configured);
  if (walked.status === 'refused' && walked.reason.code === 'outside') return refused(outsideReason(within));
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
    return refused(outsideReason(within));
  }
  return { status: 'found', handle, resolved: walked.resolved, where, lookups: walked.lookups, links: walked.links, cacheable: where === expected };
}
