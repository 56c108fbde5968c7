import { appendFile, readFile, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrainManifest } from '../generate-brain.js';
import { CHURN_INTERVAL_MS } from '../lib/knobs.js';
import { onCleanUp } from '../lib/processes.js';

/** Where a churn window recorded what to put back: a run killed mid-window is repaired by the next one. */
const CHURN_MARKER = '.bench-churn-restore.json';

/** Cuts today's memory file back to the size it had before a churn window, if a marker says one ran. */
export async function restoreChurn(brainDir: string): Promise<void> {
  const marker = join(brainDir, CHURN_MARKER);
  let saved: { path: string; size: number };
  try {
    saved = JSON.parse(await readFile(marker, 'utf8')) as { path: string; size: number };
  } catch {
    return;
  }
  await truncate(join(brainDir, saved.path), saved.size);
  await unlink(marker);
}

/**
 * Appends a line to today's memory file every `CHURN_INTERVAL_MS` (as an operator's notes
 * app would), until the returned function is called; then cuts the file back to its size
 * before, so the generated brain is unchanged for the next run (or on a signal or a failure).
 */
export function startChurn(brainDir: string, manifest: Pick<BrainManifest, 'endDate'>): () => Promise<void> {
  const path = `memory/${manifest.endDate}.md`;
  const file = join(brainDir, path);
  let appended = 0;
  let writing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let forget = () => {};
  // The writer stops before the file is cut back, on a signal or a failure too: an append after the cut would stay.
  const stop = async () => {
    await ready;
    clearInterval(timer);
    await writing;
    await restoreChurn(brainDir);
    forget();
  };
  const ready = (async () => {
    const size = (await stat(file)).size;
    await writeFile(join(brainDir, CHURN_MARKER), JSON.stringify({ path, size }));
    forget = onCleanUp(stop);
    timer = setInterval(() => {
      writing = writing.then(() => appendFile(file, `- ${String(appended++).padStart(5, '0')}: I feel a small hope about the churn line that just landed.\n`));
    }, CHURN_INTERVAL_MS);
  })();
  return stop;
}
