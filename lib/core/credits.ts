/**
 * Credits of a key: how many more requests it may make (each authenticated request costs 1), with an
 * optional refill that sets the count back to `amount` at the start of each UTC day or month (Unkey's
 * semantics: a refill sets, it does not add). As typed (`--credits 1000 --refill 1000/day`), as shown
 * (`{ remaining, refill: { amount, interval } }`) and as stored (with `setAt`, when an operator last set
 * them, and `refilledAt`, the start of the period the count belongs to). One checker serves the CLI,
 * GraphQL, the store's input check and imports (INVALID_INPUT, exit 2).
 */
import { ServiceError } from "./errors.ts";
import { redactSecrets } from "./secret.ts";

export const REFILL_INTERVALS = ["day", "month"] as const;
export type RefillInterval = (typeof REFILL_INTERVALS)[number];

export interface CreditRefill {
  /** What `remaining` becomes at the start of each period: 1 to 1,000,000,000. */
  amount: number;
  /** `day`: each UTC midnight; `month`: each 1st of the month, 00:00 UTC. */
  interval: RefillInterval;
}

/** A key's credits as shown and as given to create or update. */
export interface Credits {
  /** Requests the key may still make: 0 to 1,000,000,000; at 0 it is refused (429, USAGE_EXCEEDED). */
  remaining: number;
  refill?: CreditRefill;
}

/** As stored in the key's record. */
export interface StoredCredits extends Credits {
  /** When an operator last set them (create, update, import): a counter of another setting is stale. */
  setAt: string;
  /** The start of the refill period `remaining` belongs to; absent: the one holding `setAt`. */
  refilledAt?: string;
}

export const MAX_CREDITS = 1_000_000_000;
export const CREDITS_FORM = "a whole number of requests, 0 to 1,000,000,000, like 1000";
export const REFILL_FORM = "<amount>/<day|month>, like 1000/day or 50000/month (amount 1 to 1,000,000,000)";

const invalid = (message: string) => new ServiceError("INVALID_INPUT", message);
const shown = (value: unknown) => JSON.stringify([...redactSecrets(String(value))].slice(0, 40).join(""));
const isAmount = (n: unknown, min: number): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= min && n <= MAX_CREDITS;

/** `--credits`'s value. @example parseCredits("1000") // 1000 */
export function parseCredits(text: unknown, flag = "--credits"): number {
  const value = String(text ?? "").trim();
  const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!isAmount(n, 0)) throw invalid(`${flag} needs ${CREDITS_FORM} (got ${shown(text)})`);
  return n;
}

/** `--refill`'s value. @example parseRefill("1000/day") // { amount: 1000, interval: "day" } */
export function parseRefill(text: unknown, flag = "--refill"): CreditRefill {
  const match = /^\s*(\d{1,10})\s*\/\s*(day|month)\s*$/.exec(String(text ?? ""));
  const amount = match ? Number(match[1]) : NaN;
  if (!match || !isAmount(amount, 1)) throw invalid(`${flag} needs ${REFILL_FORM} (got ${shown(text)})`);
  return { amount, interval: match[2] as RefillInterval };
}

/** Credits as sent (GraphQL, the library, an import): `{ remaining, refill?: { amount, interval } }`. */
export function checkCredits(value: unknown): Credits {
  const { remaining, refill } = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  if (!isAmount(remaining, 0)) throw invalid(`credits.remaining must be ${CREDITS_FORM}`);
  if (refill == null) return { remaining };
  const { amount, interval } = (typeof refill === "object" ? refill : {}) as Record<string, unknown>;
  if (!isAmount(amount, 1) || !REFILL_INTERVALS.includes(interval as RefillInterval)) {
    throw invalid(`credits.refill needs an amount (1 to 1,000,000,000) and an interval (day or month)`);
  }
  return { remaining, refill: { amount, interval: interval as RefillInterval } };
}

/** The start (ms, UTC) of the refill period holding `now`. */
export function periodStart(interval: RefillInterval, now: number): number {
  const d = new Date(now);
  return interval === "day" ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** When (ms) the refill period after the one starting at `start` begins. */
export function nextPeriod(interval: RefillInterval, start: number): number {
  const d = new Date(start);
  return interval === "day" ? start + 86_400_000 : Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** The period (ms) stored credits' `remaining` belongs to. */
export const periodOf = (credits: StoredCredits): number => {
  const at = Date.parse(credits.refilledAt ?? credits.setAt);
  return credits.refill ? periodStart(credits.refill.interval, at) : at;
};

/** Stored credits as they stand at `now`: refilled when a period began since they were set or refilled. */
export function creditsAt(credits: StoredCredits, now: number): StoredCredits {
  if (!credits.refill) return credits;
  const start = periodStart(credits.refill.interval, now);
  if (start <= periodOf(credits)) return credits;
  return { ...credits, remaining: credits.refill.amount, refilledAt: new Date(start).toISOString() };
}

/** What is shown of stored credits at `now` (the refill applied, the bookkeeping left out). */
export function creditsView(credits: StoredCredits, now = Date.now()): Credits {
  const { remaining, refill } = creditsAt(credits, now);
  return refill ? { remaining, refill: { ...refill } } : { remaining };
}

/**
 * Credits given (create, update, import) as stored from `now`: a new setting. Its `setAt` names it, so it
 * differs from the `replaced` setting's even within one millisecond (a count of that one is stale then).
 */
export const storedCredits = (credits: Credits, now: number, replaced?: StoredCredits): StoredCredits => {
  const last = replaced ? Date.parse(replaced.setAt) : -Infinity;
  return {
    remaining: credits.remaining,
    ...(credits.refill ? { refill: { ...credits.refill } } : {}),
    setAt: new Date(now > last ? now : last + 1).toISOString(),
  };
};

/** Credits as the list shows them: `42`, `42 (1000/day)`; "" for none. */
export const formatCredits = (credits: Credits | undefined): string =>
  credits ? `${credits.remaining}${credits.refill ? ` (${credits.refill.amount}/${credits.refill.interval})` : ""}` : "";

/** Why `value` is not credits as the store writes them (a record read, an import), or undefined. */
export function storedCreditsProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "credits are not an object";
  const { remaining, refill, setAt, refilledAt, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length) return `credits have an unknown field ${JSON.stringify(Object.keys(rest)[0])}`;
  try {
    checkCredits({ remaining, refill });
  } catch (error) {
    return (error as Error).message;
  }
  const isTime = (t: unknown) => typeof t === "string" && Number.isFinite(Date.parse(t));
  if (!isTime(setAt) || (refilledAt !== undefined && !isTime(refilledAt))) return "credits.setAt and credits.refilledAt must be ISO 8601 times";
  return undefined;
}
