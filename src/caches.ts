/**
 * The service's one cache set: every value the service remembers between requests lives in
 * a named area here, each a least-recently-used cache bounded by bytes (`lru-cache`), so the
 * total is bounded, visible (`stats()`) and can be dropped (`clear()`). `buildApp` creates
 * it and hands each area to its one user: the brain reader, the compiler (`src/core` keeps
 * no state of its own; its token counts included), the persona and worker sources, and delivery. What is remembered
 * never changes an answer, only its cost.
 */
import { LRUCache } from 'lru-cache';
import type { CompilerMemo } from './core/compile.js';
import type { Memo } from './core/memo.js';
import type { BrainCache } from './io/brain.js';

/** A memo that can also forget one key (a file found changed) or everything. */
export interface CacheArea<K, V> extends Memo<K, V> {
  readonly name: string;
  delete(key: K): void;
  clear(): void;
  stats(): CacheStats;
}

export interface CacheStats {
  area: string;
  entries: number;
  /** Estimated bytes held: each value is weighed when it is stored. */
  bytes: number;
  maxBytes: number;
  /** Lookups that found a value, and lookups that found none (the value was then derived afresh), since the area was created. */
  hits: number;
  misses: number;
}

/** A bounded LRU area: an entry heavier than the whole area is simply not kept. */
export function createCacheArea<K extends object | string | number, V extends object | string | number | boolean>(
  name: string,
  maxBytes: number,
): CacheArea<K, V> {
  const lru = new LRUCache<K, V>({ maxSize: Math.max(1, Math.floor(maxBytes)) });
  let hits = 0;
  let misses = 0;
  return {
    name,
    get(key) {
      const value = lru.get(key);
      if (value === undefined) misses++;
      else hits++;
      return value;
    },
    set(key, value, bytes) {
      lru.set(key, value, { size: Math.max(1, Math.ceil(bytes)) });
      return value;
    },
    delete: (key) => void lru.delete(key),
    clear: () => lru.clear(),
    stats: () => ({ area: name, entries: lru.size, bytes: lru.calculatedSize, maxBytes: lru.maxSize, hits, misses }),
  };
}

/**
 * An area whose entries live exactly as long as their key objects (a WeakMap), for what is
 * derived from a value another area already bounds: the encoded answer of a compile result
 * lives and dies with the result, so it never outlives it in the heap. Entries and bytes are
 * counted as they are set and as their keys are collected; it has no bound of its own.
 */
export function createWeakArea<K extends object, V extends object>(name: string): CacheArea<K, V> {
  let map = new WeakMap<K, V>();
  let held = new WeakMap<K, { generation: number; bytes: number }>();
  let generation = 0;
  let entries = 0;
  let bytes = 0;
  let hits = 0;
  let misses = 0;
  const collected = new FinalizationRegistry<{ generation: number; bytes: number }>((entry) => {
    if (entry.generation !== generation) return;
    entries--;
    bytes -= entry.bytes;
  });
  return {
    name,
    get(key) {
      const value = map.get(key);
      if (value === undefined) misses++;
      else hits++;
      return value;
    },
    set(key, value, weight) {
      const size = Math.max(1, Math.ceil(weight));
      const known = held.get(key);
      if (known === undefined) {
        const entry = { generation, bytes: size };
        held.set(key, entry);
        collected.register(key, entry, entry);
        entries++;
        bytes += size;
      } else {
        bytes += size - known.bytes;
        known.bytes = size;
      }
      map.set(key, value);
      return value;
    },
    delete(key) {
      const known = held.get(key);
      if (known === undefined) return;
      collected.unregister(known);
      held.delete(key);
      map.delete(key);
      entries--;
      bytes -= known.bytes;
    },
    clear() {
      map = new WeakMap();
      held = new WeakMap();
      generation++;
      entries = 0;
      bytes = 0;
    },
    stats: () => ({ area: name, entries, bytes, maxBytes: 0, hits, misses }),
  };
}

