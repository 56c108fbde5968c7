import { execFileSync } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { cpus, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/config.js';

/** Files and bytes under `dir` (0 and 0 when it is missing). */
export async function dirUsage(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return { files, bytes };
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = await dirUsage(path);
      files += inner.files;
      bytes += inner.bytes;
    } else {
      files++;
      bytes += (await stat(path)).size;
    }
  }
  return { files, bytes };
}

export function gitInfo(): { commit: string | null; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: null, dirty: null };
  }
}

export function machineInfo(loadAverage: number[]) {
  return { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, totalMemMB: Math.round(totalmem() / 2 ** 20), platform: platform(), release: release(), node: process.version, loadAverage };
}
