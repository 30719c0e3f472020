/**
 * Times in a key's life, as people type them: durations (`45s`, `30m`, `12h`, `7d`) and ISO 8601
 * instants. One parser serves the CLI flags, GraphQL inputs and the library, so all three accept
 * exactly the same things and refuse the same things with the same messages (INVALID_INPUT, exit 2).
 */
import { ServiceError } from "./errors.ts";
import { redactSecrets } from "./secret.ts";

// A week is 7 days and a year 365 (not calendar units: `1y` from 29 February is 28 February next year).
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 } as const;
const DURATION = /^(\d{1,7})([smhdwy])$/;
/** The longest expiry: ten years. Longer reads as a typo (`--expires-in 36500d`), and a key without `--expires-*` never expires. */
export const MAX_EXPIRY_MS = 3650 * UNIT_MS.d;
/** The longest grace period of an overwrite. */
export const MAX_GRACE_MS = UNIT_MS.d;

// A date (`2026-12-01`, midnight UTC), or a date and time with seconds optional, fraction optional, and a zone
// (`Z` or `+02:00`): a time without a zone would mean different instants on different hosts.
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|([+-])(\d{2}):?(\d{2})))?$/i;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/**
 * True when every field of a matched ISO time names something that exists: Date.parse rolls 2027-02-30
 * over to March 2nd, and takes +15:00 as an offset, where a person has made a typo.
 */
function isRealTime(m: RegExpExecArray): boolean {
  const [y, mo, d, h = 0, mi = 0, sec = 0, , , oh = 0, om = 0] = m.slice(1).map((x) => (x === undefined || /^[Z+-]$/i.test(x) ? undefined : Number(x)));
  if (mo! < 1 || mo! > 12 || d! < 1) return false;
  if (d! > (mo === 2 && isLeap(y!) ? 29 : DAYS[mo! - 1])) return false;
  return h! <= 23 && mi! <= 59 && sec! <= 59 && oh! <= 14 && om! <= 59 && (oh! < 14 || om === 0);
}

/**
 * A duration in milliseconds: a whole number and one unit, s, m, h, d, w (7 days) or y (365 days).
 * @example parseDuration("90d", "--expires-in") // 7776000000
 */
export function parseDuration(text: unknown, flag: string): number {
  const match = typeof text === "string" ? DURATION.exec(text.trim()) : null;
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : 0;
  if (!match || ms <= 0) {
    throw new ServiceError("INVALID_INPUT", `${flag} needs a duration like 45s, 30m, 12h or 7d (got '${String(text ?? "")}')`);
  }
  return ms;
}

const INSTANT_FORM = "an ISO 8601 time with its zone, like 2026-12-31T18:00:00Z or 2026-12-31";

/**
 * An ISO 8601 instant in milliseconds; the zone is required with a time. `forms` says what the flag takes,
 * for the message of a value that is none of them.
 */
export function parseInstant(text: unknown, flag: string, forms = INSTANT_FORM): number {
  const value = typeof text === "string" ? text.trim() : "";
  const match = ISO_TIME.exec(value);
  if (match && !isRealTime(match)) {
    throw new ServiceError("INVALID_INPUT", `${flag}: '${value}' is not a real date and time (no such day, hour or zone offset; leap seconds are not taken)`);
  }
  const ms = match ? Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value) : NaN;
  if (!Number.isFinite(ms)) {
    throw new ServiceError(
      "INVALID_INPUT",
      `${flag} needs ${forms} (got '${redactSecrets(String(text ?? ""))}')`,
    );
  }
  return ms;
}

/**
 * The expiry of a new or updated key, as stored (ISO 8601 UTC): from `--expires-in` or `--expires-at`
 * (not both). Refuses an instant that is not in the future, or more than ten years away.
 * @example expiryFrom({ expiresIn: "1h" }, Date.now()) // "2026-11-22T23:00:00.000Z"
 */
export function expiryFrom(given: { expiresIn?: unknown; expiresAt?: unknown }, now: number): string | undefined {
  const { expiresIn, expiresAt } = given;
  if (expiresIn !== undefined && expiresAt !== undefined) {
    throw new ServiceError("INVALID_INPUT", "Give --expires-in or --expires-at, not both");
  }
  if (expiresIn !== undefined) return checkExpiry(now + parseDuration(expiresIn, "--expires-in"), now, "--expires-in");
  if (expiresAt !== undefined) return checkExpiry(parseInstant(expiresAt, "--expires-at"), now, "--expires-at");
  return undefined;
}

/** An expiry given as an ISO 8601 string (GraphQL, the library), checked like `--expires-at`. */
export function checkExpiresAt(value: unknown, now: number): string {
  return checkExpiry(parseInstant(value, "expiresAt"), now, "expiresAt");
}

function checkExpiry(at: number, now: number, flag: string): string {
  if (at <= now) {
    throw new ServiceError("INVALID_INPUT", `${flag}: ${new Date(at).toISOString()} is not in the future`);
  }
  if (at - now > MAX_EXPIRY_MS) throw new ServiceError("INVALID_INPUT", `${flag}: an expiry is at most 3650 days away`);
  return new Date(at).toISOString();
}

/** A grace period for an overwrite, in milliseconds: a duration of at most 24 hours. */
export function parseGrace(text: unknown): number {
  const ms = parseDuration(text, "--grace");
  if (ms > MAX_GRACE_MS) throw new ServiceError("INVALID_INPUT", "--grace is at most 24h");
  return ms;
}

/**
 * The start of an audit query: a duration back from now (`7d`) or an instant.
 * @example parseSince("1h", now) // now - 3600000
 */
export function parseSince(text: unknown, now: number, flag = "--since"): number {
  if (typeof text === "string" && DURATION.test(text.trim())) return now - parseDuration(text, flag);
  return parseInstant(text, flag, "a duration back from now (45s, 30m, 12h, 7d) or an ISO 8601 time with its zone, like 2026-12-31T18:00:00Z");
}

/** Milliseconds since the epoch for a stored ISO time, Infinity when absent (never). */
export const untilOf = (iso: string | undefined): number => (iso ? Date.parse(iso) : Infinity);

/**
 * Where a key is in its life: working, past its expiry or grace period, replaced but in its grace period,
 * or disabled (refused until enabled again).
 */
export type KeyState = "active" | "expired" | "grace" | "disabled";
export const KEY_STATES: readonly KeyState[] = ["active", "expired", "grace", "disabled"];

/** A key's state at `now` (ms): expired once its expiry or its grace period has passed, else disabled while it is. */
export function keyState(key: { expiresAt?: string; graceUntil?: string; disabled?: boolean }, now: number): KeyState {
  if (Math.min(untilOf(key.expiresAt), untilOf(key.graceUntil)) <= now) return "expired";
  if (key.disabled) return "disabled";
  return key.graceUntil ? "grace" : "active";
}
