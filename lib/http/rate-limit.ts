/**
 * Keys' rate limits on /graphql: the count of a verified key's request (only a key with limits; one
 * without costs nothing), the 429 when a limit is full, and the IETF headers
 * (draft-ietf-httpapi-ratelimit-headers) on every other answer to such a key: `RateLimit-Policy` lists
 * each limit (`10;w=1, 1000;w=3600`), `RateLimit` tells the one with least room left
 * (`limit=10, remaining=9, reset=1`). The headers are added to the answer once it is produced, so a
 * remembered answer (answer-cache.ts) is counted like any other and never carries another request's.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import type { RateLimit } from "../core/rate-limits.ts";
import { formatWindow } from "../core/rate-limits.ts";
import type { RateLimiter, RateVerdict } from "../store/rate-limiter.ts";
import { errorResponse } from "./responses.ts";
import type { ServiceResponse } from "./types.ts";

/** Whole seconds, rounded up, at least 1: `Retry-After` and `reset`. */
export const retrySeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1_000));

/** `RateLimit-Policy`'s value: each limit and its window in seconds. */
export const policyHeader = (limits: readonly RateLimit[]): string =>
  limits.map((l) => `${l.limit};w=${Math.round(l.durationMs / 1_000)}`).join(", ");

/** The headers an answer to a key with limits carries. */
export function rateHeaders(limits: readonly RateLimit[], verdict: RateVerdict): Record<string, string> {
  return {
    "ratelimit-policy": policyHeader(limits),
    ratelimit: `limit=${verdict.limit}, remaining=${verdict.remaining}, reset=${retrySeconds(verdict.resetMs)}`,
  };
}

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

/**
 * `answer()` for a key with `limits` once the limiter allows it, with the headers added to a copy of
 * the response (answers may be remembered and frozen); else the 429, without calling `answer`.
 */
export function limited(
  limiter: RateLimiter,
  key: { id: string; rateLimits?: RateLimit[] },
  now: number,
  answer: () => MaybePromise<ServiceResponse>,
): MaybePromise<ServiceResponse> {
  const limits = key.rateLimits!;
  return after(limiter.hit(key.id, limits, now), (verdict) => {
    if (!verdict.allowed) return rateLimited(limits, verdict);
    const headers = rateHeaders(limits, verdict);
    // A plain copy: a remembered answer's mark must not pass on (node.ts keeps a head per remembered object).
    return after(answer(), (response) => ({ status: response.status, headers: Object.assign({}, response.headers, headers), body: response.body }));
  });
}
