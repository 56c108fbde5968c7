import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Caches } from '../caches.js';
import { createCompiler, type Compiler } from '../core/compile.js';
import type { SourceMemo } from '../sources/job.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The one bounded cache set (src/caches.ts): every value kept between requests, visible and resettable. */
    caches: Caches;
    /** The compiler, remembering stable blocks and prefix hashes in `caches.compiler`. */
    compiler: Compiler;
    /** What the persona and worker sources remember, in `caches.sources`. */
    sourceMemo: SourceMemo;
  }
}

/** Hands the cache set `buildApp` created to the compiler and the sources. */
export const cachesPlugin = fp(
  async function cachesPlugin(app: FastifyInstance, options: { caches: Caches }) {
    const { caches } = options;
    app.decorate('caches', caches);
    app.decorate('compiler', createCompiler({ memo: caches.compiler }));
    app.decorate('sourceMemo', { ...caches.sources, time: caches.compiler.time });
    app.metrics.collectCaches(() => caches.stats());
  },
  { name: 'caches', dependencies: ['metrics'] },
);
