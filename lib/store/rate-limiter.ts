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
  /** Every limit's count after this request (verifyApiKey reports each), in the order of the key's limits. */
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
  return {
    allowed,
    remaining: Math.max(0, limits[pick].limit - counts[pick]),
    resetMs: Math.max(0, resets[pick]),
    limit: limits[pick].limit,
    windowMs: limits[pick].durationMs,
    each: limits.map((l, i) => ({ remaining: Math.max(0, l.limit - counts[i]), resetMs: Math.max(0, resets[i]) })),
  };
}

/** Windows this process keeps at most; the oldest go first (a forgotten window starts afresh). */
const MEMORY_WINDOWS = 100_000;

/** @example createMemoryRateLimiter().hit(key.id, key.rateLimits, Date.now()) */
export function createMemoryRateLimiter(maxWindows = MEMORY_WINDOWS): RateLimiter {
  const windows = new Map<string, { count: number; endsAt: number }>();
  return {
    hit(keyId, limits, now) {
      const slots = limits.map((l) => {
        const name = `${keyId}/${l.durationMs}`;
        let window = windows.get(name);
        if (!window || window.endsAt <= now) window = { count: 0, endsAt: now + l.durationMs };
        return { name, window };
      });
      const allowed = slots.every(({ window }, i) => window.count < limits[i].limit);
      for (const { name, window } of slots) {
        if (allowed) window.count++;
        windows.delete(name); // re-inserted: most recently used last
        if (window.count > 0) windows.set(name, window); // a refusal begins no window
      }
      while (windows.size > maxWindows) windows.delete(windows.keys().next().value!);
      return verdictOf(allowed, limits, slots.map((s) => s.window.count), slots.map((s) => s.window.endsAt - now));
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
