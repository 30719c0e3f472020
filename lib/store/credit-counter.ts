/**
 * The counters behind keys' credits: `spend` takes one credit of a key on each request it authenticates
 * (refused at 0, and nothing taken), and `persist` says what the key's record should hold when its use is
 * written (off the request path, with `lastUsedAt` and the use counts: see `_usage.ts`).
 *
 * - In process (`createMemoryCreditCounter`): the files and memory stores. Each process counts down its own
 *   copy of a key's count, starting from the record, and at each write of the key's use (the first within
 *   5 s, then at most once a minute) subtracts what it spent from the record's count and takes the result
 *   as its own (so it learns what other processes spent). Exact within one process; several processes on
 *   one folder may together overshoot by at most what the others spent since each one's last write.
 * - Redis (`createRedisCreditCounter`): one Lua script checks, refills and takes a credit on the server,
 *   exact across every server sharing that Redis; the record gets the count at each write of the key's use.
 *
 * A count belongs to one setting (`setAt`): an update that sets new credits starts a new count everywhere.
 */
import type { Redis } from "ioredis";
import type { MaybePromise } from "../core/maybe-promise.ts";
import { creditsAt, nextPeriod, periodOf, periodStart, type StoredCredits } from "../core/credits.ts";
import type { RateLimit } from "../core/rate-limits.ts";
import { HIT, type RateVerdict, verdictOf } from "./rate-limiter.ts";

export interface CreditVerdict {
  allowed: boolean;
  /** Credits left after this request (0 when refused). */
  remaining: number;
}

export interface CreditCounter {
  /** Takes one credit of key `keyId` (whose record holds `credits`) at `now` (ms), if it has one. */
  spend(keyId: string, credits: StoredCredits, now: number): MaybePromise<CreditVerdict>;
  /** Credits left at `now` without taking one (a verification its rate limit refused). */
  peek(keyId: string, credits: StoredCredits, now: number): MaybePromise<number>;
  /** The write of what `persist` gave failed: what it carried is still to be written. */
  unwritten?(keyId: string): void;
  /** Rate limits and then a credit in one step (Redis: one script), where the counter can; else the caller does both. */
  spendLimited?(keyId: string, limits: readonly RateLimit[], credits: StoredCredits, now: number): Promise<{ rate: RateVerdict; credit: CreditVerdict | null }>;
  /** The credits the record (now holding `stored`) should hold once this key's use is written; undefined: as they are. */
  persist(keyId: string, stored: StoredCredits, now: number): MaybePromise<StoredCredits | undefined>;
}

interface Count {
  setAt: string;
  /** Start of the refill period (ms) `remaining` belongs to. */
  period: number;
  /** When the next refill is due (ms); Infinity without a refill. */
  next: number;
  remaining: number;
  /** Spent since the last write. */
  spent: number;
  /** Its place in the map's order (see `stale` in createMemoryCreditCounter). */
  placed: number;
  /** Spent before the write in progress (given back to `spent` if it fails). */
  writing?: number;
}

/** Keys whose count a process keeps; beyond that the least recently used is written no more and read afresh. */
const MEMORY_COUNTS = 100_000;

/** `count` refilled when its next period has begun by `now` (a comparison per request, no allocation). */
function refilled(count: Count, credits: StoredCredits, now: number): Count {
  if (now < count.next || !credits.refill) return count;
  const period = periodStart(credits.refill.interval, now);
  return Object.assign(count, { period, next: nextPeriod(credits.refill.interval, period), remaining: credits.refill.amount, spent: 0 });
}

