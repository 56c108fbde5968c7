import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Caches } from '../caches.js';
import { createCompiler, type Compiler } from '../core/compile.js';
import type { SourceMemo } from '../sources/memo.js';
import { createDeliveredResults, type DeliveredResults } from './delivered.js';
import { O200K_BASE } from '../tokenizer.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The one bounded cache set (src/caches.ts): every value kept between requests, visible and resettable. */
    caches: Caches;
    /** The compiler, counting the cache plan's tokens with o200k_base and remembering stable blocks, prefix hashes and token counts in `caches.compiler`. */
    compiler: Compiler;
    /** What the persona and worker sources remember, in `caches.sources`. */
    sourceMemo: SourceMemo;
    /** What delivery keeps of each shared result (ETags, HUD, answer bytes), while the result lives (`src/http/delivered.ts`). */
    delivered: DeliveredResults;
  }
}

/** Hands the cache set `buildApp` created to the compiler and the sources, and gives delivery its own keeping. */
export const cachesPlugin = fp(
  async function cachesPlugin(app: FastifyInstance, options: { caches: Caches }) {
    const { caches } = options;
    app.decorate('caches', caches);
    app.decorate('compiler', createCompiler({ memo: caches.compiler, tokenizer: O200K_BASE }));
    app.decorate('sourceMemo', caches.sources);
    app.decorate('delivered', createDeliveredResults());
    app.metrics.collectCaches(() => caches.stats());
  },
  { name: 'caches', dependencies: ['metrics'] },
);
