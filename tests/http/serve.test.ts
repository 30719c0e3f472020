// The service over HTTP: a real `service-api serve` process on port 0 and the real CLI sharing an fs
// store, plus the handler in-process where a failing store has to be simulated.
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { MAX_BODY_BYTES } from "../../lib/http/types.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { openKeyStore } from "../../lib/store/config.ts";

const tmp = tempDir();
const store = join(tmp.dir, "keys");
let server: ServerProcess;

const cli = (...args: string[]) => runCli([...args, "--store", store]);
async function createKey(name: string, ...flags: string[]) {
  const result = await cli("apikey", "--create", "--name", name, ...flags, "--json");
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { key: string; id: string; name: string };
}

beforeAll(async () => {
  server = await startServer({ store });
});
afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
  tmp.cleanup();
});

function expect401(response: { status: number; headers: Headers; body: any }) {
  expect(response.status).toBe(401);
  expect(response.headers.get("www-authenticate")).toBe("Bearer");
  expect(response.body).toEqual({ errors: [{ message: expect.any(String), extensions: { code: "UNAUTHENTICATED" } }] });
}

describe("service-api serve", () => {
  it("runs the specification's workflow: create --json, call /graphql with the key, delete, the key is refused", async () => {
    const { key, id } = await createKey("workflow key", "--roles", "VIEWER");
    const before = await gql(server.url, "{ me { id name roles } online }", { key });
    expect(before.status).toBe(200);
    expect(before.body).toEqual({ data: { me: { id, name: "workflow key", roles: ["VIEWER"] }, online: true } });

    const deleted = await cli("apikey", "--delete", "--name", "workflow key", "--json");
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: 1, keys: [{ id, name: "workflow key" }] });
    expect401(await gql(server.url, "{ me { id } }", { key }));
  });

  it("a key created by the CLI works at once, and --overwrite revokes the old secret while the server runs", async () => {
    const first = await createKey("rotated", "--roles", "GUEST");
    expect((await gql(server.url, "{ me { id } }", { key: first.key })).body.data.me.id).toBe(first.id);
    const second = await createKey("rotated", "--roles", "GUEST", "--overwrite");
    expect401(await gql(server.url, "{ me { id } }", { key: first.key }));
    expect((await gql(server.url, "{ me { id } }", { key: second.key })).body.data.me.id).toBe(second.id);
  });

  it("accepts the key from x-api-key too", async () => {
    const { key, id } = await createKey("header key", "--roles", "GUEST");
    const response = await gql(server.url, "{ me { id } }", { headers: { "x-api-key": key } });
    expect(response.body.data.me.id).toBe(id);
  });

  it("answers 401 with WWW-Authenticate for a missing, malformed, unknown or wrongly sent key", async () => {
    const { key } = await createKey("real key", "--roles", "ADMIN");
    const tampered = key.slice(0, -1) + (key.endsWith("A") ? "B" : "A");
    expect401(await gql(server.url, "{ me { id } }"));
    expect401(await gql(server.url, "{ me { id } }", { key: "not-a-key" }));
    expect401(await gql(server.url, "{ me { id } }", { key: tampered }));
    expect401(await gql(server.url, "{ me { id } }", { key: generateSecret() }));
    expect401(await gql(server.url, "{ me { id } }", { headers: { authorization: `Basic ${btoa(`x:${key}`)}` } }));
    const missing = await gql(server.url, "{ me { id } }");
    expect(missing.body.errors[0].message).toMatch(/Authorization: Bearer/);
  });

  it("answers 400 saying what is wrong for bodies that are not GraphQL requests", async () => {
    const { key } = await createKey("body key", "--roles", "ADMIN");
    const post = async (body: string, contentType = "application/json") => {
      const response = await fetch(`${server.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": contentType },
        body,
      });
      return { status: response.status, body: await response.json() };
    };
    const specBody = await post(JSON.stringify({ provider: "azure", clientId: "x" }));
    expect(specBody.status).toBe(400);
    expect(specBody.body.errors[0].message).toMatch(/no "query".*"provider", "clientId"/);
    const notJson = await post("{ query: me }");
    expect(notJson.status).toBe(400);
    expect(notJson.body.errors[0].message).toMatch(/not valid JSON/);
    const array = await post("[1,2]");
    expect(array.status).toBe(400);
    expect(array.body.errors[0].message).toMatch(/JSON object/);
    const form = await post("query={me{id}}", "application/x-www-form-urlencoded");
    expect(form.status).toBe(415);
    expect(form.body.errors[0].message).toMatch(/application\/json/);
  });

  it("answers 413 for a body over 1 MiB and keeps serving", async () => {
    const { key } = await createKey("big body", "--roles", "ADMIN");
    const padding = "x".repeat(MAX_BODY_BYTES);
    const big = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ online }", variables: { padding } }),
    });
    expect(big.status).toBe(413);
    expect((await big.json()).errors[0].extensions.code).toBe("PAYLOAD_TOO_LARGE");
    // Just under the limit is still served.
    const fits = await gql(server.url, "{ online }", { key, variables: { padding: "x".repeat(MAX_BODY_BYTES - 100) } });
    expect(fits.body.data).toEqual({ online: true });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("serves queries over GET but refuses mutations over GET", async () => {
    const { key } = await createKey("get key", "--roles", "ADMIN");
    const get = (query: string) =>
      fetch(`${server.url}/graphql?query=${encodeURIComponent(query)}`, { headers: { authorization: `Bearer ${key}` } });
    const query = await get("{ online }");
    expect(query.status).toBe(200);
    expect(await query.json()).toEqual({ data: { online: true } });
    const mutation = await get(`mutation { apiKey { delete(input: { ids: ["x"] }) } }`);
    expect(mutation.status).toBe(405);
  });

  it("refuses a made-up sapi_ key saying it is not whole, and a key without the prefix saying it needs one", async () => {
    const made = await gql(server.url, "{ online }", { key: "sapi_bogus" });
    expect(made.status).toBe(401);
    expect(made.body.errors[0].message).toBe("Malformed API key: it starts with 'sapi_' but is not a whole key (its checksum does not match): copy it completely");
    const bare = await gql(server.url, "{ online }", { key: "bogus" });
    expect(bare.body.errors[0].message).toBe("Malformed API key: it should start with 'sapi_' and be copied completely");
  });

  it("GET /healthz answers 200 without a key; other paths 404", async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    expect((await fetch(`${server.url}/admin`)).status).toBe(404);
    // The bare address says where things are.
    const root = await fetch(`${server.url}/`);
    expect(root.status).toBe(404);
    expect((await root.json()).errors[0].message).toBe(
      "Not found: the GraphQL endpoint is POST /graphql (open it in a browser for the explorer); also GET /console (the web console), /healthz, /readyz, /metrics, /auth (forward authentication)",
    );
  });

  it("refuses a bad port with exit 2 and a taken port with exit 1, naming the problem", async () => {
    const bad = await runCli(["serve", "--port", "70000", "--store", store]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/Invalid port '70000'/);
    const { port } = new URL(server.url);
    const taken = await runCli(["serve", "--port", port, "--store", store]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/address already in use/);
  });

  it("on SIGTERM stops accepting, finishes the request in flight, and exits 0", async () => {
    const own = await startServer({ store });
    const { key } = await createKey("shutdown key", "--roles", "ADMIN");
    const body = JSON.stringify({ query: "{ me { name } }" });
    const { port } = new URL(own.url);
    // A request whose body arrives in two parts, with the signal sent in between.
    const inFlight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest({
        host: "127.0.0.1",
        port,
        path: "/graphql",
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      }, (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (d) => (text += d)).on("end", () => resolve({ status: res.statusCode!, text }));
      });
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => req.end(body.slice(10)), 500);
    });
    await new Promise((r) => setTimeout(r, 200));
    const exit = own.stop("SIGTERM");
    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ data: { me: { name: "shutdown key" } } });
    expect(await exit).toEqual({ code: 0, signal: null });
    await expect(fetch(`${own.url}/healthz`)).rejects.toThrow();
    expect(own.stderr()).toMatch(/SIGTERM/);
  });
});

describe("the handler, with a store that misbehaves", () => {
  const request = (key: string, query: string) =>
    new Request("http://service/graphql", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query }),
    });

  it("rejects a malformed key without asking the store", async () => {
    let lookups = 0;
    const base = createKeyStore();
    const counting: KeyStore = { ...base, verify: (secret) => (lookups++, base.verify(secret)) };
    const handler = createHandler({ store: counting });
    const bad = generateSecret().slice(0, -2) + "zz";
    expect((await handler(request(bad, "{ online }"))).status).toBe(401);
    expect((await handler(request("sapi_short", "{ online }"))).status).toBe(401);
    expect(lookups).toBe(0);
    expect((await handler(request(generateSecret(), "{ online }"))).status).toBe(401);
    expect(lookups).toBe(1);
  });

  it("answers 503, never 200, when the store cannot verify a key", async () => {
    const base = createKeyStore();
    const { key } = await base.create({ name: "k", roles: ["ADMIN"], permissions: [] });
    const down: KeyStore = {
      ...base,
      verify: async () => {
        throw new ServiceError("STORE_UNAVAILABLE", "Key store unavailable while trying to verify a key: ECONNREFUSED 10.0.0.7:6379");
      },
    };
    const response = await createHandler({ store: down })(request(key, "{ online }"));
    expect(response.status).toBe(503);
    const text = await response.text();
    expect(JSON.parse(text).errors[0].extensions.code).toBe("STORE_UNAVAILABLE");
    expect(text).not.toContain("10.0.0.7");
  });

  it("answers 503 when the store fails inside a resolver", async () => {
    const base = createKeyStore();
    const { key } = await base.create({ name: "k", roles: ["ADMIN"], permissions: [] });
    const flaky: KeyStore = {
      ...base,
      list: async () => {
        throw new ServiceError("STORE_UNAVAILABLE", "Key store unavailable while trying to list keys: EACCES /var/lib/keys");
      },
    };
    const response = await createHandler({ store: flaky })(request(key, "{ apiKeys { id } }"));
    expect(response.status).toBe(503);
    expect(await response.text()).not.toContain("/var/lib/keys");
  });

  it("hides unexpected failures behind a generic message and reports them to onError", async () => {
    const base = createKeyStore();
    const { key } = await base.create({ name: "k", roles: ["ADMIN"], permissions: [] });
    const seen: unknown[] = [];
    const broken: KeyStore = { ...base, list: async () => { throw new Error("db password is hunter2"); } };
    const handler = createHandler({ store: broken, onError: (e) => seen.push(e) });
    const inResolver = await handler(request(key, "{ apiKeys { id } online }"));
    const body = await inResolver.text();
    expect(body).not.toContain("hunter2");
    expect(JSON.parse(body)).toMatchObject({ data: { apiKeys: null, online: true }, errors: [{ message: "Internal server error", extensions: { code: "INTERNAL" } }] });

    const crashing: KeyStore = { ...base, verify: async () => { throw new Error("hunter2 again"); } };
    const outside = await createHandler({ store: crashing, onError: (e) => seen.push(e) })(request(key, "{ online }"));
    expect(outside.status).toBe(500);
    expect(await outside.text()).not.toContain("hunter2");
    expect(seen.map((e) => (e as Error).message)).toEqual(["db password is hunter2", "hunter2 again"]);
  });
});

describe("remembered answers", () => {
  type Sent = { body: string; headers?: Record<string, string>; method?: string };
  const send = async (handler: ReturnType<typeof createHandler>, key: string, sent: Sent) => {
    const response = await handler(
      new Request("http://service/graphql", {
        method: sent.method ?? "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...sent.headers },
        body: sent.body,
      }),
    );
    return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  };
  const query = (query: string, extra: Record<string, unknown> = {}): Sent => ({ body: JSON.stringify({ query, ...extra }) });

  it("answers every kind of request from memory byte for byte as it did the first time", async () => {
    const store = createKeyStore();
    const admin = await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] });
    const viewer = await store.create({ name: "viewer", roles: ["VIEWER"], permissions: [] });
    const guest = await store.create({ name: "guest", roles: ["GUEST"], permissions: [] });
    const handler = createHandler({ store });
    const corpus: Sent[] = [
      query("{ me { id name description roles permissions { resource actions } } }"),
      query("{ me { id } online apiKeyPossibleRoles getAvailableAuthActions }"),
      query("query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource actions } }", { variables: { r: ["VIEWER"] } }),
      query("query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", { variables: { r: ["NOPE"] } }),
      query("query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }"),
      query("query A { me { id } } query B { online }", { operationName: "B" }),
      query("query A { me { id } } query B { online }"),
      query("query A { me { id } }", { operationName: "C" }),
      query("{ ...F } fragment F on Query { me { name } ... on Query { online } }"),
      query("{ apiKeys { name } me { name } }"),
      query("{ apiKey(id: \"nope\") { name } }"),
      query("{ info { hostname platform runtime version } }"),
      query("{ __typename __type(name: \"Role\") { enumValues { name } } }"),
      query("mutation { apiKey { delete(input: { ids: [\"nope\"] }) } }"),
      query("mutation { apiKey { create(input: { name: \"x\", roles: [ADMIN] }) { id } } }"),
      query("{ me { id "),
      query("{ nope }"),
      // Over the input limits, and secrets quoted by errors (tests/http/hostile-use.test.ts).
      query("query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", { variables: { r: Array(101).fill("GUEST") } }),
      query("query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", { variables: { r: [generateSecret()] } }),
      query(`{ me { ${generateSecret()} } }`),
      query("subscription { me { id } }"),
      { body: "{\"query\": 7}" },
      { body: "[]" },
      { body: "not json" },
      { body: "" },
      { ...query("{ me { id } }"), headers: { accept: "application/graphql-response+json" } },
      { ...query("{ nope }"), headers: { accept: "application/graphql-response+json" } },
      { ...query("{ me { id } }"), headers: { accept: "text/html" } },
      { ...query("{ me { id } }"), headers: { "content-type": "text/plain" } },
      { ...query("{ me { id } }"), headers: { "content-type": "application/json; charset=utf-8" } },
      { ...query("{ me { id } }"), headers: { accept: "application/json" } },
    ];
    // Only keys without API_KEY:CREATE_ANY, so that no request here changes the store.
    for (const { key } of [viewer, guest]) {
      for (const sent of corpus) {
        const first = await send(handler, key, sent);
        expect(await send(handler, key, sent), `again: ${sent.body}`).toEqual(first);
        expect(await send(handler, key, sent), `a third time: ${sent.body}`).toEqual(first);
      }
    }
    const mine = await send(handler, admin.key, query("{ me { name roles } }"));
    expect(JSON.parse(mine.body)).toEqual({ data: { me: { name: "admin", roles: ["ADMIN"] } } });
  });

  it("are filed under the store's validity token and nothing else: a store that keeps the token gets stale answers", async () => {
    const base = createKeyStore();
    const { key, id } = await base.create({ name: "lying", roles: ["GUEST"], permissions: [] });
    let kept: string | undefined;
    // Verifies honestly and returns a new object every time, but keeps the first validity token forever.
    const lying: KeyStore = {
      ...base,
      verify: async (secret) => {
        const info = await base.verify(secret);
        return info && { ...info, validity: (kept ??= info.validity) };
      },
    };
    const handler = createHandler({ store: lying });
    const me = query("{ me { name roles } }");
    const roles = async () => JSON.parse((await send(handler, key, me)).body).data.me.roles;
    expect(await roles()).toEqual(["GUEST"]);
    await base.update(id, { roles: ["VIEWER"] });
    expect((await base.verify(key))?.roles).toEqual(["VIEWER"]);
    // The token said nothing changed, so the answer is the remembered one: the cache looked at nothing else.
    expect(await roles()).toEqual(["GUEST"]);
    // Not remembered (it reads the host), so it runs with the key as verified now.
    const fresh = await send(handler, key, query("{ me { roles } info { hostname } }"));
    expect(JSON.parse(fresh.body).data.me.roles).toEqual(["VIEWER"]);
    // The honest store, whose token changed with the update, answers anew.
    expect(JSON.parse((await send(createHandler({ store: base }), key, me)).body).data.me.roles).toEqual(["VIEWER"]);
  });

  it("a remembered answer lasts only while the key stands unchanged, also when another process changes it", async () => {
    const dir = join(tmp.dir, "remembered");
    const open = () => openKeyStore({ kind: "fs", dir });
    const served = await open();
    const elsewhere = await open();
    const handler = createHandler({ store: served });
    const { key, id } = await elsewhere.create({ name: "changing", roles: ["GUEST"], permissions: [] });
    const me = query("{ me { name roles } }");
    const roles = async () => JSON.parse((await send(handler, key, me)).body).data.me.roles;
    expect(await roles()).toEqual(["GUEST"]);
    expect(await roles()).toEqual(["GUEST"]);
    await elsewhere.update(id, { roles: ["VIEWER"] });
    expect(await roles()).toEqual(["VIEWER"]);
    await elsewhere.deleteById(id);
    expect((await send(handler, key, me)).status).toBe(401);

    // Answers that read the store are never remembered: a create changes no key, yet shows at once.
    const admin = await elsewhere.create({ name: "admin", roles: ["ADMIN"], permissions: [] });
    const names = async () => JSON.parse((await send(handler, admin.key, query("{ apiKeys { name } }"))).body).data.apiKeys;
    expect(await names()).toEqual([{ name: "admin" }]);
    await elsewhere.create({ name: "later", roles: ["GUEST"], permissions: [] });
    expect(await names()).toEqual([{ name: "admin" }, { name: "later" }]);
    await Promise.all([served.close(), elsewhere.close()]);
  });
});

describe("under Deno", () => {
  it("`deno run -A cli.ts serve` authenticates a key made by the Node CLI and shuts down on SIGTERM", async () => {
    const deno = await startServer({ store, runtime: "deno", timeoutMs: 90_000 });
    try {
      const { key, id } = await createKey("deno served", "--roles", "GUEST");
      const ok = await gql(deno.url, "{ me { id } online }", { key });
      expect(ok.status).toBe(200);
      expect(ok.body.data).toEqual({ me: { id }, online: null });
      expect(ok.body.errors[0].extensions.code).toBe("FORBIDDEN");
      expect401(await gql(deno.url, "{ me { id } }"));
      expect((await fetch(`${deno.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await deno.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    }
  }, 120_000);
});
