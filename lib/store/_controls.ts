/**
 * The one usage-control decision for a verified key's use, whatever route or call it is: its rate limits
 * first (a use they refuse costs no credit), then one credit. The service's routes (`http/credits.ts`:
 * /graphql, /metrics) answer it with a 429 or the answer and the RateLimit headers; `verifyDetailed`
 * (verifyApiKey) reports it (`controlUse`). The same counters as the service's (`KeyStore.rateLimiter`,
 * `KeyStore.creditCounter`), so a verification is one use of the verified key like a request of its own.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { formatRateLimits } from "../core/rate-limits.ts";
import type { KeyVerification } from "../core/model.ts";
import type { CreditCounter, CreditVerdict } from "./credit-counter.ts";
import type { RateLimiter, RateVerdict } from "./rate-limiter.ts";
import type { VerifiedKey } from "./types.ts";

type UseCode = "VALID" | "RATE_LIMITED" | "USAGE_EXCEEDED";

/** The decision on one use: its code, the limits' verdict (a key with limits) and the credit's (a key with credits whose limits allowed it). */
export interface UseVerdict {
  code: UseCode;
  rate?: RateVerdict;
  credit?: CreditVerdict;
}

/** A key without limits nor credits: nothing counted, nothing allocated. */
const FREE: UseVerdict = Object.freeze({ code: "VALID" });

/**
 * Counts one use of `key` at `now`: its limits (if any), then a credit (if it has credits and the limits
 * allowed it). Answers without a promise when the counters did (files and memory stores).
 */
export function decideUse(limiter: RateLimiter, counter: CreditCounter, key: VerifiedKey, now: number): MaybePromise<UseVerdict> {
  const limits = key.rateLimits?.length ? key.rateLimits : undefined;
  const state = key.creditState;
  if (!limits && !state) return FREE;
  if (limits && state && counter.spendLimited) {
    // Both in one step (Redis: one script, one round trip).
    return counter.spendLimited(key.id, limits, state, now).then(({ rate, credit }): UseVerdict =>
      !rate.allowed ? { code: "RATE_LIMITED", rate } : { code: credit?.allowed ? "VALID" : "USAGE_EXCEEDED", rate, credit: credit ?? { allowed: false, remaining: 0 } }
    );
  }
  const spend = (rate?: RateVerdict): MaybePromise<UseVerdict> =>
    state ? after(counter.spend(key.id, state, now), (credit) => ({ code: credit.allowed ? "VALID" : "USAGE_EXCEEDED", rate, credit })) : { code: "VALID", rate };
  if (!limits) return spend();
  return after(limiter.hit(key.id, limits, now), (rate) => (rate.allowed ? spend(rate) : { code: "RATE_LIMITED", rate }));
}

export interface UseControls {
  code: UseCode;
  credits: KeyVerification["credits"];
  ratelimits: KeyVerification["ratelimits"];
}

/** Each limit of `key` as verifyApiKey reports it after `rate`. */
const reported = (key: VerifiedKey, rate: RateVerdict, now: number): NonNullable<KeyVerification["ratelimits"]> =>
  key.rateLimits!.map((limit, i) => {
    const each = rate.each?.[i] ?? { remaining: rate.remaining, resetMs: rate.resetMs };
    return {
      name: formatRateLimits([limit]),
      limit: limit.limit,
      remaining: each.remaining,
      reset: new Date(now + each.resetMs).toISOString(),
      exceeded: !rate.allowed && each.remaining === 0,
    };
  });

/** `decideUse` as `verifyDetailed` reports it: the code, the credits left (as they stand when no credit was taken) and each limit. */
export async function controlUse(limiter: RateLimiter, counter: CreditCounter, key: VerifiedKey, now: number): Promise<UseControls> {
  const { code, rate, credit } = await decideUse(limiter, counter, key, now);
  const ratelimits = rate ? reported(key, rate, now) : null;
  if (!key.creditState) return { code, credits: null, ratelimits };
  return { code, credits: credit?.remaining ?? (await counter.peek(key.id, key.creditState, now)), ratelimits };
}
