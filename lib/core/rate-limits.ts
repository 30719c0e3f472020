/**
 * Rate limits of a key: at most `limit` requests per window of `durationMs`, as people type them
 * (`10/1s`, `1000/1h`, several comma-separated) and as stored (`{ limit, durationMs }`, shortest window
 * first). One checker serves the CLI, GraphQL, the store's input check and imports, so all refuse the
 * same things with the same messages (INVALID_INPUT, exit 2).
 */
import { ServiceError } from "./errors.ts";
import { parseDuration } from "./lifecycle.ts";
import { redactSecrets } from "./secret.ts";

export interface RateLimit {
  /** Requests allowed per window: 1 to 1,000,000. */
  limit: number;
  /** The window, in whole seconds (ms), 1 s to 30 days. */
  durationMs: number;
}

export const MAX_RATE_LIMIT = 1_000_000;
export const MAX_RATE_WINDOW_MS = 30 * 86_400_000;
/** Limits one key can have: one per window, and few enough that each request checks them cheaply. */
export const MAX_RATE_LIMITS = 5;
export const RATE_LIMIT_FORM = "<requests>/<duration>, like 10/1s or 1000/1h (several comma-separated: 10/1s,1000/1h)";

/**
 * A refused rate limit (INVALID_INPUT). `bound` is set when the form was right but a number broke a
 * bound ("the window is whole seconds, 1s to 30d"), so a caller with its own form message (the
 * failed-authentication limit) can add just that; unset when the text was not in the form at all.
 */
export class RateLimitError extends ServiceError {
  readonly bound: string | undefined;
  constructor(message: string, bound?: string) {
    super("INVALID_INPUT", message);
    this.bound = bound;
  }
}

/** The bound a rate limit broke, if `error` is a RateLimitError for one (from any copy of this module). */
export const brokenBound = (error: unknown): string | undefined =>
  error instanceof Error && typeof (error as { bound?: unknown }).bound === "string" ? (error as RateLimitError).bound : undefined;

const invalid = (message: string) => new RateLimitError(message);
const outOfBounds = (shown: string, bound: string) => new RateLimitError(`Rate limit ${shown}: ${bound}`, bound);
const ENTRY = /^\s*(\d{1,9})\s*\/\s*(\S+)\s*$/;

/** One limit's numbers checked: 1 to 1,000,000 requests per 1 s to 30 d (whole seconds). */
function checkOne(limit: number, durationMs: number, shown: string): RateLimit {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RATE_LIMIT) {
    throw outOfBounds(shown, `the number of requests is 1 to ${MAX_RATE_LIMIT.toLocaleString("en-US")} per window`);
  }
  if (!Number.isSafeInteger(durationMs) || durationMs < 1_000 || durationMs > MAX_RATE_WINDOW_MS || durationMs % 1_000 !== 0) {
    throw outOfBounds(shown, "the window is whole seconds, 1s to 30d");
  }
  return { limit, durationMs };
}

/** Sorted by window, one limit per window, at most MAX_RATE_LIMITS. */
function settled(limits: RateLimit[]): RateLimit[] {
  if (limits.length > MAX_RATE_LIMITS) throw new RateLimitError(`A key has at most ${MAX_RATE_LIMITS} rate limits`, `at most ${MAX_RATE_LIMITS} limits`);
  limits.sort((a, b) => a.durationMs - b.durationMs);
  for (let i = 1; i < limits.length; i++) {
    if (limits[i].durationMs === limits[i - 1].durationMs) {
      const window = formatWindow(limits[i].durationMs);
      throw new RateLimitError(`Two rate limits for the same window (${window}): give one`, `two limits for the same window (${window})`);
    }
  }
  return limits;
}

/**
 * `--rate-limit`'s value: `n/duration[,n/duration...]`.
 * @example parseRateLimits("10/1s,1000/1h") // [{ limit: 10, durationMs: 1000 }, { limit: 1000, durationMs: 3600000 }]
 */
export function parseRateLimits(text: unknown, flag = "--rate-limit"): RateLimit[] {
  const value = typeof text === "string" ? text : "";
  const parts = value.split(",");
  const shown = JSON.stringify([...redactSecrets(value)].slice(0, 40).join(""));
  return settled(parts.map((part) => {
    const match = ENTRY.exec(part);
    if (!match) throw invalid(`${flag} needs ${RATE_LIMIT_FORM} (got ${shown})`);
    let durationMs: number;
    try {
      durationMs = parseDuration(match[2], flag);
    } catch {
      throw invalid(`${flag} needs ${RATE_LIMIT_FORM} (got ${shown})`);
    }
    return checkOne(Number(match[1]), durationMs, part.trim());
  }));
}

/** Rate limits as stored or sent (GraphQL, the library, an import): `[{ limit, durationMs }]`; [] means none. */
export function checkRateLimits(value: unknown): RateLimit[] {
  if (!Array.isArray(value)) throw invalid("rateLimits must be a list of { limit, durationMs }");
  return settled(value.map((entry) => {
    const { limit, durationMs } = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
    if (typeof limit !== "number" || typeof durationMs !== "number") throw invalid("Each rate limit needs a limit and a durationMs (numbers)");
    return checkOne(limit, durationMs, `${limit}/${durationMs}ms`);
  }));
}

/** A window as typed: `1s`, `1m`, `1h`, `1d`, in the largest unit that divides it. */
export function formatWindow(ms: number): string {
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms / 1_000}s`;
}

/** Rate limits as `--rate-limit` takes them: `10/1s,1000/1h`; "" for none. */
export const formatRateLimits = (limits: readonly RateLimit[] | undefined): string =>
  (limits ?? []).map((l) => `${l.limit}/${formatWindow(l.durationMs)}`).join(",");
