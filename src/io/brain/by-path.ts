/**
 * Confinement where /proc is absent (macOS, for development): weaker than the walk of
 * `confine.ts`, and used only where `/proc/self/fd` does not show where a descriptor is.
 */
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { sep } from 'node:path';
import { absentLookup, codeOf, directoryLookup } from './revalidate.js';
import { CHANGED, failed, LINK_LOOP, NOT_A_DIRECTORY, OPEN_DIRECTORY, OPEN_FILE, outsideReason, refused, release, type Missed, type Opened, type Refused } from './rules.js';
import type { Lookup } from './types.js';

/** A path resolved by `realpath` where /proc is absent: its real path, the path as given (under the real root), and the prefix the opened object must have. */
interface Confined {
  real: string;
  literal: string;
  scope: string;
}

/**
 * Where /proc is absent (macOS, for development): the path is resolved, opened without
 * following a final link, and accepted only when resolving it again leads to the same
 * device and inode. Weaker than the walk: a directory on the way swapped during the open is
 * followed by the kernel (the object is then refused, but it was opened). See SECURITY.md.
 */
export async function openByPath(path: string, within: string | undefined, mode: 'file' | 'directory', base: string): Promise<Opened | Missed | Refused> {
  const confined = await confine(path, within, base);
  if (!('real' in confined)) return confined;
  let handle: FileHandle;
  try {
    handle = await open(confined.real, mode === 'file' ? OPEN_FILE : OPEN_DIRECTORY);
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ENOENT') return { status: 'missing', lookups: undefined };
    if (code === 'ELOOP') return refused(CHANGED);
    if (code === 'ENOTDIR' && mode === 'directory') return refused(NOT_A_DIRECTORY);
    return failed(code);
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
    return refused(outsideReason(within));
  }
  const lookups: Lookup[] = [];
  for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) lookups.push(directoryLookup(path.slice(0, slash)));
  // Only an object reached through no link at all can be revalidated by these lookups.
  return { status: 'found', handle, resolved: path, where: confined.real, lookups, links: [], cacheable: confined.real === confined.literal, recheck };
}

/** The real path of `path` if it lies inside the root (and inside `within`), else a refusal or a miss. */
export async function confine(path: string, within: string | undefined, base: string): Promise<Confined | Missed | Refused> {
  const scope = within === undefined ? `${base}${sep}` : `${base}${sep}${within}${sep}`;
  const literal = `${base}${sep}${path}`;
  try {
    const real = await realpath(literal);
    if (!real.startsWith(scope)) return refused(outsideReason(within));
    return { real, literal, scope };
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing', lookups: [absentLookup(path)] };
    if (code === 'ELOOP') return refused(LINK_LOOP);
    return failed(code);
  }
}

