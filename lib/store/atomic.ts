/**
 * The atomic operations the key store needs beyond unstorage's get/set/remove, as an interface each
 * backend implements with its own primitives, and the in-process implementation (memory, tests).
 * The store's invariants, and why these operations suffice, are written at the top of store.ts.
 */
import type { Storage } from "unstorage";
import type { KeyOrder } from "./_key-order.ts";

/**
 * The few operations unstorage has no atomic form of. Each backend provides them with its own
 * primitive (link/rename on files, SET NX / SET GET / GETDEL on Redis, a mutex in memory).
 */
export interface AtomicIndex {
  /** Sets `key` to `value` only if it is absent; true when this call set it. */
  claim(key: string, value: string): Promise<boolean>;
  /** Sets `key` to `value` and returns the value it replaced, if any. */
  swap(key: string, value: string): Promise<string | null>;
  /**
   * Optional: sets `key` to `value` only while it holds `expected` (compare and swap); true when this call
   * set it. Overwrites use it so that the key their audit event names is the key they replace. Without
   * it the store falls back to `swap`, and an event may then name another key than the one replaced.
   */
  swapIf?(key: string, expected: string, value: string): Promise<boolean>;
  /**
   * Optional: claims every `[key, value]` of `entries` in one atomic step, only if none of the keys is there;
   * null when it did, else the position of a key that was there (then nothing is set). An import commits its
   * keys with it, so no reader ever sees part of one. Without it the store claims them one at a time, under
   * the import's journal.
   */
  claimAll?(entries: readonly (readonly [string, string])[]): Promise<number | null>;
  /** Removes `key` and returns its value; of concurrent callers exactly one gets it. */
  take(key: string): Promise<string | null>;
  /** Removes `key` only if it holds `value` (compare and delete); true when this call removed it. */
  takeIf(key: string, value: string): Promise<boolean>;
  /**
   * Optional: gives `key` a fresh random value, in place where the backend can, so that it needs no
   * new space (the fs driver rewrites the file's bytes: a revocation works on a full disk).
   */
  bump?(key: string): Promise<void>;
  /**
   * Runs `fn` holding a lock named by `key`, so that the multi-step changes of one key (update, delete,
   * the clean-up after an overwrite) never interleave. A lock whose holder died is broken after a while.
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Optional: the keys directly under `prefix`, `size` at a time, read as the caller goes, so listing
   * 100,000 keys never holds all their names (the fs driver reads its directory). Without it the store
   * takes unstorage's `getKeys`.
   */
  scan?(prefix: string, size: number): AsyncIterable<string[]>;
  /** True when at least one key lies under `prefix` (without listing them all). */
  hasAny(prefix: string): Promise<boolean>;
  /**
   * Optional: a token that differs whenever `key` has been rewritten, cheaper than reading it (the
   * fs driver answers from one stat). Without it the store reads the entry itself.
   */
  version?(key: string): string | Promise<string>;
  /** Optional: the creation-ordered index of keys (`_key-order.ts`) that pages read. Without it a first page reads every key. */
  order?: KeyOrder;
}

/** Atomic operations for a store used by one process only (memory, tests): a promise-chain mutex. */
export function createLocalAtomicIndex(storage: Storage): AtomicIndex {
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
  };
  const read = async (key: string) => (await storage.getItem<string>(key)) ?? null;
  const held = new Map<string, Promise<void>>(); // per-key queues for `exclusive`, apart from `serial`
  return {
    claim: (key, value) =>
      serial(async () => {
        if (await storage.hasItem(key)) return false;
        await storage.setItem(key, value);
        return true;
      }),
    claimAll: (entries) =>
      serial(async () => {
        for (const [at, [key]] of entries.entries()) if (await storage.hasItem(key)) return at;
        for (const [key, value] of entries) await storage.setItem(key, value);
        return null;
      }),
    swap: (key, value) =>
      serial(async () => {
        const previous = await read(key);
        await storage.setItem(key, value);
        return previous;
      }),
    swapIf: (key, expected, value) =>
      serial(async () => {
        if ((await read(key)) !== expected) return false;
        await storage.setItem(key, value);
        return true;
      }),
    take: (key) =>
      serial(async () => {
        const previous = await read(key);
        if (previous !== null) await storage.removeItem(key);
        return previous;
      }),
    takeIf: (key, value) =>
      serial(async () => {
        if ((await read(key)) !== value) return false;
        await storage.removeItem(key);
        return true;
      }),
    exclusive: (key, fn) => {
      const run = (held.get(key) ?? Promise.resolve()).then(fn, fn);
      const settled = run.then(() => {}, () => {});
      held.set(key, settled);
      void settled.then(() => held.get(key) === settled && held.delete(key));
      return run;
    },
    hasAny: async (prefix) => (await storage.getKeys(prefix)).length > 0,
  };
}
