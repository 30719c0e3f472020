/**
 * The export format: JSON lines that carry a store's keys (and, optionally, its audit trail) to a file and
 * back into any store, so a backup can be restored and a store moved from files to Redis.
 *
 *   line 1   {"format":"service-api-keys","version":1,"exportedAt":"…","keys":N,"auditEvents":M}
 *   then     {"type":"key","id":…,"name":…,"roles":[…],"permissions":[…],"createdAt":…,"hash":…, …}
 *   then     {"type":"audit","at":…,"action":…,…}        (only with --with-audit)
 *
 * A key line holds everything the store keeps of a key: the SHA-256 of its secret, never the secret, so
 * every secret that worked before an import works after it, and the file alone authenticates nothing.
 * Reading is all or nothing: a line that is not a whole, valid record of this version (unknown fields, a
 * hash that is not one, a role that does not exist, an id or secret twice, a rotated key's old secret
 * included) refuses the whole file, naming the line, before the store is touched.
 */
import type { AuditEvent, StoredKey } from "../core/model.ts";
import { ACTIONS, RESOURCES, ROLES } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, isKeyId, NameSchema, ReasonSchema } from "../core/input.ts";
import * as v from "valibot";
import { isStoredKey } from "./_record.ts";
import { MAX_EXPIRY_MS, MAX_GRACE_MS } from "../core/lifecycle.ts";
import { checkLabels } from "../core/labels.ts";
import { checkAllowFrom } from "../core/allow-from.ts";
import { checkRateLimits } from "../core/rate-limits.ts";
import { storedCreditsProblem } from "../core/credits.ts";
import { auditEventOf } from "./audit.ts";

export const EXPORT_FORMAT = "service-api-keys";
export const EXPORT_VERSION = 1;
const KEY_FIELDS = new Set(["type", "id", "name", "description", "roles", "permissions", "createdAt", "expiresAt", "lastUsedAt", "graceUntil", "retiring", "labels", "hash", "disabled", "disabledReason", "usage", "rateLimits", "credits", "allowFrom"]);
const HEADER_FIELDS = new Set(["format", "version", "exportedAt", "keys", "auditEvents"]);

/** A key read from an export, with the line it came from (for messages). */
export interface ExportedKey {
  line: number;
  record: StoredKey;
}

export interface ExportContents {
  keys: ExportedKey[];
  audit: AuditEvent[];
}

/** The lines of an export of `keys` (and `audit`, if given), each ending in a newline. */
export function* exportLines(keys: readonly StoredKey[], audit?: readonly AuditEvent[], now = new Date()): Generator<string> {
  yield `${JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: now.toISOString(), keys: keys.length, auditEvents: audit?.length ?? 0 })}\n`;
  for (const key of keys) yield `${JSON.stringify({ type: "key", ...key })}\n`;
  for (const event of audit ?? []) yield `${JSON.stringify({ type: "audit", ...event })}\n`;
}

const refuse = (line: number, why: string) => new ServiceError("INVALID_INPUT", `Line ${line} of the import: ${why}; nothing was imported`);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
/** A time as the store writes it (`toISOString`): a date that exists, never one rolled over (2027-02-30). */
const isIso = (value: unknown) => {
  if (typeof value !== "string" || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(value)) return false;
  const ms = Date.parse(value);
  return Number.isFinite(ms) && new Date(ms).toISOString() === value;
};
/** A clock a little ahead of ours wrote the file: tolerated this much. */
const SKEW_MS = 86_400_000;

/** Why the record's times are not ones the store could have written by `now`, or undefined. */
function timeProblem(record: Record<string, unknown>, now: number): string | undefined {
  for (const field of ["createdAt", "expiresAt", "lastUsedAt", "graceUntil"]) {
    if (record[field] !== undefined && !isIso(record[field])) return `${field} is not a time as the store writes it (ISO 8601, UTC, a date that exists)`;
  }
  const at = (field: string) => (record[field] === undefined ? undefined : Date.parse(record[field] as string));
  if (at("createdAt")! > now + SKEW_MS) return "createdAt is in the future";
  if ((at("lastUsedAt") ?? 0) > now + SKEW_MS) return "lastUsedAt is in the future";
  if ((at("expiresAt") ?? 0) > now + MAX_EXPIRY_MS + SKEW_MS) return `expiresAt is more than ${MAX_EXPIRY_MS / 86_400_000} days away`;
  if ((at("graceUntil") ?? 0) > now + MAX_GRACE_MS + SKEW_MS) return "graceUntil is more than 24 hours away: a grace period is at most 24 h";
  const retiring = record.retiring as { until?: unknown } | undefined;
  if (retiring !== undefined && !isIso(retiring.until)) return "retiring.until is not a time as the store writes it (ISO 8601, UTC, a date that exists)";
  if (retiring !== undefined && Date.parse(retiring.until as string) > now + MAX_GRACE_MS + SKEW_MS) return "retiring.until is more than 24 hours away: a grace period is at most 24 h";
  return undefined;
}

