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
 * The value `memo` holds under `key`, else `derive()` kept there with its weight. The key
 * names everything the value depends on; the memo's type is the value's, so nothing read
 * back is cast.
 */
export function remembered<K, V>(memo: Memo<K, V>, key: K, derive: () => V, weigh: (value: V) => number): V {
  const known = memo.get(key);
  if (known !== undefined) return known;
  const value = derive();
  return memo.set(key, value, weigh(value));
}
