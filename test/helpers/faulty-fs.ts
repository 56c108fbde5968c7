import * as fsp from 'node:fs/promises';
import type { TraceFs } from '../../src/io/trace/index.js';

function injected(code: string): Error {
  return Object.assign(new Error(`${code}: injected`), { code });
}

/**
 * The real file system for a trace store, except what a test switches on: writes, fsyncs
 * or truncates failing with an errno (`ENOSPC` for a full volume), or something done to
 * the file just before a write reaches it (another process truncating it, say).
 */
export function faultyFs() {
  const state = {
    failWith: null as string | null,
    failSyncWith: null as string | null,
    failTruncateWith: null as string | null,
    /** Runs once, just before the next write, with the path written to. */
    beforeWrite: null as ((path: string) => Promise<void>) | null,
    writes: 0,
  };
  const fs: TraceFs = {
    access: fsp.access,
    chmod: fsp.chmod,
    mkdir: fsp.mkdir,
    readdir: fsp.readdir,
    stat: fsp.stat,
    unlink: fsp.unlink,
    open: async (path, flags, mode) => {
      const handle = await fsp.open(path, flags, mode);
      return new Proxy(handle, {
        get(target, property) {
          if (property === 'write') {
            return async (...args: Parameters<typeof handle.write>) => {
              state.writes++;
              if (state.failWith) throw injected(state.failWith);
              const before = state.beforeWrite;
              state.beforeWrite = null;
              await before?.(String(path));
              return target.write(...args);
            };
          }
          if (property === 'datasync' && state.failSyncWith) {
            const code = state.failSyncWith;
            return async () => {
              throw injected(code);
            };
          }
          if (property === 'truncate' && state.failTruncateWith) {
            const code = state.failTruncateWith;
            return async () => {
              throw injected(code);
            };
          }
          const value = Reflect.get(target, property, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    },
  };
  return { fs, state };
}
