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
 *   none of them may be removed; a key setting its own limits keeps each window (`10/1s` by `5/1s`, not by
 *   `10/1m`), as its counts are kept per window length and a new window would begin with none spent.
 *
 * Credits a key sets itself have no such gap: their count is the number set (no more than it has left)
 * and a refill happens at the start of a UTC day or month whenever they were set.
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
function creditEscalation(caller: Credits | null | undefined, given: Credits | null | undefined): string[] {
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

/**
 * What `given` (none: null, absent or []) needs so as not to be looser than `caller`'s rate limits, or [].
 * `own`: the caller sets its own limits, whose counts are kept per window length, so each of its limits
 * must be matched over the very same window (a longer one would start an empty count, a fresh allowance).
 */
function rateLimitEscalation(caller: readonly RateLimit[] | null | undefined, given: readonly RateLimit[] | null | undefined, own = false): string[] {
  const window = (l: RateLimit, mine: RateLimit) => own ? l.durationMs === mine.durationMs : l.durationMs >= mine.durationMs;
  const unmatched = (caller ?? []).filter((mine) => !(given ?? []).some((l) => l.limit <= mine.limit && window(l, mine)));
  return unmatched.map((mine) =>
    own
      ? `a rate limit as strict as its own ${formatRateLimits([mine])} over the same window (at most ${mine.limit} requests per ${formatWindow(mine.durationMs)}): a key's counts are kept per window, so over another one its count would start afresh`
      : `a rate limit at least as strict as this key's ${formatRateLimits([mine])} (at most ${mine.limit} requests per ${formatWindow(mine.durationMs)} or longer)`
  );
}

/**
 * What `given` needs so as not to exceed `caller`'s controls (each a phrase: "it needs …"), or [];
 * `own` when the caller sets its own (see `rateLimitEscalation`).
 */
export function meteringEscalation(caller: Metering, given: Metering, own = false): string[] {
  return [...creditEscalation(caller.credits, given.credits), ...rateLimitEscalation(caller.rateLimits, given.rateLimits, own)];
}
