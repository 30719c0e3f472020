/**
 * The events a webhook carries, made from the audit trail's events (the trail is the outbox: each change
 * appends its event in the same step that makes it, see ../audit.ts). A message has the id every attempt
 * to deliver it sends as `webhook-id`, derived from the audit event itself, so a redelivery (after a
 * failure, or a server killed mid-delivery) carries the same id and a receiver can drop the duplicate.
 * The body is `{type, timestamp, data}` with the key's id and name and what changed: never a secret.
 */
import type { AuditAction, AuditEvent } from "../../core/model.ts";
import { ServiceError } from "../../core/errors.ts";
import { sha256Hex } from "../../core/secret.ts";

export const WEBHOOK_EVENT_TYPES = [
  "key.created", "key.updated", "key.rotated", "key.disabled", "key.enabled", "key.deleted", "key.expiring", "key.expired",
  "key.credits_low", "key.retired_secret_used", "key.leaked", "webhook.test",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const TYPE_OF: Record<AuditAction, WebhookEventType> = {
  create: "key.created",
  overwrite: "key.created",
  import: "key.created",
  update: "key.updated",
  rotate: "key.rotated",
  disable: "key.disabled",
  enable: "key.enabled",
  delete: "key.deleted",
  prune: "key.deleted", // an expired key removed; key.expired itself is sent at its expiry (http/webhooks/expiry.ts)
  reuse: "key.retired_secret_used",
};

/** One message: what is sent (`body`) and how it is known (`id`, `at` in ms: the change's time). */
export interface WebhookMessage {
  id: string;
  type: WebhookEventType;
  at: number;
  body: string;
}

/** The body of a message: `{type, timestamp, data}`. */
export function messageBody(type: WebhookEventType, at: string, data: Record<string, unknown>): string {
  return JSON.stringify({ type, timestamp: at, data });
}

/** What a message tells of its audit event: the key, the change, who made it; never a secret nor a hash. */
function dataOf(event: AuditEvent): Record<string, unknown> {
  return {
    id: event.id,
    name: event.name,
    action: event.action,
    actor: event.actor,
    ...(event.changed ? { changed: event.changed } : {}),
    ...(event.replaced ? { replaced: event.replaced } : {}),
    ...(event.action === "prune" ? { expired: true } : {}),
    ...(event.reason ? { reason: event.reason } : {}),
  };
}

/**
 * The messages of `events` (oldest first, as the trail gives them). Two events alike in every field get
 * ids apart by their order among themselves; events alike share the same time, so any read of the trail
 * from a time on sees all of them or none, and numbers them alike.
 */
export function messagesOf(events: readonly AuditEvent[]): WebhookMessage[] {
  const seen = new Map<string, number>();
  return events.map((event) => {
    const digest = sha256Hex(JSON.stringify(event)).slice(0, 32);
    const n = (seen.get(digest) ?? 0) + 1;
    seen.set(digest, n);
    // `apikey --scan --revoke` deletes a leaked key and says so in the event's reason (cli/scan.ts).
    const type = event.action === "delete" && event.reason?.startsWith("leaked:") ? "key.leaked" : TYPE_OF[event.action];
    return { id: `msg_${digest}${n > 1 ? `_${n}` : ""}`, type, at: Date.parse(event.at), body: messageBody(type, event.at, dataOf(event)) };
  });
}

/** A `webhook.test` message for the endpoint `endpointId`: a fresh id each time. */
export function testMessage(endpointId: string, now: number): WebhookMessage {
  const at = new Date(now).toISOString();
  return { id: `msg_test_${crypto.randomUUID().replaceAll("-", "")}`, type: "webhook.test", at: now, body: messageBody("webhook.test", at, { endpoint: endpointId }) };
}

/** Event types from `--events` (comma-separated, blanks and duplicates ignored); empty means all. */
export function parseEventTypes(text: string | undefined): WebhookEventType[] | undefined {
  if (text === undefined) return undefined;
  const wanted = [...new Set(text.split(",").map((t) => t.trim().toLowerCase()).filter(Boolean))];
  const unknown = wanted.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw new ServiceError("INVALID_INPUT", `Unknown event type '${unknown[0]}'. Valid types: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
  return wanted as WebhookEventType[];
}
