import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseStartCommand } from '../../bench/start-command.js';
import { PROJECT_ROOT } from '../../src/config.js';

const pkg = (start: string) => JSON.stringify({ scripts: { start } });

describe('parseStartCommand (how the bench starts the server as npm start does)', () => {
  it('reads the node flags and the entry point of `npm start`', () => {
    expect(parseStartCommand(pkg('node --max-old-space-size=160 dist/src/server.js'))).toEqual({
      env: {},
      nodeFlags: ['--max-old-space-size=160'],
      entry: 'dist/src/server.js',
    });
    expect(parseStartCommand(pkg('node dist/src/server.js')).nodeFlags).toEqual([]);
    expect(parseStartCommand(pkg('MALLOC_ARENA_MAX=1 node --x=1 dist/src/server.js'))).toEqual({ env: { MALLOC_ARENA_MAX: '1' }, nodeFlags: ['--x=1'], entry: 'dist/src/server.js' });
  });

  it('refuses a start script it could not reproduce exactly', () => {
    for (const start of ['', 'tsx src/server.ts', 'NODE_OPTIONS=--x node dist/src/server.js', 'A=$(id) node dist/src/server.js', 'A=1 dist/src/server.js', 'node dist/src/server.js && echo done', 'node -r x dist/src/server.js']) {
      expect(() => parseStartCommand(pkg(start)), start).toThrow(/"start" must be/);
    }
  });

  it('caps the heap in this repository’s `npm start`, as the image does (issue 12/16: ≤ 200 MB RSS without a flag to know about)', async () => {
    const { env, nodeFlags, entry } = parseStartCommand(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
    expect(entry).toBe('dist/src/server.js');
    const heap = (text: string) => Number(/--max-old-space-size=(\d+)/.exec(text)?.[1]);
    const young = (text: string) => Number(/--max-semi-space-size=(\d+)/.exec(text)?.[1]);
    const dockerfile = /NODE_OPTIONS="([^"]+)"/.exec(await readFile(join(PROJECT_ROOT, 'Dockerfile'), 'utf8'))?.[1] ?? '';
    const deployment = /name: NODE_OPTIONS\s+value: (.+)/.exec(await readFile(join(PROJECT_ROOT, 'docker/k8s/base/deployment.yaml'), 'utf8'))?.[1] ?? '';
    const flags = nodeFlags.join(' ');
    expect(heap(flags)).toBeGreaterThan(0);
    // The young generation too (issue 16: the default one took peak RSS over 200 MB), wherever the service starts.
    expect(young(flags)).toBeGreaterThan(0);
    for (const options of [dockerfile, deployment]) {
      expect(heap(options), options).toBe(heap(flags));
      expect(young(options), options).toBe(young(flags));
    }
    // One malloc arena (issue 25: ≈ 15 MB less resident memory under mixed load), wherever the service starts.
    expect(env['MALLOC_ARENA_MAX']).toBe('1');
    expect(await readFile(join(PROJECT_ROOT, 'Dockerfile'), 'utf8')).toMatch(/^\s+MALLOC_ARENA_MAX=1 \\$/m);
    expect(await readFile(join(PROJECT_ROOT, 'docker/k8s/base/deployment.yaml'), 'utf8')).toMatch(/name: MALLOC_ARENA_MAX\s+value: "1"/);
  });
});
