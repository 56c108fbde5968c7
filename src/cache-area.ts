/**
 * A named cache area: a least-recently-used cache bounded by bytes (`lru-cache`), each value
 * weighed when it is stored, with its own counts. The app's cache set (`src/caches.ts`) is
 * made of these; a reader or store built without one (a test, the CLI) makes its own.
 */
import { LRUCache } from 'lru-cache';
import type { Memo } from './core/memo.js';

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

