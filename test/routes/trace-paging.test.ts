import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { parseStartCommand } from '../../bench/start-command.js';
import { PROJECT_ROOT } from '../../src/config.js';
import { tempDir } from '../helpers/app.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * Issue 27, the reproduction itself: callers choose `runId` and the files store had no cap on
 * events per run. After 3,000 `GET /context/mars?runId=big-500`, one
 * `GET /runs/big-500/trace` ran the process out of memory at npm start's heap cap (then 144 MB),
 * and again after a restart. Here the same 3,000 requests, then the whole run read page by
 * page from a real process started with npm start's node flags.
 */

const EVENTS = 3000;
let server: ServerProcess | null = null;

afterEach(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  server = null;
});

/** Peak and current resident memory of a process, in MB (Linux). */
async function memory(pid: number): Promise<{ peakMb: number; rssMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peakMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
}

describe.skipIf(process.platform !== 'linux')('a 3,000-event run read under npm start’s heap flags', () => {
  it('regression: GET /runs/big-500/trace after 3,000 GET /context/mars?runId=big-500 pages the run instead of running out of memory, and pages again after a restart', async () => {
    const { env: startEnv, nodeFlags } = parseStartCommand(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
    expect(nodeFlags.some((flag) => flag.startsWith('--max-old-space-size='))).toBe(true);
    const env = { ...startEnv, PORT: '0', TRACE_DIR: join(await tempDir('cc-big-run-'), 'traces'), RATE_LIMIT_MAX: '1000000', LOG_LEVEL: 'info', PRESSURE_MAX_EVENT_LOOP_DELAY: '0' };
    server = startServer(env, { nodeFlags });
    // 16 callers at once: group commit makes one fsync of more of them, so the 3,000 take about a
    // quarter less time than with 8, and the process's peak after writing them is the same (137 MB).
    const CALLERS = 16;
    let pool = new Pool(`http://127.0.0.1:${await server.listening(60_000)}`, { connections: CALLERS });
    try {
      let next = 0;
      const worker = async () => {
        while (next < EVENTS) {
          next++;
          const { statusCode, body } = await pool.request({ path: '/context/mars?runId=big-500', method: 'GET' });
          await body.dump();
          expect(statusCode).toBe(200);
        }
      };
      await Promise.all(Array.from({ length: CALLERS }, worker));

      /** The run's pages from the first, at most `maxPages` of them: the events seen, in order, and the largest page in bytes. */
      const readAll = async (limit: number, maxPages = Infinity) => {
        let cursor: string | null = null;
        let seen = 0;
        let pages = 0;
        let largest = 0;
        let lastAt = '';
        do {
          const { statusCode, body } = await pool.request({ path: `/runs/big-500/trace?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, method: 'GET' });
          const text = await body.text();
          expect(statusCode).toBe(200);
          const page = JSON.parse(text) as { events: Array<{ at: string; verified: boolean }>; nextCursor: string | null };
          expect(page.events.length).toBeLessThanOrEqual(limit);
          for (const event of page.events) {
            expect(event.at >= lastAt).toBe(true);
            expect(event.verified).toBe(true);
            lastAt = event.at;
          }
          seen += page.events.length;
          largest = Math.max(largest, text.length);
          pages++;
          cursor = page.nextCursor;
        } while (cursor !== null && pages < maxPages);
        return { seen, pages, largest };
      };

      const written = await memory(server.child.pid!);
      // The whole run in pages of 100, and its first pages of 20 (the events are alike, so their
      // pages are too: reading all 150 of them cost about 4 s of CPU and showed nothing more).
      const byHundreds = await readAll(100);
      const byTwenties = await readAll(20, 10);
      const read = await memory(server.child.pid!);
      expect(byHundreds).toMatchObject({ seen: EVENTS, pages: EVENTS / 100 });
      expect(byTwenties).toMatchObject({ seen: 200, pages: 10 });
      // A page of 100 is about 5 pages of 20: what one request holds follows the page, not the run.
      expect(byHundreds.largest / byTwenties.largest).toBeLessThan(6);
      expect(byHundreds.largest / byTwenties.largest).toBeGreaterThan(4);
      // Reading all 3,000 events raised the peak little over what writing them took.
      expect(read.peakMb / written.peakMb).toBeLessThan(1.5);
      expect(server.child.exitCode).toBeNull();
      const { statusCode } = await pool.request({ path: '/healthz', method: 'GET' });
      expect(statusCode).toBe(200);
      process.stdout.write(`big-500: peak RSS ${written.peakMb.toFixed(1)} MB after 3,000 appends, ${read.peakMb.toFixed(1)} MB after paging it; largest page ${byTwenties.largest} B (20 events), ${byHundreds.largest} B (100)\n`);

      // After a restart the run is read from the files alone, page by page as well.
      await pool.close();
      server.child.kill('SIGTERM');
      await server.exited;
      server = startServer(env, { nodeFlags });
      pool = new Pool(`http://127.0.0.1:${await server.listening(60_000)}`, { connections: 1 });
      expect(await readAll(100)).toMatchObject({ seen: EVENTS, pages: EVENTS / 100 });
      expect(server.child.exitCode).toBeNull();
    } finally {
      await pool.close();
    }
  }, 300_000);
});
