/**
 * What an endpoint still has to receive: the messages of the trail after its cursor that it asked for.
 * The worker delivers them; doctor and /metrics count them. The backlog is bounded by the trail itself
 * (capped: 100,000 events on Redis, rotated files on disk), never by a queue of its own.
 */
import type { KeyStore } from "../types.ts";
import type { WebhookEndpoint } from "./endpoints.ts";
import { messagesOf, type WebhookEventType, type WebhookMessage } from "./events.ts";
import { type DeliveryAttempt, type DeliveryState, readFrom } from "./state.ts";
import { readTrailSince } from "./trail.ts";

/** Whether the endpoint asked for this event type (none named: all). */
export const wants = (endpoint: WebhookEndpoint, type: WebhookEventType): boolean => !endpoint.events.length || endpoint.events.includes(type);

/** The messages of `messages` not finished for the endpoint, from its creation on, oldest first. */
export function unfinished(messages: readonly WebhookMessage[], endpoint: WebhookEndpoint, state: DeliveryState): WebhookMessage[] {
  const done = new Set(state.cursor.done.map(([id]) => id));
  const created = Date.parse(endpoint.createdAt);
  return messages.filter((m) => !done.has(m.id) && m.at >= created);
}

/** How many messages the endpoint waits for, and its last failed attempt. */
export async function endpointBacklog(store: Pick<KeyStore, "audit" | "webhooks">, endpoint: WebhookEndpoint): Promise<{ backlog: number; lastFailure?: DeliveryAttempt }> {
  const state = await store.webhooks!.state(endpoint.id);
  const messages = messagesOf(await readTrailSince(store, readFrom(state)));
  const lastFailure = [...state.attempts].reverse().find((a) => !a.ok);
  return { backlog: unfinished(messages, endpoint, state).filter((m) => wants(endpoint, m.type)).length, ...(lastFailure ? { lastFailure } : {}) };
}
