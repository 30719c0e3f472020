// Webhook endpoints over GraphQL: the same store operations as `service-api webhook`, for keys that may
// manage keys, the signing secret in the answers of add and rotateSecret alone.
import { beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";

let store: KeyStore;
let handler: (request: Request) => Promise<Response>;
const keys: Record<string, string> = {};

beforeAll(async () => {
  store = createKeyStore();
  handler = createHandler({ store, onError: () => {} });
  keys.admin = (await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
  keys.reader = (await store.create({ name: "reader", roles: [], permissions: ["API_KEY:READ_ANY"] })).key;
  keys.viewer = (await store.create({ name: "viewer", roles: ["VIEWER"], permissions: [] })).key;
});

async function gql(key: string, query: string, variables?: Record<string, unknown>) {
  const response = await handler(new Request("http://service/graphql", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  }));
  return (await response.json()) as { data?: any; errors?: { message: string; extensions: { code: string } }[] };
}

const ADD = `mutation($input: AddWebhookInput!) { webhook { add(input: $input) { secret endpoint { id url events description disabled } } } }`;

describe("webhooks over GraphQL", () => {
  it("an ADMIN key adds an endpoint and gets its secret once; lists, updates, rotates and removes it", async () => {
    const added = await gql(keys.admin, ADD, { input: { url: "https://hooks.example.com/in", events: ["key.created"], description: "siem" } });
    expect(added.errors).toBeUndefined();
    const { secret, endpoint } = added.data.webhook.add;
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({ url: "https://hooks.example.com/in", events: ["key.created"], description: "siem", disabled: false });
    expect(await store.webhooks!.signingSecrets(endpoint.id)).toEqual([secret]);

    const listed = await gql(keys.reader, "{ webhooks { id url events } webhookDeliveries(id: \"" + endpoint.id + "\") { id } }");
    expect(listed.errors).toBeUndefined();
    expect(listed.data.webhooks).toEqual([{ id: endpoint.id, url: "https://hooks.example.com/in", events: ["key.created"] }]);
    expect(listed.data.webhookDeliveries).toEqual([]);
    expect(JSON.stringify(listed)).not.toContain("whsec_");

    const updated = await gql(keys.admin, `mutation { webhook { update(input: { id: "${endpoint.id}", events: [], disabled: true }) { events disabled } } }`);
    expect(updated.data.webhook.update).toEqual({ events: [], disabled: true });
    const rotated = await gql(keys.admin, `mutation { webhook { rotateSecret(id: "${endpoint.id}", graceSeconds: 60) { secret oldSecretUntil } } }`);
    expect(rotated.data.webhook.rotateSecret.secret).not.toBe(secret);
    expect(await store.webhooks!.signingSecrets(endpoint.id)).toEqual([rotated.data.webhook.rotateSecret.secret, secret]);

    expect((await gql(keys.admin, `mutation { webhook { remove(id: "${endpoint.id}") } }`)).data.webhook.remove).toBe(true);
    const again = await gql(keys.admin, `mutation { webhook { remove(id: "${endpoint.id}") } }`);
    expect(again.errors?.[0].extensions.code).toBe("NOT_FOUND");
  });

  it("refuses keys that may not manage keys, and bad input, with the documented codes", async () => {
    const byReader = await gql(keys.reader, ADD, { input: { url: "https://hooks.example.com/in" } });
    expect(byReader.errors?.[0]).toMatchObject({ message: expect.stringContaining("API_KEY:CREATE_ANY"), extensions: { code: "FORBIDDEN" } });
    const byViewer = await gql(keys.viewer, "{ webhooks { id } }");
    expect(byViewer.errors?.[0].extensions.code).toBe("FORBIDDEN");
    const plainHttp = await gql(keys.admin, ADD, { input: { url: "http://hooks.example.com/in" } });
    expect(plainHttp.errors?.[0]).toMatchObject({ message: expect.stringContaining("loopback"), extensions: { code: "INVALID_INPUT" } });
    const badType = await gql(keys.admin, ADD, { input: { url: "https://hooks.example.com/in", events: ["key.nope"] } });
    expect(badType.errors?.[0]).toMatchObject({ message: expect.stringContaining("Unknown event type"), extensions: { code: "INVALID_INPUT" } });
  });
});