/** @example createMemoryCreditCounter().spend(key.id, record.credits, Date.now()) */
export function createMemoryCreditCounter(maxCounts = MEMORY_COUNTS): CreditCounter {
  const counts = new Map<string, Count>();
  // Recency as the in-process rate limiter keeps it (see createMemoryRateLimiter): a count moves to the end
  // of the map's order only once an eighth of `maxCounts` were placed after it, not on every request.
  let placed = 0;
  const stale = Math.max(1, Math.floor(maxCounts / 8));
  const fresh = (credits: StoredCredits, at: number): Count => {
    const period = periodOf(credits);
    const next = credits.refill ? nextPeriod(credits.refill.interval, period) : Infinity;
    return { setAt: credits.setAt, period, next, remaining: credits.remaining, spent: 0, placed: at };
  };
  return {
    spend(keyId, credits, now) {
      let count = counts.get(keyId);
      if (!count || count.setAt !== credits.setAt) {
        if (count) counts.delete(keyId); // a new setting: placed anew, last
        counts.set(keyId, count = fresh(credits, ++placed));
        if (counts.size > maxCounts) counts.delete(counts.keys().next().value!);
      } else if (placed - count.placed >= stale) {
        counts.delete(keyId); // moved to the end: most recently used last
        counts.set(keyId, count);
        count.placed = ++placed;
      }
      refilled(count, credits, now);
      if (count.remaining <= 0) return { allowed: false, remaining: 0 };
      count.remaining--;
      count.spent++;
      return { allowed: true, remaining: count.remaining };
    },
    unwritten(keyId) {
      const count = counts.get(keyId);
      if (count?.writing) Object.assign(count, { spent: count.spent + count.writing, writing: 0 });
    },
    peek(keyId, credits, now) {
      const count = counts.get(keyId);
      if (!count || count.setAt !== credits.setAt) return creditsAt(credits, now).remaining;
      return now >= count.next && credits.refill ? credits.refill.amount : count.remaining;
    },
    persist(keyId, stored, now) {
      const count = counts.get(keyId);
      if (!count) return undefined;
      if (count.setAt !== stored.setAt) {
        counts.delete(keyId); // set anew meanwhile: this count is of an old setting
        return undefined;
      }
      const current = creditsAt(stored, now);
      const period = periodOf(current);
      // The record is in a later period than this count (another process refilled): the spends were of an older one.
      if (period > count.period) return (counts.delete(keyId), current === stored ? undefined : current);
      // Same period: subtract this process's spends; this process refilled first: its count starts from the refill.
      const base = period < count.period ? stored.refill?.amount ?? stored.remaining : current.remaining;
      const remaining = Math.max(0, base - count.spent);
      Object.assign(count, { remaining, spent: 0, writing: count.spent });
      return { ...stored, remaining, ...(stored.refill ? { refilledAt: new Date(count.period).toISOString() } : {}) };
    },
  };
}

/**
 * `spend(key, setAt, remaining, period, amount, start, ttl)`: the key's count (a hash: setAt, period,
 * remaining) given the record's setAt, remaining and period, the refill amount ("" for none), the period
 * holding now, and the hash's lifetime (ms). A count of another setting is replaced by the record's; a
 * later period refills. Returns {allowed, remaining}.
 */
const SPEND_FN = `local function spend(key, setAt, remaining0, period0, amount, start, ttl)
  local c = redis.call("HMGET", key, "setAt", "period", "remaining")
  local period, remaining
  if c[1] == setAt then
    period = tonumber(c[2]); remaining = tonumber(c[3])
  else
    period = tonumber(period0); remaining = tonumber(remaining0)
  end
  if amount ~= "" and tonumber(start) > period then
    period = tonumber(start); remaining = tonumber(amount)
  end
  local allowed = 0
  if remaining > 0 then remaining = remaining - 1; allowed = 1 end
  redis.call("HSET", key, "setAt", setAt, "period", period, "remaining", remaining)
  redis.call("PEXPIRE", key, ttl)
  return {allowed, remaining}
end
`;
const SPEND = `${SPEND_FN}return spend(KEYS[1], unpack(ARGV))`;

/**
 * A key's rate limits and then its credits in one script (one round trip, atomic): KEYS the limits'
 * counters then the count, ARGV the rate limiter's then `spend`'s. The rate limiter's reply, then the
 * credit's {allowed, remaining}, or {-1, -1} when a limit refused (no credit taken).
 */
