/**
 * The layout tells the architecture: arrows only point inward. Each layer's
 * imports are checked here, so a shortcut across layers fails a test, not a review.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve, dirname } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/config.js';

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(join(PROJECT_ROOT, dir), { withFileTypes: true });
  const nested = await Promise.all(entries.map((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)])));
  return nested.flat().filter((path) => path.endsWith('.ts'));
}

/** Each import of a layer's files: a package name, or a path relative to the project root. */
async function imports(dir: string): Promise<Array<{ file: string; target: string }>> {
  const found: Array<{ file: string; target: string }> = [];
  for (const file of await files(dir)) {
    // Multi-line imports and re-exports count too.
    for (const match of (await readFile(join(PROJECT_ROOT, file), 'utf8')).matchAll(/^(?:import|export)\b[^;']*? from '([^']+)';$/gm)) {
      const specifier = match[1]!;
      const target = specifier.startsWith('.') ? relative(PROJECT_ROOT, resolve(PROJECT_ROOT, dirname(file), specifier)) : specifier;
      found.push({ file, target });
    }
  }
  return found;
}

const outside = (list: Array<{ file: string; target: string }>, allowed: (target: string) => boolean) =>
  list.filter(({ target }) => !allowed(target)).map(({ file, target }) => `${file} → ${target}`);

describe('layout', () => {
  it('src/core imports only itself, node:crypto and the error catalogue', async () => {
    expect(outside(await imports('src/core'), (target) => target.startsWith('src/core/') || target === 'node:crypto' || target === 'src/errors.js')).toEqual([]);
  });

  it('regression: schemas/ import only zod, src/core and each other (the compile schema took its zone rule from src/config.ts)', async () => {
    expect(outside(await imports('schemas'), (target) => target === 'zod' || target.startsWith('src/core/') || target.startsWith('schemas/'))).toEqual([]);
  });

  it('src/sources reads through src/io and compiles with src/core: no Fastify, no file system', async () => {
    // Nothing of the trace store: a shared result holds nothing of its consumers.
    const allowed = (target: string) => ['src/core/', 'src/io/brain', 'src/sources/', 'schemas/', 'src/errors.js'].some((prefix) => target.startsWith(prefix));
    expect(outside(await imports('src/sources'), allowed)).toEqual([]);
  });

  it('regression: the client package runs on undici and Node alone (its types are generated, so neither zod nor schemas/ is imported)', async () => {
    const found = await imports('packages/client/src');
    expect(found.length).toBeGreaterThan(0);
    // Node's own modules are the runtime it ships for (sha256 of what a call was told, the last-known-good file).
    expect(outside(found, (target) => target === 'undici' || target.startsWith('node:') || target.startsWith('packages/client/src/'))).toEqual([]);
  });

  it('the providers’ SDKs are dev dependencies that type-check tests only: nothing that ships imports them', async () => {
    const sdk = (target: string) => target === 'openai' || target.startsWith('openai/') || target.startsWith('@google/genai');
    for (const dir of ['src', 'routes', 'schemas', 'bench', 'packages/client/src']) {
      expect((await imports(dir)).filter(({ target }) => sdk(target)).map(({ file, target }) => `${file} → ${target}`)).toEqual([]);
    }
    const manifest = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    expect(Object.keys(manifest.dependencies ?? {}).filter(sdk)).toEqual([]);
    expect(Object.keys(manifest.devDependencies ?? {}).filter(sdk).sort()).toEqual(['@google/genai', 'openai']);
  });

  it('routes/ map HTTP to compile jobs: no route touches the file system itself but the viewer’s static files', async () => {
    const direct = (await imports('routes')).filter(({ file, target }) => file !== 'routes/ui.ts' && /^node:fs/.test(target));
    expect(direct.map(({ file, target }) => `${file} → ${target}`)).toEqual([]);
  });
});

/** Every import edge between the service's own files (type-only imports included), by path relative to the project root. */
async function importGraph(dirs: string[]): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const dir of dirs) {
    for (const file of await files(dir)) {
      const { importedFiles } = ts.preProcessFile(await readFile(join(PROJECT_ROOT, file), 'utf8'), true, false);
      const targets = importedFiles
        .map(({ fileName }) => fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => relative(PROJECT_ROOT, resolve(PROJECT_ROOT, dirname(file), name)).replace(/\.js$/, '.ts'));
      graph.set(file, targets);
    }
  }
  return graph;
}

/** The import cycles of `graph`: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('imports', () => {
  it('regression: no import circle among src/, routes/ and schemas/, type-only imports included (src/caches.ts and src/io/brain.ts imported each other)', async () => {
    expect(cycles(await importGraph(['src', 'routes', 'schemas']))).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
