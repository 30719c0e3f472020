/**
 * The key-lifecycle modes of `apikey`: `--delete --expired` and `--audit`. The values of their flags
 * (and of --expires-in/--expires-at/--no-expiry and --grace) are read in ./flags.ts, before any store
 * is opened.
 */
import type { CliBackend } from "./command.ts";
import type { LifecycleValues } from "./flags.ts";
import { formatDeleted, type Output } from "./format-results.ts";
import { type ListView, stdoutView } from "./list.ts";
import { formatAudit } from "./audit-format.ts";
import { terminalText } from "./table.ts";

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
