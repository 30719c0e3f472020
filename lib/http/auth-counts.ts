/**
 * The throttle's memory of client addresses (`auth-throttle.ts`), a few dozen bytes each: a slot table
 * (`core/slot-lru.ts`) keyed by the address's text, and its numbers in typed arrays, never an object per
 * address. At most `max` addresses; the least recently failing are forgotten first, and start afresh.
 *
 * - `createAddressCounts`: the count itself, for a server that counts alone (files or memory store). Fixed
 *   windows, as keys' limits (`store/rate-limiter.ts`): a failure is counted while every limit has room, and
 *   a refused one counts against none.
 * - `createOverAddresses`: the addresses a shared count (Redis) refused, until their window ends, so that
 *   their further attempts cost no round trip.
 */
import type { RateLimit } from "../core/rate-limits.ts";
import { createSlotLru, grown } from "../core/slot-lru.ts";
import { type RateVerdict, verdictOf } from "../store/rate-limiter.ts";

/** Counts failures per address against `limits`, for at most `max` addresses at once. */
export function createAddressCounts(limits: readonly RateLimit[], max: number) {
  const n = limits.length;
  let counts = new Uint32Array(0);
  let ends = new Float64Array(0); // when each window ends (ms); 0: no window
  const table = createSlotLru<string>(max, (capacity) => {
    counts = grown(counts, capacity * n);
    ends = grown(ends, capacity * n);
  });
  // Reused by every call (verdictOf keeps neither).
  const current: number[] = [], resets: number[] = [];
  return {
    /** One more failure from `client` at `now` (ms): counted when every limit has room. */
    hit(client: string, now: number): RateVerdict {
      let slot = table.find(client);
      if (slot < 0) {
        slot = table.add(client);
        ends.fill(0, slot * n, slot * n + n);
      }
      const base = slot * n;
      let allowed = true;
      for (let i = 0; i < n; i++) {
        const live = ends[base + i] > now;
        current[i] = live ? counts[base + i] : 0;
        resets[i] = live ? ends[base + i] - now : limits[i].durationMs;
        if (current[i] >= limits[i].limit) allowed = false;
      }
      if (allowed) {
        for (let i = 0; i < n; i++) {
          if (ends[base + i] <= now) (counts[base + i] = 0), (ends[base + i] = now + limits[i].durationMs);
          current[i] = ++counts[base + i];
        }
      }
      return verdictOf(allowed, limits, current, resets);
    },
    get size() {
      return table.size;
    },
  };
}

/** The addresses over one of `limits` and until when, for at most `max` addresses at once. */
export function createOverAddresses(limits: readonly RateLimit[], max: number) {
  let until = new Float64Array(0);
  let which = new Uint8Array(0); // the index in `limits` of the limit the address is over
  const table = createSlotLru<string>(max, (capacity) => {
    until = grown(until, capacity);
    which = grown(which, capacity);
  });
  return {
    /** The limit `client` is over at `now` and the ms left until its window ends; undefined when none. */
    get(client: string, now: number): { limit: number; windowMs: number; ms: number } | undefined {
      const slot = table.find(client);
      if (slot < 0) return undefined;
      if (until[slot] <= now) return void table.delete(client);
      const { limit, durationMs } = limits[which[slot]];
      return { limit, windowMs: durationMs, ms: until[slot] - now };
    },
    /** Remembers that `client` is over the limit of `verdict` (refused at `now`) until its window ends. */
    set(client: string, verdict: RateVerdict, now: number): void {
      let slot = table.find(client);
      if (slot < 0) slot = table.add(client);
      until[slot] = now + verdict.resetMs;
      which[slot] = Math.max(0, limits.findIndex((l) => l.durationMs === verdict.windowMs));
    },
  };
}
