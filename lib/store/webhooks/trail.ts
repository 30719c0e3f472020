/**
 * The one place the webhook worker reads the audit trail (kept small so a change of the trail's read API,
 * paging by position, touches nothing else): the events at or after an instant, oldest first.
 */
import type { AuditEvent } from "../../core/model.ts";
import type { KeyStore } from "../types.ts";

/** The trail's events at or after `sinceMs`, oldest first. */
export function readTrailSince(store: Pick<KeyStore, "audit">, sinceMs: number): Promise<AuditEvent[]> {
  return store.audit({ since: Math.max(0, sinceMs) });
}
