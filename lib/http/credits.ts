/**
 * Keys' credits on /graphql: one credit taken from a verified key that has credits, after its rate limits
 * allowed the request (a request they refuse costs no credit), and the 429 `USAGE_EXCEEDED` once none is
 * left: until a refill (the next UTC day or month) or an update gives it more. A key without credits costs
 * nothing more.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import type { CreditCounter } from "../store/credit-counter.ts";
import type { RateLimiter } from "../store/rate-limiter.ts";
import type { VerifiedKey } from "../store/types.ts";
import { nextPeriod, periodStart } from "../core/credits.ts";
import { limited, rateLimited, retrySeconds, withRateHeaders } from "./rate-limit.ts";
import { errorResponse } from "./responses.ts";
import type { ServiceResponse } from "./types.ts";

/** 429: the key has used all its credits; with a refill, `Retry-After` says when it comes. */
export const usageExceeded = (key: VerifiedKey, now = Date.now()): ServiceResponse => {
  const refill = key.creditState?.refill;
  const until = refill ? `until its refill (${refill.amount} at the start of each UTC ${refill.interval})` : "until an update gives it more";
  const retry = refill && { "retry-after": String(retrySeconds(nextPeriod(refill.interval, periodStart(refill.interval, now)) - now)) };
  return errorResponse(429, "USAGE_EXCEEDED", `Usage exceeded: this key has no credits left ${until}`, retry || {});
};

/** `answer()` once `key`'s rate limits (if any) and credits (if any) allow the request, else the 429. */
export function controlled(
  limiter: RateLimiter,
  counter: CreditCounter,
  key: VerifiedKey,
  now: number,
  answer: () => MaybePromise<ServiceResponse>,
): MaybePromise<ServiceResponse> {
  const state = key.creditState;
  const limits = key.rateLimits;
  if (limits && state && counter.spendLimited) {
    // Both in one step (Redis: one script, one round trip).
    return after(counter.spendLimited(key.id, limits, state, now), ({ rate, credit }) => {
      if (!rate.allowed) return rateLimited(limits, rate);
      return after(credit?.allowed ? answer() : usageExceeded(key, now), (response) => withRateHeaders(response, limits, rate));
    });
  }
  const spend = state ? () => after(counter.spend(key.id, state, now), (verdict) => (verdict.allowed ? answer() : usageExceeded(key, now))) : answer;
  return limits ? limited(limiter, key, now, spend) : spend();
}
