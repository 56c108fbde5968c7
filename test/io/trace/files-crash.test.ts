import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../../src/config.js';
import { createFileTraceStore as createTraceStore } from '../../../src/io/trace/index.js';
import { tempDir } from '../../helpers/app.js';
import { deliveredEvent } from '../../helpers/trace-events.js';
import { HEAVY_TEST_MS, LOAD_BOUND_MS } from '../../helpers/bounds.js';

const CHILD = join(PROJECT_ROOT, 'test/helpers/trace-crash-child.ts');

async function sizes(dir: string): Promise<Map<string, number>> {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.jsonl'));
  return new Map(await Promise.all(names.map(async (name) => [name, (await stat(join(dir, name))).size] as const)));
}

describe('a writer killed with SIGKILL mid-flight', () => {
  it('loses no acknowledged event, and the store keeps working on the same directory', async () => {
    const dir = join(await tempDir('cc-trace-crash-'), 'traces');
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = once(child, 'exit');

    const deadline = Date.now() + LOAD_BOUND_MS;
    while (stdout.split('\n').length < 3000 && Date.now() < deadline && child.exitCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    child.kill('SIGKILL');
    const [code, signal] = await exited;
    expect({ code, signal, stderr }).toMatchObject({ code: null, signal: 'SIGKILL' });

    // The last line may be cut short by the kill; every complete line is an acknowledged run.
    const acknowledged = stdout.split('\n').slice(0, -1).filter((line) => line !== 'ready');
    expect(acknowledged.length).toBeGreaterThan(1000);

    const before = await sizes(dir);
    const store = createTraceStore(dir, pino({ level: 'silent' }), { retentionMs: 86_400_000 });
    try {
      const listed = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await store.listRuns({ limit: 100, ...(cursor ? { cursor } : {}) });
        for (const run of page.runs) listed.add(run.runId);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(acknowledged.filter((runId) => !listed.has(runId))).toEqual([]);

      const sample = [...acknowledged.filter((_, i) => i % 97 === 0), ...acknowledged.slice(-32)];
      for (const runId of sample) {
        const run = await store.readRun(runId);
        expect(run?.events.map((event) => event.verified), runId).toEqual([true]);
        // The torn tail the kill left is not tampering.
        expect(run?.chain, runId).toEqual({ status: 'linked', problems: [], notes: [] });
      }

      await store.append(deliveredEvent('after-crash'));
      expect((await store.readRun('after-crash'))!.events[0]!.verified).toBe(true);
      const after = await sizes(dir);
      // Files of the killed writer are never appended to again; the new event went to a new file.
      for (const [name, size] of before) expect(after.get(name), name).toBe(size);
      expect(after.size).toBe(before.size + 1);
    } finally {
      await store.close();
    }
  }, HEAVY_TEST_MS);
});