/** Default bound of the whole set: well inside the 144 MB heap `npm start` and the image allow. */
export const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Each area's share of the bound. The brain's texts are the largest (the bench brain holds
 * under 9 MB of text outside people/ and companies/); compiled results are kept per persona
 * for its latest minutes, their encoded answers with them (`answers` is weak: it lives in
 * the compiled results' share).
 */
export const CACHE_SHARES = Object.freeze({
  'brain.files': 0.36,
  'brain.listings': 0.03,
  'compiler.blocks': 0.09,
  'compiler.tokens': 0.01,
  'compiler.prefixes': 0.03,
  'compiler.parts': 0.04,
  'compiler.time': 0.01,
  'sources.parsed': 0.14,
  'sources.compiled': 0.26,
  'answers.pieces': 0.03,
});

export type CacheAreaName = keyof typeof CACHE_SHARES;

/** The areas the persona and worker sources keep their parsed and compiled values in (src/sources). */
export interface SourceCaches {
  /** Values derived from brain files and listings (parsed policies, memory-note indexes, live contexts, topic excerpts, ...), keyed by what they depend on. */
  readonly parsed: CacheArea<string | object, object>;
  /** Compile results handed out again to equal requests (a persona within one minute). */
  readonly compiled: CacheArea<string, object>;
}

export interface Caches {
  readonly brain: BrainCache;
  readonly compiler: CompilerMemo;
  readonly sources: SourceCaches;
  /** Encoded answers (JSON parts and ETags) per shared compile result (src/http/deliver.ts), for as long as the result is kept. */
  readonly answers: CacheArea<object, object>;
  /** The escaped JSON of the pieces answers are joined from (prompt segments, long strings), by their text (src/http/answer.ts). */
  readonly pieces: CacheArea<string, Buffer>;
  /** Every area with its entries and estimated bytes. */
  stats(): CacheStats[];
  /** Forgets everything (answers stay correct; the next requests pay to fill it again). */
  clear(): void;
}

export interface CacheOptions {
  /** Bound of the whole set, in bytes (default `DEFAULT_CACHE_BYTES`). */
  maxBytes?: number;
}

/** Creates the cache set, its areas sized by `CACHE_SHARES` of `maxBytes`. */
export function createCaches(options: CacheOptions = {}): Caches {
  const maxBytes = options.maxBytes ?? DEFAULT_CACHE_BYTES;
  const areas: Array<CacheArea<never, never>> = [];
  const area = <K extends object | string | number, V extends object | string | number | boolean>(name: string, share: number): CacheArea<K, V> => {
    const created = createCacheArea<K, V>(name, maxBytes * share);
    areas.push(created as unknown as CacheArea<never, never>);
    return created;
  };
  const weak = <K extends object, V extends object>(name: string): CacheArea<K, V> => {
    const created = createWeakArea<K, V>(name);
    areas.push(created as unknown as CacheArea<never, never>);
    return created;
  };
  const time = CACHE_SHARES['compiler.time'];
  return {
    brain: {
      files: area('brain.files', CACHE_SHARES['brain.files']),
      listings: area('brain.listings', CACHE_SHARES['brain.listings']),
    },
    compiler: {
      blocks: area('compiler.blocks', CACHE_SHARES['compiler.blocks']),
      prefixes: area('compiler.prefixes', CACHE_SHARES['compiler.prefixes']),
      parts: area('compiler.parts', CACHE_SHARES['compiler.parts']),
      routeKeys: area('compiler.routeKeys', CACHE_SHARES['compiler.time'] / 8),
      clocks: area('compiler.time.clocks', CACHE_SHARES['compiler.time'] / 8),
      tokens: area('compiler.tokens', (CACHE_SHARES['compiler.tokens'] * 3) / 4),
      toolTokens: area('compiler.toolTokens', CACHE_SHARES['compiler.tokens'] / 4),
      time: {
        formatters: area('compiler.time.formatters', time / 4),
        minutes: area('compiler.time.minutes', time / 4),
        hours: area('compiler.time.hours', time / 8),
        zones: area('compiler.time.zones', time / 8),
      },
    },
    sources: {
      parsed: area('sources.parsed', CACHE_SHARES['sources.parsed']),
      compiled: area('sources.compiled', CACHE_SHARES['sources.compiled']),
    },
    answers: weak('answers'),
    pieces: area('answers.pieces', CACHE_SHARES['answers.pieces']),
    stats: () => areas.map((each) => each.stats()),
    clear: () => {
      for (const each of areas) each.clear();
    },
  };
}
