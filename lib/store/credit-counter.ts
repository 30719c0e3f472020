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
  const fresh = (credits: StoredCredits): Count => {
    const period = periodOf(credits);
    const next = credits.refill ? nextPeriod(credits.refill.interval, period) : Infinity;
    return { setAt: credits.setAt, period, next, remaining: credits.remaining, spent: 0 };
  };
  return {
    spend(keyId, credits, now) {
      let count = counts.get(keyId);
      if (!count || count.setAt !== credits.setAt) count = fresh(credits);
      refilled(count, credits, now);
      counts.delete(keyId); // re-inserted: most recently used last
      counts.set(keyId, count);
      if (counts.size > maxCounts) counts.delete(counts.keys().next().value!);
      if (count.remaining <= 0) return { allowed: false, remaining: 0 };
      count.remaining--;
      count.spent++;
      return { allowed: true, remaining: count.remaining };
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
      Object.assign(count, { remaining, spent: 0 });
      return { ...stored, remaining, ...(stored.refill ? { refilledAt: new Date(count.period).toISOString() } : {}) };
    },
  };
}

/**
 * KEYS[1]: the key's count (a hash: setAt, period, remaining). ARGV: setAt, the record's remaining and
 * period, the refill amount ("" for none), the period holding now, and the hash's lifetime (ms). A count
 * of another setting is replaced by the record's; a later period refills. Returns {allowed, remaining}.
 */
const SPEND = `local c = redis.call("HMGET", KEYS[1], "setAt", "period", "remaining")
local period, remaining
if c[1] == ARGV[1] then
  period = tonumber(c[2]); remaining = tonumber(c[3])
else
  period = tonumber(ARGV[3]); remaining = tonumber(ARGV[2])
end
if ARGV[4] ~= "" and tonumber(ARGV[5]) > period then
  period = tonumber(ARGV[5]); remaining = tonumber(ARGV[4])
end
local allowed = 0
if remaining > 0 then remaining = remaining - 1; allowed = 1 end
redis.call("HSET", KEYS[1], "setAt", ARGV[1], "period", period, "remaining", remaining)
redis.call("PEXPIRE", KEYS[1], ARGV[6])
return {allowed, remaining}`;

/** A count unused this long is dropped; the next request starts from the record (written within a minute of the last). */
const COUNT_TTL_MS = 35 * 86_400_000;

const isReply = (value: unknown): value is [number, number] =>
  Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0);

/** Counts in Redis under `countKey(keyId)`; `failed` turns an error into STORE_UNAVAILABLE (503, never served uncounted). */
export function createRedisCreditCounter(client: Redis, countKey: (keyId: string) => string, failed: (error?: unknown) => never): CreditCounter {
  return {
    async spend(keyId, credits, now) {
      const start = credits.refill ? periodOf(creditsAt(credits, now)) : periodOf(credits);
      const args = [credits.setAt, String(credits.remaining), String(periodOf(credits)), String(credits.refill?.amount ?? ""), String(start), String(COUNT_TTL_MS)];
      let reply: unknown;
      try {
        reply = await client.eval(SPEND, 1, countKey(keyId), ...args);
      } catch (error) {
        return failed(error);
      }
      if (!isReply(reply)) return failed();
      return { allowed: reply[0] === 1, remaining: reply[1] };
    },
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
