// Builds the trace viewer into dist/ui/: ui/src/*.ts compiled by tsc to ES modules, plus
// ui/index.html and ui/styles.css. Files are staged and then renamed into place, so a
// running server (or a test building in parallel) never reads a half-written file.
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'ui');
const STATIC_FILES = ['index.html', 'styles.css'];

await mkdir(out, { recursive: true });
const staging = await mkdtemp(join(root, 'dist', '.ui-build-'));
try {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'ui', 'tsconfig.json'), '--outDir', staging], { stdio: 'inherit' });
  if (result.status !== 0) {
    process.exitCode = result.status ?? 1;
  } else {
    for (const file of STATIC_FILES) await copyFile(join(root, 'ui', file), join(staging, file));
    for (const file of await readdir(staging)) await rename(join(staging, file), join(out, file));
  }
} finally {
  await rm(staging, { recursive: true, force: true });
}
