import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

// CPU profile of the server (BENCH_CPU_PROF=1): node writes it when the server exits.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface ProfileSummary {
  path: string;
  /** Sampled time on the main thread, and how much of it was busy (not idle). */
  totalMs: number;
  busyMs: number;
  /** Functions by self time, the largest first; `percent` is of the busy time. */
  self: Array<{ fn: string; ms: number; percent: number }>;
}

/** The functions with the most self time in the newest `.cpuprofile` under `dir`, idle time left out. */
export async function summarizeProfile(dir: string, top: number): Promise<ProfileSummary | null> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.cpuprofile')).sort();
  const name = names[names.length - 1];
  if (!name) return null;
  const path = join(dir, name);
  const profile = JSON.parse(await readFile(path, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const where = frame.url ? ` ${frame.url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}:${frame.lineNumber + 1}` : '';
    const fn = `${frame.functionName || '(anonymous)'}${where}`;
    const delta = Math.max(0, profile.timeDeltas[i] ?? 0);
    selfUs.set(fn, (selfUs.get(fn) ?? 0) + delta);
    totalUs += delta;
  });
  const busyUs = totalUs - (selfUs.get('(idle)') ?? 0);
  selfUs.delete('(idle)');
  const self = [...selfUs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, us]) => ({ fn, ms: us / 1000, percent: busyUs > 0 ? (100 * us) / busyUs : 0 }));
  return { path, totalMs: totalUs / 1000, busyMs: busyUs / 1000, self };
}
