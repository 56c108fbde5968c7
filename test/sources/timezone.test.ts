import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { createBrain } from '../../src/io/brain.js';
import { createCacheArea } from '../../src/cache-area.js';
import { remembered } from '../../src/core/memo.js';
import { readHeartbeatTimezone } from '../../src/sources/timezone.js';
import { tempDir } from '../helpers/app.js';

const silent = { warn: () => undefined };

async function brainDir(files: Record<string, string> = {}): Promise<string> {
  const root = await tempDir('cc-brain-');
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}

describe('sources: values derived per version of a file', () => {
  it('derives once per version of a file, and again after it changes', async () => {
    const root = await brainDir({ 'a.md': 'one two' });
    const brain = createBrain(root, silent);
    const parsed = createCacheArea<string, string[]>('test.words', 1 << 20);
    const seen: string[] = [];
    const words = async () => {
      const file = await brain.read('a.md');
      if (file.status !== 'ok') throw new Error(file.status);
      return remembered(parsed, `words|${file.sha256}`, () => (seen.push(file.text), file.text.split(' ')), () => 64);
    };
    const first = await words();
    expect(await words()).toBe(first);
    await writeFile(join(root, 'a.md'), 'three four five');
    expect(await words()).toEqual(['three', 'four', 'five']);
    expect(seen).toEqual(['one two', 'three four five']);
  });
});

describe('sources: heartbeat time zone', () => {
  it('reads a valid zone, ignores an absent file, and warns about a broken one', async () => {
    const good = createBrain(await brainDir({ 'memory/heartbeat-state.json': '{"currentLocation":{"timezone":"Asia/Kolkata"}}' }), silent);
    const fallback = { defaultTimeZone: 'Europe/London' };
    expect(await readHeartbeatTimezone(good, fallback)).toEqual({ timeZone: 'Asia/Kolkata', source: 'heartbeat', warnings: [] });
    expect(await readHeartbeatTimezone(good, { ...fallback, requested: 'UTC' })).toEqual({ timeZone: 'UTC', source: 'request', warnings: [] });
    expect(await readHeartbeatTimezone(createBrain(await brainDir(), silent), fallback)).toEqual({ timeZone: 'Europe/London', source: 'default', warnings: [] });
    const broken = createBrain(await brainDir({ 'memory/heartbeat-state.json': '{not json' }), silent);
    expect((await readHeartbeatTimezone(broken, fallback)).warnings).toEqual([expect.stringMatching(/not valid JSON; using Europe\/London/)]);
    const unknown = createBrain(await brainDir({ 'memory/heartbeat-state.json': '{"currentLocation":{"timezone":"Mars/Base"}}' }), silent);
    expect(await readHeartbeatTimezone(unknown, fallback)).toMatchObject({ timeZone: 'Europe/London', warnings: [expect.stringMatching(/not a valid IANA time zone/)] });
  });

  it('parses a heartbeat file once per version of its bytes, with a memo', async () => {
    const root = await brainDir({ 'memory/heartbeat-state.json': '{"currentLocation":{"timezone":"Asia/Kolkata"}}' });
    const brain = createBrain(root, silent);
    const caches = createCaches();
    const memo = { ...caches.sources, time: caches.compiler.time };
    const first = await readHeartbeatTimezone(brain, { defaultTimeZone: 'UTC' }, memo);
    expect(await readHeartbeatTimezone(brain, { defaultTimeZone: 'UTC' }, memo)).toBe(first);
    await writeFile(join(root, 'memory/heartbeat-state.json'), '{"currentLocation":{"timezone":"Europe/Paris"}}');
    expect(await readHeartbeatTimezone(brain, { defaultTimeZone: 'UTC' }, memo)).toMatchObject({ timeZone: 'Europe/Paris', source: 'heartbeat' });
  });
});
