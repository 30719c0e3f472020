/**
 * Usage control on every route that authenticates a key (/graphql, /metrics): the store's one decision
 * (`decideUse`: rate limits first, a request they refuse costs no credit, then one credit) answered alike.
 * A full limit is the 429 `RATE_LIMITED` with `Retry-After`; no credit left is the 429 `USAGE_EXCEEDED`,
 * until a refill (the next UTC day or month) or an update gives it more; every other answer to a key with
 * limits carries the RateLimit headers (`rate-limit.ts`). A key without limits nor credits costs nothing more.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import type { CreditCounter } from "../store/credit-counter.ts";
import type { RateLimiter } from "../store/rate-limiter.ts";
import type { VerifiedKey } from "../store/types.ts";
import { decideUse } from "../store/_controls.ts";
import { nextPeriod, periodStart } from "../core/credits.ts";
import { rateLimited, retrySeconds, withRateHeaders } from "./rate-limit.ts";
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
  return after(decideUse(limiter, counter, key, now), ({ code, rate }) => {
    if (code === "RATE_LIMITED") return rateLimited(key.rateLimits!, rate!);
    const answered = code === "VALID" ? answer() : usageExceeded(key, now);
    return rate ? after(answered, (response) => withRateHeaders(response, key.rateLimits!, rate)) : answered;
  });
}
