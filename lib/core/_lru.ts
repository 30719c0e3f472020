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

/**
 * A least-recently-used map bounded by entry count and by total weight (any unit, say estimated bytes).
 * An entry's weight may grow after it is set (`addWeight`): what is derived from it later counts too.
 * Whatever would pass either bound evicts the oldest entries, the newest one included if it alone is over.
 */
export interface WeightedLru<K, V> {
  get(key: K): V | undefined;
  /** True while `key` is held (no change of recency). */
  has(key: K): boolean;
  set(key: K, value: V, weight: number): void;
  /** Adds to a held entry's weight (nothing when it is not held), evicting as needed. */
  addWeight(key: K, weight: number): void;
  readonly size: number;
  /** The total weight held: never more than the bound. */
  readonly weight: number;
}

/**
 * @example const cache = createWeightedLru<string, string>(() => ({ entries: 100, weight: 1e6 }), (k) => console.log("out", k));
 * The bounds are read on every change, so that they may be lowered (tests).
 */
export function createWeightedLru<K, V>(
  bounds: () => { entries: number; weight: number },
  onEvict: (key: K, value: V) => void = () => {},
): WeightedLru<K, V> {
  const map = new Map<K, { value: V; weight: number }>();
  let total = 0;
  const evict = () => {
    const { entries, weight } = bounds();
    while (map.size > entries || (total > weight && map.size > 0)) {
      const [key, entry] = map.entries().next().value as [K, { value: V; weight: number }];
      map.delete(key);
      total -= entry.weight;
      onEvict(key, entry.value);
    }
  };
  return {
    get(key) {
      const entry = map.get(key);
      if (entry === undefined) return undefined;
      if (map.size > bounds().entries / 2) (map.delete(key), map.set(key, entry)); // see createLru
      return entry.value;
    },
    has: (key) => map.has(key),
    set(key, value, weight) {
      const old = map.get(key);
      if (old) (map.delete(key), (total -= old.weight));
      map.set(key, { value, weight });
      total += weight;
      evict();
    },
    addWeight(key, weight) {
      const entry = map.get(key);
      if (!entry) return;
      entry.weight += weight;
      total += weight;
      evict();
    },
    get size() {
      return map.size;
    },
    get weight() {
      return total;
    },
  };
}
