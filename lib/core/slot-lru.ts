/**
 * A bounded least-recently-used table of slots, for many small records: each key held gets a slot (a small
 * integer) under which its owner keeps the key's data in typed arrays of its own, enlarged when `onGrow`
 * says. Per key it holds no object: a `Map` entry from the key to its slot, the key in an array, and its
 * place in the order of use as two Int32Array links, so a use or a removal is O(1) and allocates nothing.
 * The arrays start small and double up to `max` slots; when all are taken, a new key gets the slot of the
 * least recently used one.
 */
export interface SlotLru<K> {
  /** The slot of `key`, made the most recently used; -1 when it is not held. */
  find(key: K): number;
  /** Holds `key` (not held) in a slot and returns it, the most recently used; its data there is stale. */
  add(key: K): number;
  delete(key: K): void;
  readonly size: number;
}

const NONE = -1;

/** @example const table = createSlotLru<string>(1_000, (n) => (counts = grown(counts, n))); const slot = table.add("a"); counts[slot] = 1 */
export function createSlotLru<K>(max: number, onGrow: (capacity: number) => void): SlotLru<K> {
  const slots = new Map<K, number>();
  const keys: (K | undefined)[] = [];
  let capacity = Math.min(max, 1024);
  let older = new Int32Array(capacity);
  let newer = new Int32Array(capacity);
  let newest = NONE, oldest = NONE;
  let used = 0; // slots ever handed out: 0 to used - 1
  let free = NONE; // slots given back, linked through `older`
  onGrow(capacity);

  const unlink = (slot: number) => {
    const o = older[slot], n = newer[slot];
    if (o === NONE) oldest = n;
    else newer[o] = n;
    if (n === NONE) newest = o;
    else older[n] = o;
  };
  const link = (slot: number) => {
    older[slot] = newest;
    newer[slot] = NONE;
    if (newest === NONE) oldest = slot;
    else newer[newest] = slot;
    newest = slot;
  };
  const take = (): number => {
    if (free !== NONE) {
      const slot = free;
      free = older[slot];
      return slot;
    }
    if (used === capacity && capacity < max) {
      capacity = Math.min(max, capacity * 2);
      older = grown(older, capacity);
      newer = grown(newer, capacity);
      onGrow(capacity);
    }
    if (used < capacity) return used++;
    const slot = oldest; // full: the least recently used key goes
    unlink(slot);
    slots.delete(keys[slot]!);
    return slot;
  };

  return {
    find(key) {
      const slot = slots.get(key);
      if (slot === undefined) return NONE;
      if (slot !== newest) (unlink(slot), link(slot));
      return slot;
    },
    add(key) {
      const slot = take();
      slots.set(key, slot);
      keys[slot] = key;
      link(slot);
      return slot;
    },
    delete(key) {
      const slot = slots.get(key);
      if (slot === undefined) return;
      slots.delete(key);
      keys[slot] = undefined;
      unlink(slot);
      older[slot] = free;
      free = slot;
    },
    get size() {
      return slots.size;
    },
  };
}

/** A copy of `array` with room for `length` elements. */
export function grown<T extends Int32Array | Uint32Array | Uint8Array | Float64Array>(array: T, length: number): T {
  const copy = new (array.constructor as new (length: number) => T)(length);
  copy.set(array.subarray(0, Math.min(array.length, length)) as never);
  return copy;
}
