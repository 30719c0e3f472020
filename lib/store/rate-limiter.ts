/**
 * The counters behind keys' rate limits: a fixed window per limit, begun by the first request after the
 * previous window ended. A request is allowed only when every limit of its key has room, and then counts
 * against all of them; a refused request counts against none (a client that keeps retrying is not locked
 * out longer for it).
 *
 * - In process (`createMemoryRateLimiter`): the files and memory stores. Each process counts its own
 *   requests, so N servers on one directory allow up to N times a limit, and a restart starts afresh.
 * - Redis (`createRedisRateLimiter`): one Lua script checks and counts every limit of a key at once on the
 *   server, so the limit is exact across all servers sharing that Redis, and survives their restarts.
 */
import type { Redis } from "ioredis";
import type { MaybePromise } from "../core/maybe-promise.ts";
import type { RateLimit } from "../core/rate-limits.ts";

/** What a request's hit tells: for the limit that refused it, else for the one with least room left. */
export interface RateVerdict {
  allowed: boolean;
  /** Requests left in that limit's window after this one. */
  remaining: number;
  /** Milliseconds until that window ends. */
  resetMs: number;
  limit: number;
  windowMs: number;
  /**
   * Every limit's count after this request (verifyApiKey reports each), in the order of the key's limits;
   * absent for a single limit, whose count is the verdict's own `remaining` and `resetMs`.
   */
  each?: { remaining: number; resetMs: number }[];
}

export interface RateLimiter {
  /** True when every server on the store counts together (Redis); absent for a count of this process alone. */
  readonly shared?: boolean;
  /** Counts one request of key `keyId` against `limits` at `now` (ms), if every one has room. */
  hit(keyId: string, limits: readonly RateLimit[], now: number): MaybePromise<RateVerdict>;
}

/** The verdict from each limit's count (after this request, when allowed) and ms left in its window. */
export function verdictOf(allowed: boolean, limits: readonly RateLimit[], counts: readonly number[], resets: readonly number[]): RateVerdict {
  let pick = -1;
  for (let i = 0; i < limits.length; i++) {
    const full = counts[i] >= limits[i].limit;
    if (allowed || full) {
      // Refused: the full window that ends last (Retry-After is then enough for all); allowed: least room left.
      const better = pick < 0 ||
        (allowed ? limits[i].limit - counts[i] < limits[pick].limit - counts[pick] : resets[i] > resets[pick]);
      if (better) pick = i;
    }
  }
  if (pick < 0) pick = 0;
  const verdict: RateVerdict = {
    allowed,
    remaining: Math.max(0, limits[pick].limit - counts[pick]),
    resetMs: Math.max(0, resets[pick]),
    limit: limits[pick].limit,
    windowMs: limits[pick].durationMs,
  };
  // One limit: its count is the verdict's own (see `each`), and the request path allocates nothing more.
  if (limits.length > 1) verdict.each = limits.map((l, i) => ({ remaining: Math.max(0, l.limit - counts[i]), resetMs: Math.max(0, resets[i]) }));
  return verdict;
}

/** Windows this process keeps at most; the least recently used go first (a forgotten window starts afresh). */
const MEMORY_WINDOWS = 100_000;

/** One limit's window of one key: its length, the requests counted in it, and when it ends. */
interface Window {
  durationMs: number;
  count: number;
  endsAt: number;
}
/** A key's windows (one per window length it has had) and when it was last put at the end of the order. */
interface Windows {
  list: Window[];
  placed: number;
}

/**
 * @example createMemoryRateLimiter().hit(key.id, key.rateLimits, Date.now())
 *
 * Per request: a map read, a few comparisons and increments, no strings built. Recency (which windows
 * are forgotten first) is kept by moving a key to the end of the map's order, but only once an eighth
 * of `maxWindows` keys were placed after it: a `Map` delete-and-set on every request costs O(size /
 * free slots) when the table is near full (3 µs at 1,000 entries, measured on Node 20), while a key used
 * since is then still among the 7/8 most recently placed, so nothing in use is forgotten early.
 */
