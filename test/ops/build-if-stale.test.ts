import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';
import { HEAVY_TEST_MS } from '../helpers/bounds.js';

const run = promisify(execFile);
const SCRIPT = join(PROJECT_ROOT, 'scripts', 'build-if-stale.mjs');
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A project shaped like this one, small enough for tsc to build in a moment: the server entry re-exports the client package, as src/client.ts does. */
async function project(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'cc-stale-'));
  dirs.push(root);
  const files: Record<string, string> = {
    'tsconfig.json': JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', rootDir: '.', outDir: 'dist', types: [], skipLibCheck: true },
    }),
    'tsconfig.build.json': JSON.stringify({ extends: './tsconfig.json', include: ['src/**/*.ts'] }),
    'src/server.ts': "export { version } from '../packages/client/src/index.js';\n",
    'packages/client/src/index.ts': "export const version = 'one';\n",
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  // The build finds this repository's TypeScript through it.
  await symlink(join(PROJECT_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

/** Seconds since the epoch, well in the past: every file gets an explicit date, so mtime granularity cannot decide the test. */
const BASE = Math.floor(Date.now() / 1000) - 1000;

async function dated(root: string, path: string, seconds: number, text?: string): Promise<void> {
  if (text !== undefined) await writeFile(join(root, path), text);
  await utimes(join(root, path), BASE + seconds, BASE + seconds);
}

const built = (root: string) => readFile(join(root, 'dist/packages/client/src/index.js'), 'utf8');
const startService = (root: string) => run(process.execPath, [SCRIPT], { cwd: root });

describe('scripts/build-if-stale.mjs (npm start builds first when the sources are newer)', () => {
  it('rebuilds when the client package sources, or tsconfig.build.json, changed since the last build', async () => {
    const root = await project();
    for (const path of ['tsconfig.json', 'tsconfig.build.json', 'src/server.ts', 'packages/client/src/index.ts']) await dated(root, path, 0);
    // Regression: `npm start` on a fresh clone was about 20 silent seconds; it says it is building, on stderr.
    const first = await startService(root);
    expect(first.stderr).toMatch(/^building dist\/ \(first build; a few seconds\)…\n/);
    expect(first.stdout).toBe('');
    expect(await built(root)).toContain("'one'");
    await dated(root, 'dist/src/server.js', 10);

    await dated(root, 'packages/client/src/index.ts', 20, "export const version = 'two';\n");
    await startService(root);
    expect(await built(root)).toContain("'two'");
    await dated(root, 'dist/src/server.js', 30);

    // Older than the build: left alone, and nothing said.
    await dated(root, 'packages/client/src/index.ts', 25, "export const version = 'three';\n");
    expect((await startService(root)).stderr).not.toContain('building dist/');
    expect(await built(root)).toContain("'two'");

    await dated(root, 'tsconfig.build.json', 40, JSON.stringify({ extends: './tsconfig.json', compilerOptions: { removeComments: true }, include: ['src/**/*.ts'] }));
    await startService(root);
    expect(await built(root)).toContain("'three'");
    await dated(root, 'dist/src/server.js', 50);

    // It emits the JavaScript without checking types (the typecheck's business) or writing declarations
    // (`npm run build` writes them): a type error does not keep the service from starting.
    await dated(root, 'packages/client/src/index.ts', 60, "export const version: number = 'four';\n");
    const unchecked = await startService(root);
    expect(unchecked.stderr).toMatch(/^building dist\/ \(TypeScript sources changed; a few seconds\)…\n$/);
    expect(await built(root)).toContain("'four'");
    await expect(readFile(join(root, 'dist/packages/client/src/index.d.ts'), 'utf8')).rejects.toThrow(/ENOENT/);
  }, HEAVY_TEST_MS);
});
