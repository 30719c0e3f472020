/** A bounded least-recently-used map: a `Map` keeps insertion order, so the first key is the oldest. */
export interface Lru<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): void;
  delete(key: K): void;
  readonly size: number;
}

/** @example const cache = createLru<string, number>(2); cache.set("a", 1); cache.get("a") // 1 */
export function createLru<K, V>(max: number): Lru<K, V> {
  const map = new Map<K, V>();
  return {
    get(key) {
      const value = map.get(key);
      // Recency only matters once eviction is near: below half full, skip the delete-and-set, which
      // is a noticeable share of a cached request on the service's hot path.
      if (value !== undefined && map.size > max / 2) {
        map.delete(key);
        map.set(key, value);
      }
      return value;
    },
    set(key, value) {
      map.delete(key);
      map.set(key, value);
      if (map.size > max) map.delete(map.keys().next().value as K);
    },
    delete(key) {
      map.delete(key);
    },
    get size() {
      return map.size;
    },
  };
}