export function createMemoryRateLimiter(maxWindows = MEMORY_WINDOWS): RateLimiter {
  const keys = new Map<string, Windows>();
  let total = 0; // windows in `keys`
  let placed = 0; // placements so far: the map's order is that of `Windows.placed`
  const stale = Math.max(1, Math.floor(maxWindows / 8));
  // Reused by every call (hit is synchronous, and verdictOf keeps neither; it reads the first limits.length).
  const counts: number[] = [], resets: number[] = [], found: (Window | undefined)[] = [];
  return {
    hit(keyId, limits, now) {
      let entry = keys.get(keyId);
      const n = limits.length;
      let allowed = true;
      for (let i = 0; i < n; i++) {
        const l = limits[i];
        let window: Window | undefined;
        if (entry) for (const w of entry.list) if (w.durationMs === l.durationMs) window = w;
        found[i] = window;
        const live = window !== undefined && window.endsAt > now;
        counts[i] = live ? window!.count : 0;
        resets[i] = live ? window!.endsAt - now : l.durationMs;
        if (counts[i] >= l.limit) allowed = false;
      }
      if (entry && placed - entry.placed >= stale) {
        keys.delete(keyId); // moved to the end: most recently used last (refused requests too)
        keys.set(keyId, entry);
        entry.placed = ++placed;
      }
      if (!allowed) return verdictOf(false, limits, counts, resets); // a refusal counts nothing, begins no window
      if (!entry) keys.set(keyId, entry = { list: [], placed: ++placed });
      for (let i = 0; i < n; i++) {
        let window = found[i];
        if (!window) entry.list.push(window = { durationMs: limits[i].durationMs, count: 0, endsAt: 0 }), total++;
        if (window.endsAt <= now) (window.count = 0), (window.endsAt = now + limits[i].durationMs);
        counts[i] = ++window.count;
      }
      while (total > maxWindows) {
        const [oldest, windows] = keys.entries().next().value!;
        if (oldest === keyId) break; // this request's own windows stay
        keys.delete(oldest);
        total -= windows.list.length;
      }
      return verdictOf(true, limits, counts, resets);
    },
  };
}

/**
 * KEYS: one counter per limit; ARGV: the limits, then the windows (ms). Refused when any counter is at
 * its limit; else each is incremented, and given its window's expiry on the first hit. Returns the
 * verdict (1 or 0), then each counter and its PTTL.
 */
export const HIT = `local n = #KEYS
local allowed = 1
for i = 1, n do
  local count = tonumber(redis.call("GET", KEYS[i]) or "0")
  if count >= tonumber(ARGV[i]) then allowed = 0 end
end
local out = {allowed}
for i = 1, n do
  local count
  if allowed == 1 then
    count = redis.call("INCR", KEYS[i])
    if count == 1 then redis.call("PEXPIRE", KEYS[i], ARGV[n + i]) end
  else
    count = tonumber(redis.call("GET", KEYS[i]) or "0")
  end
  local ttl = redis.call("PTTL", KEYS[i])
  if ttl < 0 then
    redis.call("PEXPIRE", KEYS[i], ARGV[n + i])
    ttl = tonumber(ARGV[n + i])
  end
  out[#out + 1] = count
  out[#out + 1] = ttl
end
return out`;

const isReply = (value: unknown, n: number): value is number[] =>
  Array.isArray(value) && value.length === 1 + 2 * n && value.every((v) => typeof v === "number" && Number.isSafeInteger(v));

/**
 * Counters in Redis under `counterKey(keyId, durationMs)` (the service's failed authentications, per
 * client address, count here too: `http/auth-throttle.ts`). `failed` turns a Redis error (or a reply of
 * the wrong shape) into the store's STORE_UNAVAILABLE: the service refuses (503) rather than serve unlimited.
 */
export function createRedisRateLimiter(
  client: Redis,
  counterKey: (keyId: string, durationMs: number) => string,
  failed: (error?: unknown) => never,
): RateLimiter {
  return {
    shared: true,
    async hit(keyId, limits) {
      const keys = limits.map((l) => counterKey(keyId, l.durationMs));
      const args = [...limits.map((l) => String(l.limit)), ...limits.map((l) => String(l.durationMs))];
      let reply: unknown;
      try {
        reply = await client.eval(HIT, keys.length, ...keys, ...args);
      } catch (error) {
        return failed(error);
      }
      if (!isReply(reply, limits.length)) return failed();
      const counts = limits.map((_, i) => reply[1 + 2 * i]);
      const resets = limits.map((_, i) => reply[2 + 2 * i]);
      return verdictOf(reply[0] === 1, limits, counts, resets);
    },
  };
}
