/**
 * The service's one cache set: every value the service remembers between requests lives in
 * a named area here, each a least-recently-used cache bounded by bytes (`src/cache-area.ts`),
 * so the total is bounded, visible (`stats()`) and can be dropped (`clear()`). `buildApp`
 * creates it and hands each area to its one user: the brain reader, the compiler (`src/core`
 * keeps no state of its own; its token counts included), the persona and worker sources,
 * and the trace store. Each area is declared once, by its user, in a table of its areas
 * (`CACHE_AREAS` lists the tables): its name, the key and value it holds, and its share of
 * the bound. What is remembered never changes an answer, only its cost.
 */
import { createAreas, DEFAULT_CACHE_BYTES, type CacheArea, type CacheStats } from './cache-area.js';
import { COMPILER_AREAS, type CompilerMemo } from './core/compile/memo.js';
import type { AreaKey, Areas, AreaValue } from './core/area.js';
import { TIME_AREAS } from './core/time.js';
import { BRAIN_AREAS, type BrainCache } from './io/brain/types.js';
import { TRACE_STORE_AREAS, type TraceStoreMemo } from './io/trace/files/store.js';
import { SOURCE_AREAS, type SourceMemo } from './sources/memo.js';

export type { CacheArea, CacheStats } from './cache-area.js';
export { createCacheArea } from './cache-area.js';

/**
 * Every area of the set, by its user's table: the brain reader's, the compiler's, the
 * clock's (one set, which the compiler and the sources share), the sources' and the trace
 * store's. Their shares add up to at most 1.
 */
export const CACHE_AREAS = {
  brain: BRAIN_AREAS,
  compiler: COMPILER_AREAS,
  time: TIME_AREAS,
  sources: SOURCE_AREAS,
  trace: TRACE_STORE_AREAS,
} satisfies Record<string, Areas>;

export interface Caches {
  readonly brain: BrainCache;
  readonly compiler: CompilerMemo;
  readonly sources: SourceMemo;
  readonly trace: TraceStoreMemo;
  /** Every area with its entries and estimated bytes. */
  stats(): CacheStats[];
  /** Forgets everything (answers stay correct; the next requests pay to fill it again). */
  clear(): void;
}

export interface CacheOptions {
  /** Bound of the whole set, in bytes (default `DEFAULT_CACHE_BYTES`). */
  maxBytes?: number;
  /**
   * Freeze every compiled result the sources share (tests turn it on), so code that mutates
   * one throws instead of changing what later requests are served.
   */
  freezeShared?: boolean;
}

/** Creates the cache set, each area its share of `maxBytes`. */
export function createCaches(options: CacheOptions = {}): Caches {
  const maxBytes = options.maxBytes ?? DEFAULT_CACHE_BYTES;
  const areas: Array<CacheArea<AreaKey, AreaValue>> = [];
  const create = <T extends Areas>(table: T) => createAreas(table, maxBytes, (made) => areas.push(made));
  const time = create(CACHE_AREAS.time);
  return {
    brain: create(CACHE_AREAS.brain),
    compiler: { ...create(CACHE_AREAS.compiler), time },
    sources: { ...create(CACHE_AREAS.sources), time, freezeShared: options.freezeShared === true },
    trace: create(CACHE_AREAS.trace),
    stats: () => areas.map((each) => each.stats()),
    clear: () => {
      for (const each of areas) each.clear();
    },
  };
}
