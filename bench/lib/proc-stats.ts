import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

// /proc sampling: peak RSS (VmHWM) and CPU time of the server under test.

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

async function procStatus(pid: number): Promise<{ rssKB: number; hwmKB: number } | null> {
  try {
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { rssKB: field('VmRSS'), hwmKB: field('VmHWM') };
  } catch {
    return null;
  }
}

async function procCpuMs(pid: number): Promise<number | null> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS) * 1000;
  } catch {
    return null;
  }
}

/** `pid` and its children (a `WORKERS=N` server is its primary and N workers). */
export async function processTree(pid: number): Promise<number[]> {
  const pids = [pid];
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = await readFile(`/proc/${name}/stat`, 'utf8');
      // The parent pid is the second field after the command name.
      if (Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]) === pid) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** CPU time of a process and its children, ms; null where /proc is missing. */
export async function treeCpuMs(pids: readonly number[]): Promise<number | null> {
  let total = 0;
  for (const pid of pids) {
    const ms = await procCpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

export type RssSampler = ReturnType<typeof createRssSampler>;

/** Samples VmRSS every 200 ms (and VmHWM) of each process in `pids()`: the peak is the largest process's. */
export function createRssSampler(pids: () => readonly number[]) {
  let windowPeakKB = 0;
  let peakKB = 0;
  let available = true;
  const sample = async () => {
    for (const pid of pids()) {
      const status = await procStatus(pid);
      if (!status) {
        if (pid === pids()[0]) available = false;
        continue;
      }
      windowPeakKB = Math.max(windowPeakKB, status.rssKB);
      peakKB = Math.max(peakKB, status.hwmKB, status.rssKB);
    }
  };
  const timer = setInterval(() => void sample(), 200);
  timer.unref();
  return {
    startWindow: () => void (windowPeakKB = 0),
    /** The window's peak, a sample at its end included: a window shorter than 200 ms has one. */
    async windowPeakMB(): Promise<number | null> {
      await sample();
      return available && windowPeakKB > 0 ? windowPeakKB / 1024 : null;
    },
    async finalPeakMB(): Promise<number | null> {
      await sample();
      return available && peakKB > 0 ? peakKB / 1024 : null;
    },
    stop: () => clearInterval(timer),
  };
}
