/**
 * The shape of a stored key record, checked on every read: a record truncated by a crash of another
 * program, edited by hand or written by a foreign tool must read as no key, never crash a listing or
 * reach the access checks half-formed. Structural only (types, the id it is stored under, the hash's
 * form), a few microseconds per record; what values are allowed was checked when it was written.
 */
import type { ApiKeyInfo, StoredKey } from "../core/model.ts";
import { storedCreditsProblem } from "../core/credits.ts";

const HASH = /^[0-9a-f]{64}$/;
const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === "string");
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
/** An optional time field: absent, or an ISO string that parses (a hand-edited "soon" must not read as "never"). */
const isTime = (value: unknown) => value === undefined || (typeof value === "string" && Number.isFinite(Date.parse(value)));

/** Absent, or `{ total, days: { "YYYY-MM-DD": count } }` with whole counts. */
const isCount = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
const DAY = /^\d{4}-\d\d-\d\d$/;
const isUsage = (value: unknown) =>
  value === undefined || (isObject(value) && isCount(value.total) && isObject(value.days) && !Array.isArray(value.days) &&
    Object.entries(value.days).every(([day, count]) => DAY.test(day) && isCount(count)));

/** Absent, or `[{ limit, durationMs }]` with whole positive numbers (their bounds were checked when written). */
const isRateLimits = (value: unknown) =>
  value === undefined || (Array.isArray(value) && value.every((l) => isObject(l) && isCount(l.limit) && isCount(l.durationMs) && l.limit !== 0 && l.durationMs !== 0));

/** Absent, or `{ hash, until }`: a rotated key's old secret and when it stops. */
const isRetiring = (value: unknown) =>
  value === undefined || (isObject(value) && typeof value.hash === "string" && HASH.test(value.hash) && typeof value.until === "string" && isTime(value.until));

/** True when `value` is a whole key record stored under `id`. */
export function isStoredKey(value: unknown, id: string): value is StoredKey {
  if (!isObject(value)) return false;
  const { name, description, roles, permissions, createdAt, hash, expiresAt, lastUsedAt, graceUntil, labels, disabled, disabledReason } = value;
  return value.id === id && typeof name === "string" && (description === undefined || typeof description === "string") &&
    isTime(expiresAt) && isTime(lastUsedAt) && isTime(graceUntil) && (disabled === undefined || disabled === true) &&
    (disabledReason === undefined || typeof disabledReason === "string") && isUsage(value.usage) && isRateLimits(value.rateLimits) && isRetiring(value.retiring) &&
    (value.credits === undefined || storedCreditsProblem(value.credits) === undefined) &&
    (value.allowFrom === undefined || isStrings(value.allowFrom)) &&
    (labels === undefined || (isObject(labels) && !Array.isArray(labels) && Object.values(labels).every((v) => typeof v === "string"))) &&
    isStrings(roles) && typeof createdAt === "string" && typeof hash === "string" && HASH.test(hash) &&
    Array.isArray(permissions) && permissions.every((p) => isObject(p) && typeof p.resource === "string" && isStrings(p.actions));
}

/** The secret's hash a malformed record still names, if any: its secrets entry can then be removed too. */
export function hashOf(value: unknown): string | undefined {
  const hash = isObject(value) ? value.hash : undefined;
  return typeof hash === "string" && HASH.test(hash) ? hash : undefined;
}

/** What can be said of a key whose record is malformed, for a delete's answer: its id and name. */
export function salvaged(id: string, name: string): ApiKeyInfo {
  return { id, name, roles: [], permissions: [], createdAt: "" };
}
