import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { TraceSource } from './trace-store.js';

/** The current sha256 of a brain file a trace event recorded (read the way it was read then), or null when it is gone. */
export type VerifySource = (source: TraceSource) => Promise<{ sha256: string } | null>;

function inside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Hashes a recorded source path under the brain root. Never reads outside the root: the
 * path and its real path (symlinks resolved) must both stay inside the root's real path;
 * anything else, or a file that is missing or not a regular file, answers null. It hashes
 * whole files, so a source recorded as `truncated` reads as changed.
 */
export function createBrainSourceVerifier(root: string): VerifySource {
  return async ({ path }) => {
    if (path.length === 0 || path.includes('\0')) return null;
    const realRoot = await realpath(root).catch(() => null);
    if (!realRoot) return null;
    const relativePath = isAbsolute(path) ? relative(resolve(root), path) : path;
    const candidate = resolve(realRoot, relativePath);
    if (!inside(realRoot, candidate)) return null;
    const real = await realpath(candidate).catch(() => null);
    if (!real || !inside(realRoot, real)) return null;
    const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
    if (!handle) return null;
    try {
      if (!(await handle.stat()).isFile()) return null;
      const hash = createHash('sha256');
      await pipeline(handle.createReadStream({ autoClose: false }), hash);
      return { sha256: hash.digest('hex') };
    } catch {
      return null;
    } finally {
      await handle.close().catch(() => {});
    }
  };
}
