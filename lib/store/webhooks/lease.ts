/**
 * A lease per endpoint, so that of several servers on one store one delivers an endpoint's messages at a
 * time. Built on the store's atomic index (SET NX on Redis, link(2) on files, a mutex in memory): the
 * entry holds the holder and the instant the lease lapses; a holder renews it (compare and swap) while it
 * works, and anyone may take a lapsed one (compare and delete, then claim). A holder that dies (kill -9)
 * holds it at most `ttlMs` more.
 */
import type { AtomicIndex } from "../atomic.ts";

export interface Lease {
  /** True when `owner` holds the lease on `name` for `ttlMs` from now (taken, or renewed). */
  hold(name: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up, if `owner` holds it. */
  release(name: string, owner: string): Promise<void>;
}

const entry = (name: string) => `leases:${name}`;

export function createLease(atomic: AtomicIndex, read: (key: string) => Promise<unknown>, now: () => number = Date.now): Lease {
  const held = new Map<string, string>(); // name -> the value this process wrote
  const parse = (value: unknown) => {
    const [owner, until] = typeof value === "string" ? value.split(" ") : [];
    return { owner, until: Number(until) };
  };
  return {
    async hold(name, owner, ttlMs) {
      const key = entry(name);
      const value = `${owner} ${now() + ttlMs}`;
      const current = await read(key);
      const mine = held.get(name);
      if (current === null || current === undefined) {
        if (!(await atomic.claim(key, value))) return false;
      } else if (typeof current === "string" && current === mine) {
        const renewed = atomic.swapIf ? await atomic.swapIf(key, current, value) : (await atomic.takeIf(key, current)) && (await atomic.claim(key, value));
        if (!renewed) return false;
      } else {
        const { owner: other, until } = parse(current);
        if (other !== owner && until > now()) return false;
        if (!(await atomic.takeIf(key, String(current))) || !(await atomic.claim(key, value))) return false;
      }
      held.set(name, value);
      return true;
    },
    async release(name, owner) {
      const mine = held.get(name);
      held.delete(name);
      if (mine?.startsWith(`${owner} `)) await atomic.takeIf(entry(name), mine).catch(() => false);
    },
  };
}
