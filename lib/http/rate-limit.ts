/**
 * Keys' rate limits on the routes that authenticate a key (counted by the one decision `credits.ts` answers):
 * the 429 when a limit is full, and the IETF headers (draft-ietf-httpapi-ratelimit-headers) on every other
 * answer to such a key: `RateLimit-Policy` lists each limit (`10;w=1, 1000;w=3600`), `RateLimit` tells the
 * one with least room left (`limit=10, remaining=9, reset=1`). The headers are added to the answer once it is produced, so a
 * remembered answer (answer-cache.ts) is counted like any other and never carries another request's.
 */
import type { RateLimit } from "../core/rate-limits.ts";
import { formatWindow } from "../core/rate-limits.ts";
import type { RateVerdict } from "../store/rate-limiter.ts";
import { amended, errorResponse } from "./responses.ts";
import type { ServiceResponse } from "./types.ts";

/** Whole seconds, rounded up, at least 1: `Retry-After` and `reset`. */
export const retrySeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1_000));

/** `RateLimit-Policy`'s value for each set of limits seen (a key's limits are one array while it is remembered). */
const policies = new WeakMap<readonly RateLimit[], string>();
/** `RateLimit-Policy`'s value: each limit and its window in seconds. */
export function policyHeader(limits: readonly RateLimit[]): string {
  let policy = policies.get(limits);
  if (policy === undefined) policies.set(limits, policy = limits.map((l) => `${l.limit};w=${Math.round(l.durationMs / 1_000)}`).join(", "));
  return policy;
}
/** `RateLimit`'s value: the limit with least room left (or the one that refused). */
const rateValue = (verdict: RateVerdict): string =>
  "limit=" + verdict.limit + ", remaining=" + verdict.remaining + ", reset=" + retrySeconds(verdict.resetMs);

/** The headers an answer to a key with limits carries. */
export function rateHeaders(limits: readonly RateLimit[], verdict: RateVerdict): Record<string, string> {
  return { "ratelimit-policy": policyHeader(limits), ratelimit: rateValue(verdict) };
}

/**
 * `response` with the rate-limit headers added for this request: never written into `response`, which may
 * be remembered and is frozen, and amended (`responses.ts`) so that node.ts writes a remembered answer's
 * head as kept, then these two lines.
 */
export const withRateHeaders = (response: ServiceResponse, limits: readonly RateLimit[], verdict: RateVerdict): ServiceResponse =>
  amended(response, ["ratelimit-policy", policyHeader(limits), "ratelimit", rateValue(verdict)]);

/** 429: a limit of the key is full until its window ends (Retry-After, in whole seconds, rounded up). */
export function rateLimited(limits: readonly RateLimit[], verdict: RateVerdict): ServiceResponse {
  const retry = retrySeconds(verdict.resetMs);
  return errorResponse(
    429,
    "RATE_LIMITED",
    `Rate limit exceeded: this key allows ${verdict.limit} requests per ${formatWindow(verdict.windowMs)}; retry in ${retry} s`,
    { "retry-after": String(retry), ...rateHeaders(limits, verdict) },
  );
}
