/**
 * dist/ as `npm start` builds it (scripts/build-if-stale.mjs: tsc for the server and the CLI,
 * scripts/build-ui.mjs for the viewer, each only when its sources are newer), for the tests
 * that run the server or the CLI in a child process and the tests that serve the viewer.
 * `node dist/...` starts without compiling TypeScript in the child (`--import tsx` cost about
 * 0.3 s of CPU per process, and a run starts about a hundred), and the viewer is built once
 * per run instead of once per file. Files running in parallel take turns under flock(1): the
 * first one builds, the others find dist/ fresh.
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../src/config.js';

export const SERVER_ENTRY = join(PROJECT_ROOT, 'dist/src/server.js');
export const CLI_ENTRY = join(PROJECT_ROOT, 'dist/src/cli.js');

const CACHE = join(PROJECT_ROOT, 'node_modules/.cache/context-compiler');

let built: Promise<void> | undefined;

/** Builds dist/ if any of its sources is newer; once per test file, the first call's promise for the rest. */
export function buildDist(): Promise<void> {
  built ??= (async () => {
    await mkdir(CACHE, { recursive: true });
    try {
      await promisify(execFile)('flock', [join(CACHE, 'build.lock'), process.execPath, 'scripts/build-if-stale.mjs'], { cwd: PROJECT_ROOT, timeout: 570_000 });
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`building dist/ as npm start does failed: ${(error as Error).message}\n${stdout}${stderr}`);
    }
  })();
  return built;
}
