/**
 * The creation-ordered index of keys that GraphQL's pages read (lib/store/paging.ts), so that a page of
 * 50 reads about 50 records however many keys there are. Each backend keeps it with its own primitive:
 * a directory of empty files on files (`drivers/_fs-order.ts`), a sorted set on Redis
 * (`drivers/_redis-order.ts`), a sorted array in memory (here).
 *
 * An entry is a name, `<creation ms + 10^14, 15 digits>-<id>`, so that plain string order is listing
 * order (oldest first, then by id: the order of `apiKeys` pages). The index may hold more than the keys
 * (an entry whose record is gone, or whose record says another creation time); it never holds fewer:
 *
 * - an entry is written before its record (`keys:<id>`), and removed only after the record is removed;
 *   a process that dies between the two leaves an extra entry, never a record without one;
 * - a reader keeps an entry only when `get` finds the key and its record's own entry is that entry, so an
 *   extra entry is skipped and a key is never returned twice.
 */
import { createStorage, type Driver, type Storage } from "unstorage";
import memoryDriver from "unstorage/drivers/memory";
import { isKeyId } from "../core/input.ts";

/** The index as the store reads it: entry names after `after` (or from the start), a chunk at a time, in order. */
export type KeyOrder = (after: string | undefined, size: number) => AsyncIterable<string[]>;

/** What a backend does when a record is written or removed (each may be called for an entry that is there or gone). */
export interface OrderHooks {
  add(name: string): Promise<void>;
  remove(name: string): Promise<void>;
}

const OFFSET = 1e14; // years 0000 to 9999 (and far beyond) all give 15 digits
const NAME = /^\d{15}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The entry of a key created at `ms` with this id. @example orderName(0, id) // "100000000000000-<id>" */
export const orderName = (ms: number, id: string): string =>
  `${String(Math.min(Math.max(Math.trunc(ms), -OFFSET), 9 * OFFSET - 1) + OFFSET).padStart(15, "0")}-${id.toLowerCase()}`;

/** True for a string that is an entry's name (anything else in the index's place is not the store's). */
export const isOrderName = (name: string): boolean => NAME.test(name);

/** The id an entry names. */
export const idOfOrder = (name: string): string => name.slice(16);

/** The key id of a storage key `keys:<id>`, or undefined for any other storage key. */
export const recordId = (key: string): string | undefined => {
  const id = key.startsWith("keys:") ? key.slice(5) : "";
  return isKeyId(id) ? id : undefined;
};

/** The entry of a stored record (its JSON text), or undefined when it is not one (no creation time). */
export function orderOfRecord(id: string, value: unknown): string | undefined {
  try {
    const record = typeof value === "string" ? JSON.parse(value) : value;
    const ms = Date.parse(record?.createdAt);
    return Number.isNaN(ms) ? undefined : orderName(ms, id);
  } catch {
    return undefined;
  }
}

/** The position in sorted `names` of the first one after `after`. */
export function firstAfter(names: readonly string[], after: string | undefined): number {
  if (after === undefined) return 0;
  let [lo, hi] = [0, names.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (names[mid] <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `driver` keeping the index through `hooks`: an entry added before a record is written, removed after it
 * is removed. Every write of a record (create, rotate, import, rename, last use) goes through setItem.
 */
export function withKeyOrder<D extends Driver>(driver: D, hooks: OrderHooks): D {
  return {
    ...driver,
    setItem: async (key: string, value: string, options: Record<string, unknown>) => {
      const id = recordId(key);
      const name = id && orderOfRecord(id, value);
      if (name) await hooks.add(name);
      return driver.setItem!(key, value, options);
    },
    removeItem: async (key: string, options: Record<string, unknown>) => {
      const id = recordId(key);
      const name = id && orderOfRecord(id, await driver.getItem(key, {}));
      await driver.removeItem!(key, options);
      if (name) await hooks.remove(name);
    },
  };
}

/** The in-memory index (for a store in memory): a sorted array, searched by bisection. */
export function createMemoryOrder(): OrderHooks & { order: KeyOrder } {
  const names: string[] = [];
  return {
    add: async (name) => {
      const at = firstAfter(names, name);
      if (names[at - 1] !== name) names.splice(at, 0, name);
    },
    remove: async (name) => {
      const at = firstAfter(names, name) - 1;
      if (names[at] === name) names.splice(at, 1);
    },
    order: async function* (after, size) {
      // By position from the last name given out, so removals meanwhile neither skip nor repeat one.
      for (let last = after; ;) {
        const at = firstAfter(names, last);
        const chunk = names.slice(at, at + size);
        if (!chunk.length) return;
        yield chunk;
        last = chunk[chunk.length - 1];
      }
    },
  };
}

/** A store in memory with its index: what `createKeyStore()` uses when given no storage. */
export function createOrderedMemory(): { storage: Storage; order: KeyOrder } {
  const index = createMemoryOrder();
  return { storage: createStorage({ driver: withKeyOrder(memoryDriver(), index) }), order: index.order };
}
