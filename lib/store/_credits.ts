/**
 * Keys' rate limits and credits in the store's changes: the counters a store uses (its backend's, else
 * ones in this process) and what an update makes of the record's limits and credits.
 */
import { storedCredits } from "../core/credits.ts";
import type { KeyPatch, StoredKey } from "../core/model.ts";
import { createMemoryCreditCounter, type CreditCounter } from "./credit-counter.ts";
import { createMemoryRateLimiter, type RateLimiter } from "./rate-limiter.ts";

/** The backend's counters (Redis: exact across servers), else counters in this process. */
export const usageCounters = (options: { rateLimiter?: RateLimiter; creditCounter?: CreditCounter }) => ({
  rateLimiter: options.rateLimiter ?? createMemoryRateLimiter(),
  creditCounter: options.creditCounter ?? createMemoryCreditCounter(),
});

/**
 * `next` (the record with `patch` spread over it) as stored: `rateLimits: []` and `credits: null` remove
 * them; credits given are a new setting from `now` (every server's count starts again from them), so an
 * update is how an operator tops up a key that ran out. `replaced`: the record's credits before the patch.
 */
export function settleControls(next: StoredKey, patch: KeyPatch, now: number, replaced?: StoredKey["credits"]): void {
  if (patch.rateLimits?.length === 0) delete next.rateLimits;
  if (patch.credits === null) delete next.credits;
  else if (patch.credits) next.credits = storedCredits(patch.credits, now, replaced);
}
