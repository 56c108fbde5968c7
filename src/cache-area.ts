/**
 * A named cache area: a least-recently-used cache bounded by bytes (`lru-cache`), each value
 * weighed when it is stored, with its own counts. Each area is declared once, in its user's
 * table (`area()` in `src/core/area.ts`); `createAreas` makes a table's areas. The app's
 * cache set (`src/caches.ts`) is made of these; a reader or store built without one (a
 * test, the CLI) makes its own, sized as the default set sizes them.
 */
import { LRUCache } from 'lru-cache';
import type { Area, AreaKey, Areas, AreaValue } from './core/area.js';
import type { Memo } from './core/memo.js';

/**
 * Default bound of the whole set, sized with the 112 MB heap `npm start` and the image allow:
 * the set full plus the rest of the live heap (≈ 40 MB: code, the tokenizer's ranks) leaves
 * room to collect in, and peak RSS under mixed distinct inputs stays under 200 MB
 * (docs/operations.md, "Memory"; it was 64 MB, and the peak climbed past 200).
 */
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;

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
export function createCacheArea<K extends AreaKey, V extends AreaValue>(
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

/** The areas a table declares: each slot a `CacheArea` of its area's key and value. */
export type AreasOf<T extends Areas> = { readonly [Slot in keyof T]: T[Slot] extends Area<infer K, infer V> ? CacheArea<K, V> : never };

/**
 * Makes the areas of `table`, each its share of `setBytes` (the bound of the set they are
 * part of), and hands each to `made` (the set's list, for its stats).
 */
export function createAreas<T extends Areas>(table: T, setBytes: number, made?: (area: CacheArea<AreaKey, AreaValue>) => void): AreasOf<T> {
  const slots = Object.entries(table).map(([slot, each]) => {
    const created = createCacheArea<AreaKey, AreaValue>(each.name, setBytes * each.share);
    made?.(created);
    return [slot, created] as const;
  });
  // Each slot is made from its own area's entry, so it holds that area's key and value, as `AreasOf` says; TypeScript cannot check an object built slot by slot against a mapped type, so it is asserted.
  return Object.fromEntries(slots) as AreasOf<T>;
}