/** Why a key line is not a record this version can import, or undefined when it is. */
function keyProblem(value: Record<string, unknown>, now: number): string | undefined {
  const unknown = Object.keys(value).filter((field) => !KEY_FIELDS.has(field));
  if (unknown.length) return `unknown field ${unknown.map((f) => JSON.stringify(f)).join(", ")}`;
  const { type: _type, ...record } = value;
  if (!isKeyId(record.id)) return "the id is not a key id";
  if (typeof record.hash !== "string" || !/^[0-9a-f]{64}$/.test(record.hash)) return "the hash is not a SHA-256 in hex";
  if (!isStoredKey(record, record.id)) return "not a whole key record";
  const named = v.safeParse(NameSchema, record.name);
  if (!named.success || named.output !== record.name) return "the name is not a valid key name";
  if (record.description !== undefined) {
    const described = v.safeParse(DescriptionSchema, record.description);
    if (!described.success) return described.issues[0].message;
  }
  if (record.disabledReason !== undefined && (record.disabled !== true || !v.safeParse(ReasonSchema, record.disabledReason).success)) {
    return "disabledReason is not a valid reason of a disabled key";
  }
  const times = timeProblem(record, now);
  if (times) return times;
  const limits = storedFormProblem(checkRateLimits, record.rateLimits, "rateLimits are not in stored form");
  if (limits) return limits;
  const allowed = storedFormProblem(checkAllowFrom, record.allowFrom, "allowFrom is not in stored form (<address>/<prefix>, host bits cleared)");
  if (allowed) return allowed;
  if (record.credits !== undefined && storedCreditsProblem(record.credits)) return storedCreditsProblem(record.credits);
  const roles = record.roles as string[];
  const permissions = record.permissions as { resource: string; actions: string[] }[];
  const badRole = roles.find((role) => !ROLES.includes(role as never));
  if (badRole !== undefined) return `unknown role ${JSON.stringify(badRole)}`;
  for (const { resource, actions } of permissions) {
    if (!RESOURCES.includes(resource as never)) return `unknown resource ${JSON.stringify(resource)}`;
    const badAction = actions.find((action) => !ACTIONS.includes(action as never));
    if (badAction !== undefined) return `unknown action ${JSON.stringify(badAction)}`;
  }
  if (roles.length + permissions.length === 0) return "a key needs at least one role or permission";
  return storedFormProblem(checkLabels, record.labels, "the labels are not in stored form (sorted keys)");
}

/** Why `value` (absent: fine) is not what `check` makes of it: `check`'s message, or `notStored`. */
function storedFormProblem(check: (value: unknown) => unknown, value: unknown, notStored: string): string | undefined {
  if (value === undefined) return undefined;
  try {
    return JSON.stringify(check(value)) === JSON.stringify(value) ? undefined : notStored;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The header line's problem, or undefined when this version reads the file. */
function headerProblem(value: unknown): string | undefined {
  if (!isObject(value) || value.format !== EXPORT_FORMAT) return `not an export of ${EXPORT_FORMAT} (the first line is its header)`;
  if (typeof value.version !== "number" || !Number.isInteger(value.version) || value.version < 1) return "the header has no valid version";
  if (value.version > EXPORT_VERSION) {
    return `written in format version ${value.version} by a newer service-api; this one reads version ${EXPORT_VERSION}: upgrade it to import this file`;
  }
  const unknown = Object.keys(value).filter((field) => !HEADER_FIELDS.has(field));
  if (unknown.length) return `unknown header field ${unknown.map((f) => JSON.stringify(f)).join(", ")}`;
  return undefined;
}

/**
 * Reads an export, all or nothing: INVALID_INPUT (exit 2) naming the first line that is wrong.
 * @example parseExport(readFileSync("keys.jsonl", "utf8")).keys.length
 */
export function parseExport(text: string, now = Date.now()): ExportContents {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (lines.length === 0) throw refuse(1, "the file is empty");
  const parse = (line: number, raw: string): unknown => {
    try {
      return JSON.parse(raw);
    } catch {
      throw refuse(line, "not a JSON object");
    }
  };
  const header = headerProblem(parse(1, lines[0]));
  if (header) throw refuse(1, header);
  const keys: ExportedKey[] = [];
  const audit: AuditEvent[] = [];
  const ids = new Map<string, number>(), hashes = new Map<string, number>(), names = new Map<string, number>();
  const once = (seen: Map<string, number>, value: string, line: number, what: string) => {
    const first = seen.get(value);
    if (first !== undefined) throw refuse(line, `${what} as line ${first}`);
    seen.set(value, line);
  };
  lines.slice(1).forEach((raw, i) => {
    const line = i + 2;
    const value = parse(line, raw);
    if (!isObject(value)) throw refuse(line, "not a JSON object");
    if (value.type === "audit") {
      const { type: _type, ...rest } = value;
      const event = auditEventOf(rest);
      if (!event) throw refuse(line, "not a whole audit event");
      audit.push(event);
      return;
    }
    if (value.type !== "key") throw refuse(line, `unknown line type ${JSON.stringify(value.type)}`);
    const problem = keyProblem(value, now);
    if (problem) throw refuse(line, problem);
    const { type: _type, ...record } = value as unknown as StoredKey & { type: string };
    once(ids, record.id, line, "the same id");
    // A rotated key's old secret is a secret too: one per key, in the whole file, and never the key's own.
    if (record.retiring?.hash === record.hash) throw refuse(line, "the retiring secret (hash) is the key's own");
    for (const hash of [record.hash, ...(record.retiring ? [record.retiring.hash] : [])]) once(hashes, hash, line, "the same secret (hash)");
    // A name holds one live key and at most one in its grace period.
    once(names, `${record.graceUntil ? "grace" : "live"}:${record.name}`, line, `the same ${record.graceUntil ? "grace-period " : ""}name`);
    keys.push({ line, record });
  });
  return { keys, audit };
}
