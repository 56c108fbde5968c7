import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDurableLog } from '../../bench/durable-log.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('the durable same-body route log (bench/durable-log.ts)', () => {
  it('appends lines of the asked size, each chained to the one before, concurrent appends sharing a commit', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cc-durable-'));
    dirs.push(dir);
    const log = await createDurableLog(dir);
    await log.append(700);
    await Promise.all(Array.from({ length: 40 }, () => log.append(2048)));
    expect(log.stats.appends).toBe(41);
    // The first append is written alone; the 40 that waited behind nothing share far fewer commits.
    expect(log.stats.batches).toBeLessThan(20);
    const [name] = await readdir(dir);
    const text = await readFile(join(dir, name!), 'utf8');
    const lines = text.split('\n').slice(0, -1);
    expect(lines).toHaveLength(41);
    expect(Buffer.byteLength(lines[0]!) + 1).toBe(700);
    let previous = '0'.repeat(64);
    for (const line of lines.slice(1)) expect(Buffer.byteLength(line) + 1).toBe(2048);
    for (const line of lines) {
      const record = JSON.parse(line) as { p: string; c: string };
      const body = line.slice(0, line.lastIndexOf(',"p":'));
      expect(record.p).toBe(previous);
      expect(record.c).toBe(createHash('sha256').update(previous).update(body).digest('hex'));
      previous = record.c;
    }
    await log.close();
  });
});
