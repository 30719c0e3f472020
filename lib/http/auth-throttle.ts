/**
 * Failed authentications per client address (`authFailureLimit`, `serve --auth-failure-limit`; default
 * 60 a minute). Past the limit, a refused request from that address gets 429
 * `TOO_MANY_FAILED_AUTHENTICATIONS` with `Retry-After` instead of 401, and the store is not asked why the
 * key was refused (that second read, and the retired-secret report, are what a flood of bad keys costs).
 *
 * Only refusals are throttled: the key is checked before the throttle is asked, so a valid key is always
 * served, even from a throttled address (behind a reverse proxy every client may share one). A key that
 * fails the checksum is refused without any store read, throttled or not; a well-formed one costs its
 * `verify` read (the cheapest check there is, and the one that tells a valid key).
 *
 * On Redis the count is the keys' rate-limit mechanism (`store/rate-limiter.ts`), keyed `auth:<client>`:
 * one count for every server sharing it, and the addresses over the limit are remembered here until their
 * window ends, so their further attempts cost no round trip. Else it is a count of this process with the
 * same fixed windows. Either memory holds at most MAX_CLIENTS addresses, a few dozen bytes each
 * (`auth-counts.ts`); the least recently failing are forgotten.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { brokenBound, checkRateLimits, formatWindow, parseRateLimits, type RateLimit } from "../core/rate-limits.ts";
import { ServiceError } from "../core/errors.ts";
import { redactSecrets } from "../core/secret.ts";
import type { RateVerdict } from "../store/rate-limiter.ts";
import { createAddressCounts, createOverAddresses } from "./auth-counts.ts";
import { type AddressSet, clientOf, parseTrustedProxies } from "./client-address.ts";
import { errorResponse, isStoreDown } from "./responses.ts";
import { retrySeconds } from "./rate-limit.ts";
import type { HandlerOptions, ServiceRequest, ServiceResponse } from "./types.ts";

export const DEFAULT_AUTH_FAILURE_LIMIT: readonly RateLimit[] = [{ limit: 60, durationMs: 60_000 }];
/** Client addresses counted (or remembered over the limit) at once in process: 10 to 16 MB in all, measured (docs/service.md). */
export const MAX_CLIENTS = 100_000;
export const AUTH_FAILURE_LIMIT_FORM = "<failures>/<duration> like 60/1m (several comma-separated: 10/1s,60/1m), or off";

/**
 * `authFailureLimit` / `--auth-failure-limit`: `60/1m`, several comma-separated, or `off` (also `0`,
 * `false`): null. Undefined is the default, 60 a minute. Throws a USAGE error naming the form.
 */
export function parseAuthFailureLimit(value: string | readonly RateLimit[] | false | undefined): RateLimit[] | null {
  if (value === undefined) return [...DEFAULT_AUTH_FAILURE_LIMIT];
  if (value === false) return null;
  const text = typeof value === "string" ? value.trim().toLowerCase() : null;
  if (text === "off" || text === "0") return null;
  try {
    return text === null ? checkRateLimits(value) : parseRateLimits(text, "--auth-failure-limit");
  } catch (error) {
    const shown = typeof value === "string" ? JSON.stringify([...redactSecrets(value)].slice(0, 40).join("")) : "(a list)";
    const bound = brokenBound(error);
    const why = bound === undefined ? "" : ` (${bound})`;
    throw new ServiceError("USAGE", `Invalid --auth-failure-limit ${shown}${why}: use ${AUTH_FAILURE_LIMIT_FORM}`);
  }
}

/** Throws the USAGE error for a bad `authFailureLimit` or `trustProxy` (`serve` checks them at start). */
export function checkAuthThrottle(options: Pick<HandlerOptions, "authFailureLimit" | "trustProxy">): void {
  parseAuthFailureLimit(options.authFailureLimit);
  if (options.trustProxy) parseTrustedProxies(options.trustProxy);
}

/** 429 for an address over its limit. */
function throttled(limit: { limit: number; windowMs: number }, ms: number): ServiceResponse {
  const retry = retrySeconds(ms);
  return errorResponse(
    429,
    "TOO_MANY_FAILED_AUTHENTICATIONS",
    `Too many failed authentications from this address (at most ${limit.limit} per ${formatWindow(limit.windowMs)}): retry in ${retry} s, with a valid key`,
    { "retry-after": String(retry) },
  );
}

/**
 * `(request, refuse) => response`: the 401 `refuse()` makes, while the request's client is within its
 * limit (the refusal counted), else the 429 without calling it. `refuse` alone when the limit is off.
 */
export function createAuthThrottle(options: Pick<HandlerOptions, "authFailureLimit" | "trustProxy" | "observer" | "store">) {
  const limits = parseAuthFailureLimit(options.authFailureLimit);
  const trusted: AddressSet | null = options.trustProxy ? parseTrustedProxies(options.trustProxy) : null;
  if (!limits) return (_request: ServiceRequest, refuse: () => MaybePromise<ServiceResponse>) => refuse();
  const shared = options.store.rateLimiter?.shared ? options.store.rateLimiter : undefined;
  // Not the store's in-process limiter: addresses rotating through it would push keys' windows out.
  const local = shared ? undefined : createAddressCounts(limits, MAX_CLIENTS);
  const over = shared ? createOverAddresses(limits, MAX_CLIENTS) : undefined;
  const observer = options.observer;
  const judged = (client: string, now: number, verdict: RateVerdict) => {
    if (verdict.allowed) return undefined;
    over?.set(client, verdict, now);
    observer?.authThrottled?.();
    return throttled(verdict, verdict.resetMs);
  };

  return (request: ServiceRequest, refuse: () => MaybePromise<ServiceResponse>): MaybePromise<ServiceResponse> => {
    const client = clientOf(request.remoteAddress, request.headers.get("x-forwarded-for"), trusted);
    const now = Date.now();
    if (local) return judged(client, now, local.hit(client, now)) ?? refuse();
    const known = over!.get(client, now);
    if (known) return observer?.authThrottled?.(), throttled(known, known.ms);
    let counted;
    try {
      counted = shared!.hit(`auth:${client}`, limits, now);
    } catch (error) {
      if (!isStoreDown(error)) throw error;
      return refuse();
    }
    return after(counted, (verdict) => judged(client, now, verdict) ?? refuse(), (error) => {
      // Redis cannot count: the request is refused all the same, as it would be without the throttle
      // (a well-formed key's refusal needs the store, so that is a 503 while Redis is down).
      if (!isStoreDown(error)) throw error;
      return refuse();
    });
  };
}
