import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { PROJECT_ROOT } from '../../src/config.js';
import { compile, createCompiler } from '../../src/core/index.js';
import { chatTurn, queuedTask, voicePersona } from './golden/cases.js';

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(entries.map((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : [join(dir, entry.name)])));
  return nested.flat().filter((path) => path.endsWith('.ts'));
}

/**
 * Module-level state in `dirs`: a mutable binding, a collection created at load that is not
 * a read-only table of constants, or a factory (`createX(...)`, a compiled serializer) called
 * at load, whose state every app built in the process would then share.
 */
async function moduleState(dirs: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const dir of dirs) {
    for (const path of await sources(join(PROJECT_ROOT, dir))) {
      for (const [index, line] of (await readFile(path, 'utf8')).split('\n').entries()) {
        const where = `${relative(PROJECT_ROOT, path)}:${index + 1}`;
        if (/^(export )?(let|var) /.test(line)) found.push(`${where}: ${line}`);
        const collection = /^(?:export )?const \w+(: [^=]+)? = new (Map|WeakMap|Set|WeakSet|LRUCache)\b/.exec(line);
        if (collection && !/^: Readonly(Set|Map)</.test(collection[1] ?? '')) found.push(`${where}: ${line}`);
        if (/^(?:export )?const \w+(: [^=]+)? = (create[A-Z]\w*|fastJson)\(/.test(line)) found.push(`${where}: ${line}`);
      }
    }
  }
  return found;
}

describe('src/core is pure and stateless', () => {
  it('keeps no module-level state: no mutable binding, and every collection created at load is a read-only table of constants', async () => {
    expect(await moduleState(['src/core'])).toEqual([]);
  });

  it('regression: routes/ and src/http/ keep no module-level state either (the answer encoders were created at load in routes/, shared by every app)', async () => {
    expect(await moduleState(['routes', 'src/http'])).toEqual([]);
  });

  it('a compiler with a memo gives byte for byte what compile gives without one, however often and in whatever order it is asked', () => {
    const cases = [chatTurn, queuedTask, voicePersona];
    const memoised = createCompiler({ memo: createCaches().compiler });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 12 }), (calls) => {
        for (const [which, minute] of calls) {
          const input = cases[which]!();
          if (input.clock) input.clock = { ...input.clock, now: new Date(input.clock.now.getTime() + minute * 60_000) };
          expect(memoised.compile(input)).toEqual(compile(input));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('two compilers share nothing: each remembers only in the memo it was given', () => {
    const first = createCaches();
    const second = createCaches();
    createCompiler({ memo: first.compiler }).compile(chatTurn());
    expect(first.stats().find((area) => area.area === 'compiler.blocks')!.entries).toBeGreaterThan(0);
    expect(second.stats().every((area) => area.entries === 0)).toBe(true);
  });
});
