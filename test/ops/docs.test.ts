/**
 * The docs stand alone inside the repository (issue 26): no link or reference leaves it — no
 * `../shared/…`, no spec section by number — and every relative link lands on a file that exists here (and
 * on a heading that exists, for a `#fragment`).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';

/** A citation of the product spec or the style guide, which the repository does not hold (spelled in parts, so this file is not one). */
const CITES = new RegExp([['SPEC', '§'].join(' '), ['SPEC', 'md'].join('\\.'), ['STYLE', 'md'].join('\\.')].join('|'));

const DOCS = ['README.md', 'SECURITY.md', 'packages/client/README.md', 'openapi.yaml'];

async function docFiles(): Promise<string[]> {
  const docs = (await readdir(join(PROJECT_ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
  return [...DOCS, ...docs];
}

/** Directories that hold no file of the project's own: installs, builds, git, generated brains and bench output, test runs' files. */
const NOT_OURS = new Set(['node_modules', 'dist', '.git', 'brain', 'out', 'coverage', 'var']);

/** Every file under `dir` (relative to the project): code, docs, manifests, scripts, styles — brains and generated output left out. */
async function projectFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(join(PROJECT_ROOT, dir), { withFileTypes: true })) {
    const path = dir === '.' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory() && !NOT_OURS.has(entry.name) && !entry.name.startsWith('brain.tmp-')) files.push(...(await projectFiles(path)));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to dashes. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

describe('the docs stand alone inside the repository', () => {
  it('refer to nothing outside it: no ../shared, no SPEC sections', async () => {
    const found: string[] = [];
    for (const file of await docFiles()) {
      const lines = (await readFile(join(PROJECT_ROOT, file), 'utf8')).split('\n');
      lines.forEach((line, i) => {
        if (/\.\.\/shared/.test(line) || CITES.test(line)) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('nor does any other file: no source, test, bench, script, manifest or config cites the spec or the style guide by section', async () => {
    const found: string[] = [];
    const files = await projectFiles('.');
    // The walk reaches every corner (a guard that the exclusions above did not leave out a whole layer).
    for (const expected of ['src/app.ts', 'bench/run.ts', 'bench/lib/knobs.ts', 'docs/architecture.md', 'Dockerfile', 'docker/smoke.sh', 'ui/index.html']) expect(files).toContain(expected);
    for (const file of files) {
      if (file === 'test/ops/docs.test.ts') continue;
      const text = await readFile(join(PROJECT_ROOT, file), 'utf8');
      if (text.includes('\0')) continue;
      text.split('\n').forEach((line, i) => {
        if (CITES.test(line)) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('link only to files and headings that exist in the repository', async () => {
    const broken: string[] = [];
    for (const file of (await docFiles()).filter((name) => name.endsWith('.md'))) {
      const text = await readFile(join(PROJECT_ROOT, file), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, fragment] = target!.split('#') as [string, string | undefined];
        const resolved = path === '' ? join(PROJECT_ROOT, file) : resolve(PROJECT_ROOT, dirname(file), path);
        if (relative(PROJECT_ROOT, resolved).startsWith('..')) {
          broken.push(`${file}: ${target} leaves the repository`);
          continue;
        }
        if (!(await stat(resolved).catch(() => null))) {
          broken.push(`${file}: ${target} does not exist`);
          continue;
        }
        if (fragment !== undefined && resolved.endsWith('.md')) {
          const headings = [...(await readFile(resolved, 'utf8')).matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchor(match[1]!));
          if (!headings.includes(fragment)) broken.push(`${file}: ${target} names no heading of ${relative(PROJECT_ROOT, resolved)}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
