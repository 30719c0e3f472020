// The short way through for compiled queries (lib/http/compiled-answer.ts): once a query is compiled it
// skips graphql-http, and its answers must stay what graphql-http gives, byte for byte, errors included;
// a result with errors is formatted by graphql-http without running the query again.
import { afterEach, describe, expect, it } from "vitest";
import { runCompiled } from "../lib/http/compiled-answer.ts";
import { paramsFromBody } from "../lib/http/request.ts";
import { createServiceHandler } from "../lib/http/handler.ts";
import type { ServiceRequest, ServiceResponse } from "../lib/http/types.ts";
import { COMPILE_AFTER } from "../lib/graphql/compiled.ts";
import { createSchema } from "../lib/graphql/schema.ts";
import { createKeyStore, type KeyStore } from "../lib/store/key-store.ts";

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
  it("answers as graphql-http did before it was compiled: status, content type and bytes, in both media types", async () => {
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

  it("skips graphql-http once compiled, and only for a POSTed query in the parse cache", async () => {
    const { store, key, handle, send } = await setup(["ADMIN"]);
    const schema = createSchema();
    const info = await store.verify(key);
    const context = { key: info!, store };
    const body = JSON.stringify({ query: "{ me { name } info { hostname } }" });
    const params = paramsFromBody(body, "application/json");
    expect(runCompiled(schema, params, context)).toBeUndefined(); // never seen
    for (let i = 0; i < COMPILE_AFTER; i++) expect((await send(body)).status).toBe(200);
    const run = runCompiled(schema, params, context);
    expect(run).toBeDefined();
    expect(run!.keyOnly).toBe(false);
    // Parameters the handler cannot read take graphql-http's way, which says what is wrong.
    const raw = (text: string, type: string) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": type, accept: "application/json" };
      return handle({ method: "POST", url: "/graphql", headers: { get: (name) => headers[name] ?? null }, body: () => text }) as Promise<ServiceResponse>;
    };
    expect((await raw(body, "text/plain")).status).toBe(415);
    expect((await raw("{ not json", "application/json")).status).toBe(400);
    const mutation = JSON.stringify({ query: 'mutation { apiKey { create(input: { name: "m", roles: [GUEST] }) { key } } }' });
    for (let i = 0; i < COMPILE_AFTER + 1; i++) await send(mutation.replace('"m"', `"m${i}"`));
    expect(runCompiled(schema, paramsFromBody(mutation, "application/json"), context)).toBeUndefined();
  });

  it("with errors, runs once more at most: graphql-http formats the result it is handed", async () => {
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
    // Compiled, a result with errors is run again by graphql-js (compiled.ts): twice a request, not four
    // times (graphql-http running it again through the same two).
    expect(gets - 1).toBeLessThanOrEqual(2 * rounds);
  });
});
