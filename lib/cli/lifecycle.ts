/**
 * The key-lifecycle side of `apikey`: the values of --expires-in/--expires-at/--no-expiry, --grace,
 * --since and --limit (checked before any store is opened, exit 2 when wrong), `--delete --expired`
 * and `--audit`. The parsers are lib/core/lifecycle.ts's, so the CLI, GraphQL and the library accept
 * and refuse the same things with the same messages.
 */
import { ServiceError } from "../core/errors.ts";
import { expiryFrom, parseGrace, parseSince } from "../core/lifecycle.ts";
import type { CliBackend } from "./command.ts";
import type { ApikeyFlags } from "./flags.ts";
import { formatDeleted, type Output } from "./format.ts";
import { type ListView, stdoutView } from "./list.ts";
import { formatAudit } from "./audit-format.ts";
import { terminalText } from "./table.ts";

export interface LifecycleValues {
  /** The expiry to set (create, update), as stored. */
  expiresAt?: string;
  /** update --no-expiry: the key never expires again. */
  clearExpiry: boolean;
  /** create --overwrite --grace: how long the replaced secret keeps working. */
  graceMs?: number;
  /** audit --since, in ms since the epoch. */
  since?: number;
  /** audit --limit. */
  limit?: number;
}

/**
 * The lifecycle flags' values at `now`, or INVALID_INPUT (exit 2) naming the flag: a past or unparsable
 * expiry, a grace period over 24 h, a bad --since or --limit.
 * @example lifecycleValues({ create: true, expiresIn: "1h" }, Date.now()).expiresAt // "2026-11-22T23:00:00.000Z"
 */
export function lifecycleValues(flags: ApikeyFlags, now: number): LifecycleValues {
  const limit = flags.limit === undefined ? undefined : String(flags.limit).trim();
  if (limit !== undefined && !/^[1-9]\d{0,8}$/.test(limit)) {
    throw new ServiceError("INVALID_INPUT", `--limit needs a whole number of events, 1 or more (got '${limit.slice(0, 20)}')`);
  }
  return {
    expiresAt: expiryFrom({ expiresIn: flags.expiresIn, expiresAt: flags.expiresAt }, now),
    clearExpiry: flags.expiry === false,
    graceMs: flags.grace === undefined ? undefined : parseGrace(flags.grace),
    since: flags.since === undefined ? undefined : parseSince(flags.since, now),
    limit: limit === undefined ? undefined : Number(limit),
  };
}

/**
 * `--delete --expired`: removes every key whose expiry or grace period has passed, in the delete shape.
 * A sweep that finds nothing is no failure: exit 0, `{"deleted":0,"keys":[]}`.
 */
export async function deleteExpired(store: CliBackend, asJson: boolean): Promise<Output> {
  const removed = await store.deleteExpired();
  if (removed.length === 0 && !asJson) return { notice: "No expired API keys; nothing was deleted", exitCode: 0 };
  const output = formatDeleted(removed, asJson);
  if (asJson) return output;
  const names = removed.slice(0, 10).map((key) => `'${terminalText(key.name)}'`).join(", ");
  return { ...output, notice: `Expired: ${names}${removed.length > 10 ? `, and ${removed.length - 10} more` : ""}` };
}

/** `--audit [--since] [--limit]`: the trail, oldest first. */
export async function showAudit(store: CliBackend, values: LifecycleValues, asJson: boolean, view?: ListView): Promise<Output> {
  const events = await store.audit({ since: values.since, limit: values.limit });
  return formatAudit(events, asJson, view ?? stdoutView());
}
