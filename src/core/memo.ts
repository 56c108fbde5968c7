/**
 * A cache the caller owns and bounds, handed to the core: `src/core` keeps no state of its
 * own, so a compile's result never depends on whether an entry was kept, only its speed
 * does. The service passes the areas of one byte-bounded cache set (`src/caches.ts`); a
 * caller that passes none gets `NO_MEMO`, which remembers nothing.
 */
export interface Memo<K, V> {
  get(key: K): V | undefined;
  /** Remembers `value`, about `bytes` in size (the bound of the caller's cache), and returns it. */
  set(key: K, value: V, bytes: number): V;
}

/** Remembers nothing: every call computes afresh. Frozen and stateless. */
export const NO_MEMO: Memo<unknown, unknown> = Object.freeze({
  get: () => undefined,
  set: (_key: unknown, value: unknown) => value,
});

/** `NO_MEMO`, typed for any key and value. */
export function noMemo<K, V>(): Memo<K, V> {
  return NO_MEMO as Memo<K, V>;
}

/**
 * A bounded memo for pure functions, for an owner that keeps its own (the trace store's
 * per-instance digest memo): when it grows past its entry or weight limit it starts over.
 * An instance is state; the core never creates one.
 */
export class BoundedMemo<K, V> implements Memo<K, V> {
  private readonly map = new Map<K, V>();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number = Number.POSITIVE_INFINITY,
  ) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  set(key: K, value: V, weight = 1): V {
    if (this.map.size >= this.maxEntries || this.weight + weight > this.maxWeight) {
      this.map.clear();
      this.weight = 0;
    }
    this.map.set(key, value);
    this.weight += weight;
    return value;
  }

  get size(): number {
    return this.map.size;
  }
}
