// Compiled queries through the service (lib/graphql/prepared.ts, compiled.ts): once a query is compiled
// its answers must stay what they were before, byte for byte, errors included, and a result with errors
// is run again by graphql-js once, not more.
import { afterEach, describe, expect, it } from "vitest";
import { createServiceHandler } from "../../lib/http/handler.ts";
import type { ServiceRequest, ServiceResponse } from "../../lib/http/types.ts";
import { COMPILE_AFTER } from "../../lib/graphql/compiled.ts";
import { prepare } from "../../lib/graphql/prepared.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";

const handlers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) await handler.close();
});

type Body = Record<string, unknown> | string;

function request(secret: string, body: Body, accept = "application/json", method = "POST"): ServiceRequest {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const headers: Record<string, string> = { authorization: `Bearer ${secret}`, "content-type": "application/json", accept };
  return { method, url: "/graphql", headers: { get: (name) => headers[name] ?? null }, body: () => text };
}

/** A store that counts its listings (what `apiKeys` runs), so a second execution would show. */
function countingStore(): { store: KeyStore; lists: () => number } {
  const store = createKeyStore();
  let lists = 0;
  const list = store.list.bind(store);
  store.list = (...args: Parameters<KeyStore["list"]>) => (lists++, list(...args));
  return { store, lists: () => lists };
}

async function setup(roles: string[], permissions: string[] = []) {
  const { store, lists } = countingStore();
  const { key } = await store.create({ name: `caller ${roles.join(" ")}`, roles, permissions });
  await store.create({ name: "another" , roles: ["GUEST"], permissions: [] });
  const handle = createServiceHandler({ store, recordLastUse: false });
  handlers.push(handle);
  const send = async (body: Body, accept?: string) => {
    const response = (await handle(request(key, body, accept))) as ServiceResponse;
    return { status: response.status, type: response.headers["content-type"], body: response.body };
  };
  return { store, key, handle, send, lists };
}

const QUERIES: Body[] = [
  { query: "{ me { id name } info { hostname } }" },
  { query: "query Q($id: ID!) { apiKey(id: $id) { name } me { name } }", variables: { id: "nope" } },
  { query: "query A { me { id } } query B { info { hostname } me { name roles } }", operationName: "B" },
  { query: "{ a: me { id } b: me { name } ...F } fragment F on Query { online }" },
  { query: "{ apiKeys { name roles } }" },
  // errors: a field the key may not read, a variable of the wrong type, too many variables
  { query: "{ me { id } auditLog(limit: 1) { action } }" },
  { query: "query Q($id: ID!) { apiKey(id: $id) { name } }", variables: { id: 5 } },
  { query: "query Q($id: ID!) { apiKey(id: $id) { name } }", variables: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`v${i}`, i])) },
];

describe("a compiled query", () => {
  it("answers as it did before it was compiled: status, content type and bytes, in both media types", async () => {
    for (const roles of [["ADMIN"], ["VIEWER"]]) {
      const { send } = await setup(roles);
      for (const query of QUERIES) {
        for (const accept of ["application/json", "application/graphql-response+json"]) {
          const first = await send(query, accept);
          for (let i = 1; i < COMPILE_AFTER + 3; i++) expect(await send(query, accept), JSON.stringify({ roles, query, accept, i })).toEqual(first);
        }
      }
    }
  });

  it("is compiled on its COMPILE_AFTER-th run, POSTed or not; a mutation never is", async () => {
    const { key, handle, send } = await setup(["ADMIN"]);
    const query = "{ me { name } info { hostname } }";
    const body = JSON.stringify({ query });
    for (let i = 0; i < COMPILE_AFTER - 1; i++) expect((await send(body)).status).toBe(200);
    expect(prepare(query).compiled).toBe(false);
    expect((await send(body)).status).toBe(200);
    expect(prepare(query).compiled).toBe(true);
    expect(prepare(query).keyOnly).toBe(false);
    const raw = (text: string, type: string, method = "POST", url = "/graphql") => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": type, accept: "application/json" };
      return handle({ method, url, headers: { get: (name) => headers[name] ?? null }, body: () => text }) as Promise<ServiceResponse>;
    };
    const get = "{ me { id } info { platform } }"; // not key-only: each run executes
    for (let i = 0; i < COMPILE_AFTER; i++) expect((await raw("", "", "GET", `/graphql?query=${encodeURIComponent(get)}`)).status).toBe(200);
    expect(prepare(get).compiled).toBe(true);
    expect((await raw(body, "text/plain")).status).toBe(415);
    expect((await raw("{ not json", "application/json")).status).toBe(400);
    const mutation = JSON.stringify({ query: 'mutation { apiKey { create(input: { name: "m", roles: [GUEST] }) { key } } }' });
    for (let i = 0; i < COMPILE_AFTER + 1; i++) await send(mutation.replace('"m"', `"m${i}"`));
    expect(prepare('mutation { apiKey { create(input: { name: "m3", roles: [GUEST] }) { key } } }').compiled).toBe(false);
  });

  it("with errors, runs once more at most: graphql-js's answer replaces the compiled one", async () => {
    // A GUEST given API_KEY:READ_ANY: apiKey reads the store, info is refused (INFO:READ_ANY).
    const { store, send } = await setup(["GUEST"], ["API_KEY:READ_ANY"]);
    let gets = 0;
    const get = store.get.bind(store);
    store.get = (id: string) => (gets++, get(id));
    const query = { query: '{ apiKey(id: "nope") { name } info { hostname } me { id } }' };
    const first = await send(query);
    expect(JSON.parse(first.body as string).errors).toHaveLength(1);
    expect(gets).toBe(1); // graphql-js alone, before the query is compiled
    const rounds = COMPILE_AFTER + 3;
    for (let i = 0; i < rounds; i++) expect(await send(query)).toEqual(first);
    // Compiled, a result with errors is run again by graphql-js (compiled.ts): twice a request, no more.
    expect(gets - 1).toBeLessThanOrEqual(2 * rounds);
  });
});
