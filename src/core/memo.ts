/**
 * A bounded memo for pure functions: when it grows past its entry or weight limit it
 * starts over. Results never depend on whether an entry was cached, only speed does.
 */
export class BoundedMemo<K, V> {
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
