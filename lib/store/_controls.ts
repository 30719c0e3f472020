/**
 * A verified key's use against its rate limits and credits, as `verifyDetailed` (verifyApiKey) answers it:
 * the rate limits first (a request they refuse costs no credit), then one credit. The same counters as
 * the service's (`KeyStore.rateLimiter`, `KeyStore.creditCounter`), so a verification is one use of the
 * verified key like a request of its own.
 */
import { formatRateLimits } from "../core/rate-limits.ts";
import type { KeyVerification } from "../core/model.ts";
import type { CreditCounter } from "./credit-counter.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import type { VerifiedKey } from "./types.ts";

export interface UseControls {
  code: "VALID" | "RATE_LIMITED" | "USAGE_EXCEEDED";
  credits: KeyVerification["credits"];
  ratelimits: KeyVerification["ratelimits"];
}

/** Counts one use of `key` at `now`: its limits (if any), then a credit (if it has credits and the limits allowed it). */
export async function controlUse(limiter: RateLimiter, counter: CreditCounter, key: VerifiedKey, now: number): Promise<UseControls> {
  let ratelimits: KeyVerification["ratelimits"] = null;
  let code: UseControls["code"] = "VALID";
  const limits = key.rateLimits;
  // Rate limits and credit in one step where the counter can (Redis: one script).
  const both = limits?.length && key.creditState && counter.spendLimited ? await counter.spendLimited(key.id, limits, key.creditState, now) : null;
  if (limits?.length) {
    const verdict = both?.rate ?? (await limiter.hit(key.id, limits, now));
    if (!verdict.allowed) code = "RATE_LIMITED";
    ratelimits = limits.map((limit, i) => {
      const each = verdict.each?.[i] ?? { remaining: verdict.remaining, resetMs: verdict.resetMs };
      return {
        name: formatRateLimits([limit]),
        limit: limit.limit,
        remaining: each.remaining,
        reset: new Date(now + each.resetMs).toISOString(),
        exceeded: !verdict.allowed && each.remaining === 0,
      };
    });
  }
  if (!key.creditState) return { code, credits: null, ratelimits };
  if (code !== "VALID") return { code, credits: await counter.peek(key.id, key.creditState, now), ratelimits };
  const spent = both?.credit ?? (await counter.spend(key.id, key.creditState, now));
  return { code: spent.allowed ? "VALID" : "USAGE_EXCEEDED", credits: spent.remaining, ratelimits };
}
