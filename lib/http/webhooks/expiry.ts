/**
 * The events no change makes, found by looking at the keys: `key.expiring` once per key and endpoint when
 * its expiry is nearer than the endpoint's `notifyBeforeMs` (default 7 days), and `key.expired` once it has
 * passed. Each endpoint's holder looks at most once a minute; what it sent is kept in the endpoint's
 * delivery state (`notified`: key id -> the expiry told of, per kind), so a key is told of once per expiry
 * (a new expiry is told of again). A failed send is tried again at the next look; the id of a message is
 * derived from the key and its expiry, so a receiver sees the same `webhook-id` on every attempt.
 */
import type { ApiKeyInfo } from "../../core/model.ts";
import { sha256Hex } from "../../core/secret.ts";
import type { KeyStore } from "../../store/types.ts";
import type { WebhookEndpoint, WebhookStore } from "../../store/webhooks/endpoints.ts";
import { messageBody, type WebhookMessage } from "../../store/webhooks/events.ts";
import { wants } from "../../store/webhooks/backlog.ts";
import { type DeliveryState, record } from "../../store/webhooks/state.ts";
import type { SendResult } from "./send.ts";

const DEFAULT_NOTIFY_BEFORE_MS = 7 * 24 * 3_600_000;
/** How often an endpoint's holder looks at the keys' expiries. */
export const EXPIRY_LOOK_MS = 60_000;

type Kind = "key.expiring" | "key.expired";

function messageFor(kind: Kind, key: ApiKeyInfo, now: number): WebhookMessage {
  const id = `msg_${sha256Hex(`${kind}\0${key.id}\0${key.expiresAt}`).slice(0, 32)}`;
  const at = new Date(now).toISOString();
  return { id, type: kind, at: now, body: messageBody(kind, at, { id: key.id, name: key.name, expiresAt: key.expiresAt }) };
}

/** The messages due for `keys` that `state` has not told of, and the notified map without keys gone. */
function expiryMessages(keys: readonly ApiKeyInfo[], endpoint: WebhookEndpoint, state: DeliveryState, now: number): WebhookMessage[] {
  const before = endpoint.notifyBeforeMs ?? DEFAULT_NOTIFY_BEFORE_MS;
  const notified = state.notified ?? {};
  const due: WebhookMessage[] = [];
  for (const key of keys) {
    if (!key.expiresAt || key.graceUntil) continue;
    const at = Date.parse(key.expiresAt);
    const kind: Kind | undefined = at <= now ? "key.expired" : at - now <= before ? "key.expiring" : undefined;
    if (!kind || !wants(endpoint, kind) || notified[`${kind}:${key.id}`] === key.expiresAt) continue;
    due.push(messageFor(kind, key, now));
  }
  const live = new Set(keys.map((k) => k.id));
  state.notified = Object.fromEntries(Object.entries(notified).filter(([name]) => live.has(name.slice(name.indexOf(":") + 1))));
  return due;
}

/** Looks at every key once and sends what is due; the state is saved by the caller. */
export async function expiryPass(
  store: Pick<KeyStore, "listPages">,
  hooks: Pick<WebhookStore, "signingSecrets">,
  endpoint: WebhookEndpoint,
  state: DeliveryState,
  o: { now: () => number; send: (url: string, rules: { allowPrivate?: boolean }, secrets: readonly string[], message: WebhookMessage, options: { now: number }) => Promise<SendResult> },
): Promise<{ delivered: number; failed: number }> {
  const keys: ApiKeyInfo[] = [];
  for await (const page of store.listPages()) keys.push(...page.filter((k) => k.expiresAt));
  const due = expiryMessages(keys, endpoint, state, o.now());
  let delivered = 0;
  for (const message of due) {
    const result = await o.send(endpoint.url, { allowPrivate: endpoint.allowPrivate }, await hooks.signingSecrets(endpoint.id), message, { now: o.now() });
    record(state, { id: message.id, type: message.type, at: new Date(o.now()).toISOString(), attempt: 1, ok: result.ok, ...(result.status ? { status: result.status } : {}), ...(result.error ? { error: result.error } : {}) });
    if (!result.ok) return { delivered, failed: 1 };
    const key = JSON.parse(message.body).data as { id: string; expiresAt: string };
    state.notified![`${message.type}:${key.id}`] = key.expiresAt;
    delivered++;
  }
  return { delivered, failed: 0 };
}
