/**
 * Webhook endpoints over GraphQL (docs/webhooks.md): `webhooks`, `webhookDeliveries` and `Mutation.webhook`
 * (add, update, remove, rotateSecret), for keys that may manage keys: reading needs API_KEY:READ_ANY, adding
 * API_KEY:CREATE_ANY, changing API_KEY:UPDATE_ANY, removing API_KEY:DELETE_ANY. A signing secret appears in
 * the answers of add and rotateSecret alone. `webhook --test` stays on the command line: the service makes
 * no request on a client's behalf but its deliveries.
 */
import { ServiceError } from "../core/errors.ts";
import type { KeyStore } from "../store/types.ts";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../store/webhooks/events.ts";
import type { WebhookStore } from "../store/webhooks/endpoints.ts";
import type { Args, Rule } from "./field-rule.ts";

export const WEBHOOK_SDL = /* GraphQL */ `
"A webhook endpoint: where signed events of key changes go (never its signing secret)."
type WebhookEndpoint {
  id: ID!
  url: String!
  "The event types it receives; empty: all."
  events: [String!]!
  description: String
  createdAt: String!
  allowPrivate: Boolean!
  disabled: Boolean!
  disabledReason: String
  "How long before a key's expiry key.expiring is sent (absent: 7 days)."
  notifyBeforeSeconds: Int
}

"An endpoint with its signing secret (whsec_...), shown this once."
type WebhookEndpointWithSecret {
  endpoint: WebhookEndpoint!
  secret: String!
  "rotateSecret: until when the old secret signs too."
  oldSecretUntil: String
}

"One attempt to deliver an event: webhook-id, type, time, and the receiver's answer."
type WebhookDelivery {
  id: String!
  type: String!
  at: String!
  attempt: Int!
  ok: Boolean!
  status: Int
  error: String
}

input AddWebhookInput {
  url: String!
  events: [String!]
  description: String
  allowPrivate: Boolean
  notifyBeforeSeconds: Int
}

input UpdateWebhookInput {
  id: ID!
  url: String
  events: [String!]
  description: String
  allowPrivate: Boolean
  disabled: Boolean
  notifyBeforeSeconds: Int
}

type WebhookMutations {
  add(input: AddWebhookInput!): WebhookEndpointWithSecret
  update(input: UpdateWebhookInput!): WebhookEndpoint
  remove(id: ID!): Boolean
  "A new signing secret; the old one signs too for graceSeconds (default 86400, at most 604800; 0: not at all)."
  rotateSecret(id: ID!, graceSeconds: Int): WebhookEndpointWithSecret
}
`;

export const WEBHOOK_QUERY_SDL = `
  "The webhook endpoints, oldest first."
  webhooks: [WebhookEndpoint!]
  "The endpoint's last delivery attempts, oldest first."
  webhookDeliveries(id: ID!): [WebhookDelivery!]`;

const hooksOf = (store: KeyStore): WebhookStore => {
  if (!store.webhooks) throw new ServiceError("INVALID_INPUT", "This store keeps no webhooks");
  return store.webhooks;
};

function eventTypes(list: unknown): WebhookEventType[] | undefined {
  if (list == null) return undefined;
  const types = [...new Set((list as string[]).map((t) => t.trim().toLowerCase()))];
  const unknown = types.find((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown !== undefined) throw new ServiceError("INVALID_INPUT", `Unknown event type '${unknown.slice(0, 100)}'. Valid types: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
  return types as WebhookEventType[];
}

const shown = <T extends { allowPrivate?: boolean; disabled?: boolean; notifyBeforeMs?: number }>(e: T) =>
  ({ ...e, allowPrivate: Boolean(e.allowPrivate), disabled: Boolean(e.disabled), notifyBeforeSeconds: e.notifyBeforeMs === undefined ? null : Math.round(e.notifyBeforeMs / 1000) });
const seconds = (value: unknown) => (value == null ? undefined : (value as number) * 1000);
const optional = (value: unknown) => (value == null ? undefined : value);

/** The rules of the `Query` fields. */
export const WEBHOOK_QUERY: Readonly<Record<string, Rule>> = {
  webhooks: { needs: "API_KEY:READ_ANY", resolve: async (_: Args, { store }) => (await hooksOf(store).list()).map(shown) },
  webhookDeliveries: {
    needs: "API_KEY:READ_ANY",
    resolve: async ({ id }, { store }) => {
      if (!(await hooksOf(store).get(id))) throw new ServiceError("NOT_FOUND", `No webhook endpoint with id ${String(id).slice(0, 100)}`);
      return (await hooksOf(store).state(id)).attempts;
    },
  },
};

/** The rules of the `Mutation.webhook` fields. */
export const WEBHOOK_MUTATIONS: Readonly<Record<string, Rule>> = {
  add: {
    needs: "API_KEY:CREATE_ANY",
    resolve: async ({ input }, { store }) => {
      const { endpoint, secret } = await hooksOf(store).add({
        url: input.url, events: eventTypes(input.events), description: optional(input.description) as string | undefined, allowPrivate: Boolean(input.allowPrivate),
        notifyBeforeMs: seconds(input.notifyBeforeSeconds),
      });
      return { endpoint: shown(endpoint), secret };
    },
  },
  update: {
    needs: "API_KEY:UPDATE_ANY",
    resolve: async ({ input }, { store }) =>
      shown(await hooksOf(store).update(input.id, JSON.parse(JSON.stringify({
        url: optional(input.url), events: eventTypes(input.events), description: optional(input.description),
        allowPrivate: optional(input.allowPrivate), disabled: optional(input.disabled), notifyBeforeMs: seconds(input.notifyBeforeSeconds),
      })))),
  },
  remove: {
    needs: "API_KEY:DELETE_ANY",
    resolve: async ({ id }, { store }) => {
      if (!(await hooksOf(store).remove(id))) throw new ServiceError("NOT_FOUND", `No webhook endpoint with id ${String(id).slice(0, 100)}`);
      return true;
    },
  },
  rotateSecret: {
    needs: "API_KEY:UPDATE_ANY",
    resolve: async ({ id, graceSeconds }, { store }) => {
      const { endpoint, secret, oldUntil } = await hooksOf(store).rotateSecret(id, graceSeconds == null ? undefined : graceSeconds * 1000);
      return { endpoint: shown(endpoint), secret, oldSecretUntil: oldUntil ?? null };
    },
  },
};
