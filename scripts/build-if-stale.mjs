// Runs `tsc` when any TypeScript source (the client package's included) or either tsconfig
// is newer than the compiled entry point, and the viewer build when ui/ is newer than
// dist/ui, so `npm start` on a fresh clone (or after a pull) always runs and serves current
// code.
//
// It emits the JavaScript only (`--noCheck --declaration false`): byte for byte what the full
// build emits, in about a third of its CPU, since with isolatedModules no file's JavaScript
// depends on types. Checking the types is `npm run typecheck`'s (and `npm test`'s) business;
// `npm run build` checks them and writes the declaration files as well.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// packages/client/src is compiled into dist too: src/client.ts re-exports it; so are the
// viewer's pure modules the CLI shares (ui/src/compare.ts, text-diff.ts, model.ts).
const roots = ['src', 'routes', 'schemas', 'bench', 'packages/client/src', 'ui/src'];
const entry = 'dist/src/server.js';

function newestMtime(dir, extensions = ['.ts']) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path, extensions));
    else if (extensions.some((extension) => entry.name.endsWith(extension))) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

let built = 0;
try {
  built = statSync(entry).mtimeMs;
} catch {
  built = 0;
}
const sources = Math.max(...roots.map((root) => newestMtime(root)), ...['tsconfig.json', 'tsconfig.build.json'].map((file) => statSync(file).mtimeMs));
// Said on stderr, so `npm start` on a fresh clone does not build in silence (stdout may be a pipe a test reads).
if (sources > built) {
  process.stderr.write(`building dist/ (${built === 0 ? 'first build' : 'TypeScript sources changed'}; a few seconds)…\n`);
  // This project's TypeScript, run by this node as build-ui.mjs runs it: `npx` would cost a second of its own.
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--noCheck', '--declaration', 'false'], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

let viewerBuilt = 0;
try {
  viewerBuilt = statSync('dist/ui/index.html').mtimeMs;
} catch {
  viewerBuilt = 0;
}
if (newestMtime('ui', ['.ts', '.html', '.css', '.json']) > viewerBuilt) {
  process.stderr.write('building the trace viewer into dist/ui…\n');
  const result = spawnSync(process.execPath, ['scripts/build-ui.mjs'], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
