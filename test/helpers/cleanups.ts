/**
 * What the current test made and must undo (temp directories, apps), undone after it by
 * `test/helpers/cleanups-setup.ts`. Its own module, importing nothing heavy, so the setup file
 * that every test file runs costs nothing; a hook in a helper module would be registered only
 * by the first test file that imports it when a worker runs several files (`isolate: false`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cleanups: Array<() => Promise<void>> = [];

/** Undoes `work` after the current test, after anything registered later (last in, first out). */
export function afterThisTest(work: () => Promise<void>): void {
  cleanups.push(work);
}

/** Runs and forgets every cleanup registered so far, newest first. */
export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) await cleanups.pop()!();
}

/** A temp directory removed after the current test. */
export async function tempDir(prefix = 'cc-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  afterThisTest(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