const HIT_THEN_SPEND = `${SPEND_FN}local count = table.remove(KEYS)
local function hit()
${HIT}
end
local out = hit()
local n = #KEYS
local spent = {-1, -1}
if out[1] == 1 then spent = spend(count, unpack(ARGV, 2 * n + 1, 2 * n + 6)) end
out[#out + 1] = spent[1]
out[#out + 1] = spent[2]
return out`;

/** A count unused this long is dropped; the next request starts from the record (written within a minute of the last). */
const COUNT_TTL_MS = 35 * 86_400_000;

const isReply = (value: unknown, length = 2): value is number[] =>
  Array.isArray(value) && value.length === length && value.every((v) => typeof v === "number" && Number.isSafeInteger(v) && v >= -1);

/**
 * Counts in Redis under `countKey(keyId)`; `failed` turns an error into STORE_UNAVAILABLE (503, never served
 * uncounted). With `limitKey` (the rate limiter's counter names), `spendLimited` checks a key's rate limits
 * and takes its credit in one script.
 */
export function createRedisCreditCounter(
  client: Redis,
  countKey: (keyId: string) => string,
  failed: (error?: unknown) => never,
  limitKey?: (keyId: string, durationMs: number) => string,
): CreditCounter {
  const spendArgs = (credits: StoredCredits, now: number) => {
    const start = credits.refill ? periodOf(creditsAt(credits, now)) : periodOf(credits);
    return [credits.setAt, String(credits.remaining), String(periodOf(credits)), String(credits.refill?.amount ?? ""), String(start), String(COUNT_TTL_MS)];
  };
  const evaluate = async (script: string, keys: string[], args: string[], length: number): Promise<number[]> => {
    let reply: unknown;
    try {
      reply = await client.eval(script, keys.length, ...keys, ...args);
    } catch (error) {
      return failed(error);
    }
    return isReply(reply, length) ? reply : failed();
  };
  return {
    async spend(keyId, credits, now) {
      const [allowed, remaining] = await evaluate(SPEND, [countKey(keyId)], spendArgs(credits, now), 2);
      return { allowed: allowed === 1, remaining };
    },
    ...(limitKey && {
      async spendLimited(keyId: string, limits: readonly RateLimit[], credits: StoredCredits, now: number) {
        const keys = [...limits.map((l) => limitKey(keyId, l.durationMs)), countKey(keyId)];
        const args = [...limits.map((l) => String(l.limit)), ...limits.map((l) => String(l.durationMs)), ...spendArgs(credits, now)];
        const reply = await evaluate(HIT_THEN_SPEND, keys, args, 3 + 2 * limits.length);
        const n = limits.length;
        const rate = verdictOf(reply[0] === 1, limits, limits.map((_, i) => reply[1 + 2 * i]), limits.map((_, i) => reply[2 + 2 * i]));
        return { rate, credit: reply[1 + 2 * n] === -1 ? null : { allowed: reply[1 + 2 * n] === 1, remaining: reply[2 + 2 * n] } };
      },
    }),
    async peek(keyId, credits, now) {
      const [setAt, period, remaining] = await client.hmget(countKey(keyId), "setAt", "period", "remaining").catch(failed);
      if (setAt !== credits.setAt || period === null || remaining === null) return creditsAt(credits, now).remaining;
      const refilled = credits.refill && periodOf(creditsAt(credits, now)) > Number(period);
      return refilled ? credits.refill!.amount : Number(remaining);
    },
    async persist(keyId, stored) {
      const [setAt, period, remaining] = await client.hmget(countKey(keyId), "setAt", "period", "remaining").catch(failed);
      if (setAt !== stored.setAt || period === null || remaining === null) return undefined;
      const next: StoredCredits = { ...stored, remaining: Number(remaining), ...(stored.refill ? { refilledAt: new Date(Number(period)).toISOString() } : {}) };
      return next.remaining === stored.remaining && next.refilledAt === stored.refilledAt ? undefined : next;
    },
  };
}
