/**
 * Remote mode of `service-api webhook`: the store's webhook operations over a running service's GraphQL
 * API (lib/graphql/webhooks.ts), so the command prints the same in both modes. Every answer is checked
 * and its strings escaped for the terminal (./_untrusted.ts). `--test` needs the signing secret, which
 * the service never sends: it works on a store only.
 */
import * as v from "valibot";
import { ServiceError } from "../core/errors.ts";
import type { WebhookEndpoint, WebhookStore } from "../store/webhooks/endpoints.ts";
import type { WebhookEventType } from "../store/webhooks/events.ts";
import type { Client } from "./client.ts";
import { openRemoteClient } from "./remote.ts";
import { ServerText } from "./_untrusted.ts";

const ENDPOINT_FIELDS = "id url events description createdAt allowPrivate disabled disabledReason notifyBeforeSeconds";

const EndpointSchema = v.pipe(
  v.object({
    id: ServerText,
    url: ServerText,
    events: v.array(ServerText),
    description: v.nullish(ServerText),
    createdAt: ServerText,
    allowPrivate: v.boolean(),
    disabled: v.boolean(),
    disabledReason: v.nullish(ServerText),
    notifyBeforeSeconds: v.nullish(v.number()),
  }),
  v.transform((e): WebhookEndpoint => ({
    id: e.id, url: e.url, events: e.events as WebhookEventType[], createdAt: e.createdAt,
    ...(e.description ? { description: e.description } : {}),
    ...(e.allowPrivate ? { allowPrivate: true } : {}),
    ...(e.disabled ? { disabled: true } : {}),
    ...(e.disabledReason ? { disabledReason: e.disabledReason } : {}),
    ...(e.notifyBeforeSeconds != null ? { notifyBeforeMs: e.notifyBeforeSeconds * 1000 } : {}),
  })),
);
const WithSecretSchema = v.object({ endpoint: EndpointSchema, secret: v.pipe(v.string(), v.regex(/^whsec_[A-Za-z0-9+/=]+$/)), oldSecretUntil: v.nullish(ServerText) });
const AttemptSchema = v.object({
  id: ServerText, type: ServerText, at: ServerText, attempt: v.number(), ok: v.boolean(), status: v.nullish(v.number()), error: v.nullish(ServerText),
});

const seconds = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms / 1000));

export type RemoteWebhooks = Omit<WebhookStore, "saveState" | "lease">;

/** `webhook --server <url>` (or `SERVICE_API_URL`): the webhooks of that service, with the key in `SERVICE_API_KEY`. */
export const openRemoteWebhooks = (url: string, env: Record<string, string | undefined>): RemoteWebhooks =>
  createRemoteWebhooks(openRemoteClient(url, env, "--server"));

/** The webhook operations of the service `client` talks to. */
function createRemoteWebhooks(client: Client): RemoteWebhooks {
  const mutate = async <T>(field: string, args: string, variables: Record<string, unknown>, selection: string, schema: v.GenericSchema<unknown, T>) =>
    (await client.request(`mutation (${args}) { webhook { ${field} ${selection} } }`, variables, v.object({ webhook: v.object({ [field]: schema }) })))
      .webhook[field] as T;
  const list = async () => (await client.request(`{ webhooks { ${ENDPOINT_FIELDS} } }`, {}, v.object({ webhooks: v.array(EndpointSchema) }))).webhooks;
  const withSecret = `{ secret oldSecretUntil endpoint { ${ENDPOINT_FIELDS} } }`;
  return {
    add: ({ notifyBeforeMs, ...input }) =>
      mutate("add", "$input: AddWebhookInput!", { input: { ...input, notifyBeforeSeconds: seconds(notifyBeforeMs) } }, `(input: $input) ${withSecret}`, WithSecretSchema),
    list,
    get: async (id) => (await list()).find((e) => e.id === id) ?? null,
    update: (id, { notifyBeforeMs, disabledReason: _, ...patch }) =>
      mutate("update", "$input: UpdateWebhookInput!", { input: { id, ...patch, notifyBeforeSeconds: seconds(notifyBeforeMs) } }, `(input: $input) { ${ENDPOINT_FIELDS} }`, EndpointSchema),
    remove: async (id) => {
      const found = (await list()).find((e) => e.id === id);
      if (!found) return null;
      await mutate("remove", "$id: ID!", { id }, "(id: $id)", v.boolean());
      return found;
    },
    rotateSecret: async (id, graceMs) => {
      const graceSeconds = graceMs === undefined ? undefined : Math.round(graceMs / 1000);
      const { endpoint, secret, oldSecretUntil } = await mutate("rotateSecret", "$id: ID!, $grace: Int", { id, grace: graceSeconds }, "(id: $id, graceSeconds: $grace)" + withSecret, WithSecretSchema);
      return { endpoint, secret, ...(oldSecretUntil ? { oldUntil: oldSecretUntil } : {}) };
    },
    state: async (id) => {
      const { webhookDeliveries } = await client.request(
        "query ($id: ID!) { webhookDeliveries(id: $id) { id type at attempt ok status error } }",
        { id },
        v.object({ webhookDeliveries: v.array(AttemptSchema) }),
      );
      const attempts = webhookDeliveries.map(({ status, error, ...a }) => ({ ...a, ...(status == null ? {} : { status }), ...(error == null ? {} : { error }) }));
      return { cursor: { at: 0, done: [] }, attempts };
    },
    signingSecrets: async () => {
      throw new ServiceError("USAGE", "webhook --test works on a store (--store or SERVICE_API_STORE): the service never sends a signing secret");
    },
  };
}
