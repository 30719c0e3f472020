/**
 * No un-metering: a key with credits or rate limits (a metered key) may not give a key, itself included,
 * more use than it has itself, as no key may grant permissions it lacks (`policy.ts`'s `escalation`).
 * "More", for each control the caller has (a control it lacks it is not held to):
 *
 * - credits: the key given must have credits, no more remaining than the caller has left, and a refill
 *   only if the caller has one, of no larger amount and no shorter interval (a month's refill is less than
 *   a day's of the same amount);
 * - rate limits: each of the caller's limits must be matched by one of the key's allowing no more requests
 *   over a window no shorter (`10/1s` is matched by `5/1s` or `10/1m`, not by `20/1s` nor `10/500ms`), so
 *   none of them may be removed.
 *
 * A key with neither (unmetered) may give anything its permissions let it.
 */
import type { Credits, RefillInterval } from "./credits.ts";
import { formatRateLimits, formatWindow, type RateLimit } from "./rate-limits.ts";

/** A key's usage controls; `credits.remaining` is what it has left now. */
export interface Metering {
  credits?: Credits | null;
  rateLimits?: readonly RateLimit[] | null;
}

const PERIOD: Record<RefillInterval, number> = { day: 1, month: 31 };

/** What `given` (credits: null or absent for none) needs so as not to exceed `caller`'s credits, or []. */
export function creditEscalation(caller: Credits | null | undefined, given: Credits | null | undefined): string[] {
  if (!caller) return [];
  const needs = !given || given.remaining > caller.remaining ? [`credits, at most the ${caller.remaining} this key has left`] : [];
  const refill = given?.refill;
  const own = caller.refill;
  if (refill && !own) needs.push("no refill (this key has none)");
  else if (refill && own && (refill.amount > own.amount || PERIOD[refill.interval] < PERIOD[own.interval])) {
    needs.push(`a refill no larger nor more frequent than this key's ${own.amount}/${own.interval}`);
  }
  return needs;
}

/** What `given` (none: null, absent or []) needs so as not to be looser than `caller`'s rate limits, or []. */
export function rateLimitEscalation(caller: readonly RateLimit[] | null | undefined, given: readonly RateLimit[] | null | undefined): string[] {
  const unmatched = (caller ?? []).filter((own) => !(given ?? []).some((l) => l.limit <= own.limit && l.durationMs >= own.durationMs));
  return unmatched.map((own) => `a rate limit at least as strict as this key's ${formatRateLimits([own])} (at most ${own.limit} requests per ${formatWindow(own.durationMs)} or longer)`);
}

/** What `given` needs so as not to exceed `caller`'s controls (each a phrase: "it needs …"), or []. */
export function meteringEscalation(caller: Metering, given: Metering): string[] {
  return [...creditEscalation(caller.credits, given.credits), ...rateLimitEscalation(caller.rateLimits, given.rateLimits)];
}
