// The three main GraphQL clients against a real server (node:http, port 0): `me`, a create with
// variables, a request with the new secret, a FORBIDDEN partial result, a delete, and the 401 that
// follows. Each client must show the user our reason: Apollo Client shows only "Received status code
// 401" unless the 4xx body is application/graphql-response+json, the only type it trusts a 4xx body in.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, GraphQLClient } from "graphql-request";
import { Client as UrqlClient, fetchExchange } from "@urql/core";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { type RunningServer, serve } from "../../lib/http/serve.ts";

const ME = "query Me { me { id name } }";
const CREATE = `mutation Create($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id name key roles } } }`;
const PARTIAL = "query Partial { me { name } apiKeys { id } }";
const DELETE = `mutation Delete($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`;
const REVOKED = "Invalid or revoked API key";

/** What a client does, reduced to: data, or the message it would show its user (and any partial data). */
type Outcome = { data?: any; message?: string };
type Run = (key: string, query: string, variables?: Record<string, unknown>) => Promise<Outcome>;

const store = createKeyStore();
let server: RunningServer;
let admin: string;
beforeAll(async () => {
  admin = (await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
  server = await serve({ store, port: 0, onError: () => {} });
});
afterAll(() => server.close());

const clients: Record<string, Run> = {
  "graphql-request": async (key, query, variables) => {
    const client = new GraphQLClient(`${server.url}/graphql`, { headers: { authorization: `Bearer ${key}` } });
    try {
      return { data: await client.request(query, variables) };
    } catch (error) {
      if (!(error instanceof ClientError)) throw error;
      return { data: error.response.data, message: error.message };
    }
  },
  "@urql/core": async (key, query, variables) => {
    const client = new UrqlClient({
      url: `${server.url}/graphql`,
      exchanges: [fetchExchange],
      fetchOptions: { headers: { authorization: `Bearer ${key}` } },
      preferGetMethod: false,
    });
    const result = query.startsWith("mutation")
      ? await client.mutation(query, variables ?? {}).toPromise()
      : await client.query(query, variables ?? {}, { requestPolicy: "network-only" }).toPromise();
    return { data: result.data ?? undefined, message: result.error?.message };
  },
  "@apollo/client": async (key, query, variables) => {
    const client = new ApolloClient({
      link: ApolloLink.from([new HttpLink({ uri: `${server.url}/graphql`, headers: { authorization: `Bearer ${key}` } })]),
      cache: new InMemoryCache(),
    });
    const document = gql(query);
    const result = query.startsWith("mutation")
      ? await client.mutate({ mutation: document, variables, errorPolicy: "all" })
      : await client.query({ query: document, variables, errorPolicy: "all", fetchPolicy: "network-only" });
    return { data: result.data ?? undefined, message: result.error?.message };
  },
};

describe.each(Object.entries(clients))("%s", (name, run) => {
  it("does me, a create with variables, a request with the new secret, a FORBIDDEN partial result, a delete, and shows the 401 that follows", async () => {
    const me = await run(admin, ME);
    expect(me.message).toBeUndefined();
    expect(me.data.me.name).toBe("admin");

    const created = await run(admin, CREATE, { input: { name: `guest ${name.replace(/\W+/g, " ").trim()}`, roles: ["GUEST"] } });
    expect(created.message).toBeUndefined();
    const { id, key } = created.data.apiKey.create;
    expect(key).toMatch(/^sapi_/);

    const guestMe = await run(key, ME);
    expect(guestMe.data.me).toMatchObject({ id, name: expect.stringMatching(/^guest/) });

    // A GUEST may read `me` but not `apiKeys`: the data that was allowed, and a message saying why not.
    const partial = await run(key, PARTIAL);
    expect(partial.data.me.name).toMatch(/^guest/);
    expect(partial.data.apiKeys ?? null).toBeNull();
    expect(partial.message).toMatch(/API_KEY:READ_ANY/);

    const deleted = await run(admin, DELETE, { ids: [id] });
    expect(deleted.data.apiKey.delete).toBe(true);

    const after = await run(key, ME);
    expect(after.data?.me ?? undefined).toBeUndefined();
    expect(after.message).toContain(REVOKED);

    const missing = await run("", ME);
    expect(missing.message).toMatch(/Missing API key|Unsupported Authorization header/);
  });
});
