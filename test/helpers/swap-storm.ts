/**
 * A writer that swaps brain paths for links out of the root as fast as it can, on its own
 * thread (so its renames race the service's reads for real), for the symlink-race tests.
 */
import { Worker } from 'node:worker_threads';
import { onTestFinished } from 'vitest';

export interface SwapTarget {
  /** The absolute path in the brain that is swapped. */
  path: string;
  /** Where a file swap is prepared (inside the root, so the rename is atomic). */
  tmp: string;
  /** A file target: the regular file's text while it is in. */
  inside?: string;
  /** A directory target: where the real directory waits while the link is in place (it starts there). */
  aside?: string;
  /** What the link out of the root points at. */
  outside: string;
}

// A file by atomic renames (regular file <-> link); a directory by moving the real one aside
// for the link and back. Every target in, then every target out, so each state lasts about
// half a round; it stops with every target linked out of the root.
const SWAPPER = `
const { workerData, parentPort } = require('node:worker_threads');
const { renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } = require('node:fs');
const shared = new Int32Array(workerData.shared);
const replace = (target, make) => {
  rmSync(target.tmp, { force: true });
  make(target.tmp);
  renameSync(target.tmp, target.path);
};
const inside = (target) => {
  if (target.inside !== undefined) return replace(target, (tmp) => writeFileSync(tmp, target.inside));
  unlinkSync(target.path);
  renameSync(target.aside, target.path);
};
const outside = (target) => {
  if (target.inside !== undefined) return replace(target, (tmp) => symlinkSync(target.outside, tmp));
  renameSync(target.path, target.aside);
  symlinkSync(target.outside, target.path);
};
while (Atomics.load(shared, 0) === 0) {
  for (const target of workerData.targets) inside(target);
  for (const target of workerData.targets) outside(target);
  Atomics.add(shared, 1, 2 * workerData.targets.length);
}
parentPort.postMessage(Atomics.load(shared, 1));
`;

export interface SwapStorm {
  /** Swaps made so far: a test runs its reads until the writer has made enough, never for a time. */
  swaps(): number;
  /** Stops the writer (every target is left linked out of the root) and says how many swaps it made. */
  stop(): Promise<number>;
}

/** Starts swapping `targets` (a directory target must start as a link out, its real copy at `aside`). */
export function startSwapStorm(targets: SwapTarget[]): SwapStorm {
  // [0]: stop when 1; [1]: swaps made so far.
  const shared = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(SWAPPER, { eval: true, workerData: { shared: shared.buffer, targets } });
  const swapped = new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const stop = async () => {
    Atomics.store(shared, 0, 1);
    return swapped;
  };
  onTestFinished(async () => {
    await stop().catch(() => undefined);
  });
  return { swaps: () => Atomics.load(shared, 1), stop };
}
