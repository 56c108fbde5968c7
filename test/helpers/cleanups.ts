/**
 * What the current test made and must undo (temp directories, apps), undone after it by
 * `test/helpers/cleanups-setup.ts`, and what each file needs first (dist/ built). Its own module, importing nothing heavy, so the setup file
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

const fileSetups: Array<() => Promise<void>> = [];

/**
 * Runs `work` before the tests of every file that runs after this call in this process (by
 * `test/helpers/cleanups-setup.ts`): a helper's hook for each file that imports it, even when a
 * worker runs files one after another with one module graph. `work` is the helper's to make
 * cheap when repeated (a promise kept from its first call).
 */
export function beforeEveryFile(work: () => Promise<void>): void {
  fileSetups.push(work);
}

/** Runs every setup registered so far, oldest first. */
export async function runFileSetups(): Promise<void> {
  for (const work of fileSetups) await work();
}

/** A temp directory removed after the current test. */
export async function tempDir(prefix = 'cc-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  afterThisTest(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
