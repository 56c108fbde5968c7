import { join } from 'node:path';
import { SEAL_GRACE_MS } from '../store.js';
import type { FileReader } from './reader.js';
import type { FilesContext } from './context.js';
import type { FileWriter } from './writer.js';

/**
 * Retention on files: whole files are deleted once their newest event (or, with none,
 * their creation) is older than the retention. Another writer's file is deleted only once
 * it is older than `rotateMs` plus the clock-skew grace (that writer has rotated away from
 * it); this process's own current file, idle past retention, is retired and deleted too.
 * Reads hide expired events before their file goes. See docs/traces.md, "Retention".
 */
export async function sweepFiles(ctx: FilesContext, writer: FileWriter, reader: FileReader): Promise<{ deleted: number }> {
  const { index, fs, dir, now, retentionMs, rotateMs, counters, log } = ctx;
  await reader.refresh();
  const nowMs = now();
  const cutoff = nowMs - retentionMs;
  const sealedBefore = nowMs - rotateMs - SEAL_GRACE_MS;
  writer.retireIfIdle(cutoff);
  let deleted = 0;
  for (const entry of [...index.files.values()]) {
    if (entry.name === writer.currentName || entry.name === writer.openingName) continue;
    // Another writer may still append to a file younger than rotateMs (plus clock skew).
    if (entry.newestAtMs >= cutoff || (!entry.own && entry.createdMs >= sealedBefore)) continue;
    try {
      await fs.unlink(join(dir, entry.name));
      deleted++;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    index.dropFile(entry.name);
  }
  counters.filesDeleted += deleted;
  if (deleted > 0) log.info({ deletedFiles: deleted }, 'trace retention sweep');
  return { deleted };
}
