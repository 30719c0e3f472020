// /auth (lib/http/forward-auth.ts, required-permissions.ts): the library's fetch handler over a memory store,
// asked as a reverse proxy asks it: any method, the key in a header, the permission required in
// X-Required-Permission or the permission parameter; what it answers for each kind of key and input.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler } from "../../lib/http/fetch.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import type { RequestEvent, ServiceObserver } from "../../lib/http/types.ts";
import type { HandlerOptions } from "../../lib/http/handler.ts";
import { input } from "../helpers/keys.ts";
import { cliWithStore } from "../helpers/cli.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const FROM = { remoteAddr: { hostname: "192.0.2.10" } };

/** A handler on a fresh memory store, the requests it saw (as the access log sees them), and `ask`. */
function setUp(options: Partial<HandlerOptions> = {}) {
  const store = options.store ?? createKeyStore();
  const events: RequestEvent[] = [];
  const observer: ServiceObserver = { request: (e) => events.push(e), authFailed: () => {}, storeError: () => {} };
  const handler = createHandler({ store, observer, recordLastUse: false, ...options });
  const ask = async (path = "/auth", init: { key?: string; method?: string; headers?: Record<string, string> | [string, string][] } = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set("authorization", `Bearer ${init.key}`);
    const response = await handler(new Request(`http://service${path}`, { method: init.method ?? "GET", headers }), FROM);
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  return { store, ask, events, handler };
}

describe("/auth", () => {
  it("answers a valid key 200 with no body and its id, name and roles, on any method, from Bearer or X-API-Key", async () => {
    const { store, ask } = setUp();
    const { key, id } = await store.create(input("ci reader", { roles: ["VIEWER", "CONNECT"] }));
    for (const method of ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const answer = await ask("/auth", { key, method });
      expect(answer.status, method).toBe(200);
      expect(answer.text).toBe("");
      expect(answer.headers.get("x-api-key-id")).toBe(id);
      expect(answer.headers.get("x-api-key-name")).toBe("ci reader");
      expect(answer.headers.get("x-api-key-roles")).toBe("CONNECT,VIEWER");
      expect(answer.headers.get("cache-control")).toBe("no-store");
    }
    expect((await ask("/auth", { headers: { "x-api-key": key } })).status).toBe(200);
    expect((await ask("/auth", { key, method: "HEAD" })).status).toBe(200);
  });

  it("answers under /auth/<path> too, as Envoy's ext_authz asks (the client's path and query appended), a query without a key passing", async () => {
    const { store, ask } = setUp();
    const { key, id } = await store.create(input("reader"));
    const answer = await ask("/auth/docker/containers?page_token=abc&key=value", { key });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-api-key-id")).toBe(id);
    expect((await ask("/authx", { key })).status).toBe(404);
  });

  it("percent-encodes a name beyond printable ASCII, so any proxy can pass it on", async () => {
    const { store, ask } = setUp();
    const { key } = await store.create(input("Zoë 日本"));
    const name = (await ask("/auth", { key })).headers.get("x-api-key-name")!;
    expect(name).toBe("Zo%C3%AB %E6%97%A5%E6%9C%AC");
    expect(decodeURIComponent(name)).toBe("Zoë 日本");
  });

  it("answers 401 with WWW-Authenticate: Bearer for a missing, malformed, unknown, deleted, expired or disabled key", async () => {
    let clock = Date.now();
    const { store, ask } = setUp({ authFailureLimit: "off", store: createKeyStore({ now: () => clock }) });
    const deleted = await store.create(input("gone"));
    await store.deleteByName("gone");
    const disabled = await store.create(input("off"));
    await store.update(disabled.id, { disabled: true });
    const expiring = await store.create(input("brief", { expiresAt: new Date(clock + 60_000).toISOString() }));
    clock += 120_000;
    const cases: [string, string | undefined, string][] = [
      ["missing", undefined, "UNAUTHENTICATED"],
      ["malformed", "sapi_not-a-key", "UNAUTHENTICATED"],
      ["unknown", generateSecret(), "UNAUTHENTICATED"],
      ["deleted", deleted.key, "UNAUTHENTICATED"],
      ["expired", expiring.key, "UNAUTHENTICATED"],
      ["disabled", disabled.key, "KEY_DISABLED"],
    ];
    for (const [what, key, code] of cases) {
      const answer = await ask("/auth", { key });
      expect(answer.status, what).toBe(401);
      expect(answer.headers.get("www-authenticate"), what).toBe("Bearer");
      expect(JSON.parse(answer.text).errors[0].extensions.code, what).toBe(code);
      expect(answer.headers.get("x-api-key-id"), what).toBeNull();
    }
  });

  it("checks the permission required by the header or the parameter, several comma-separated all needed, roles counting", async () => {
    const { store, ask } = setUp();
    const { key } = await store.create(input("reader", { roles: ["VIEWER"], permissions: [{ resource: "API_KEY", actions: ["READ_OWN"] }] }));
    const status = async (path: string, header?: string) => (await ask(path, { key, headers: header === undefined ? {} : { "x-required-permission": header } })).status;
    expect(await status("/auth", "DOCKER:READ_ANY")).toBe(200);
    expect(await status("/auth", "docker:read_own")).toBe(200); // READ_ANY implies READ_OWN, any case
    expect(await status("/auth?permission=DOCKER:READ_ANY,VMS:READ_ANY")).toBe(200);
    expect(await status("/auth?permission=API_KEY:READ_OWN")).toBe(200);
    expect(await status("/auth", "DOCKER:READ_ANY, DOCKER:UPDATE_ANY")).toBe(403);
    expect(await status("/auth?permission=DOCKER:READ_ANY&permission=API_KEY:READ_ANY")).toBe(403);
    const lacking = await ask("/auth", { key, headers: { "x-required-permission": "VMS:READ_ANY,API_KEY:READ_ANY,DOCKER:DELETE_ANY" } });
    expect(lacking.status).toBe(403);
    expect(JSON.parse(lacking.text).errors[0]).toEqual({
      message: "This key lacks the permission required: API_KEY:READ_ANY, DOCKER:DELETE_ANY",
      extensions: { code: "FORBIDDEN" },
    });
  });

  it("requires both the header's and the parameter's permissions: a client adding the header cannot weaken the proxy's", async () => {
    const { store, ask } = setUp();
    const { key } = await store.create(input("reader"));
    const headers: [string, string][] = [["x-required-permission", "ME:READ_ANY"]];
    expect((await ask("/auth?permission=API_KEY:READ_ANY", { key, headers })).status).toBe(403);
    // Repeated headers join into one list: all of them are needed.
    headers.push(["x-required-permission", "API_KEY:CREATE_ANY"]);
    expect((await ask("/auth", { key, headers })).status).toBe(403);
  });

  it("answers 400 naming the form for bad permission syntax, an unknown resource or action, or a requirement too long", async () => {
    const { store, ask } = setUp();
    const { key } = await store.create(input("reader"));
    const problem = async (required: string) => {
      const answer = await ask("/auth", { key, headers: { "x-required-permission": required } });
      expect(answer.status, required.slice(0, 40)).toBe(400);
      return JSON.parse(answer.text).errors[0].message as string;
    };
    expect(await problem("DOCKER")).toMatch(/Invalid permission "DOCKER": expected RESOURCE:ACTION.*use RESOURCE:ACTION, several comma-separated/);
    expect(await problem("DOCKER:READ_ANY:X")).toMatch(/expected RESOURCE:ACTION/);
    expect(await problem("SPACESHIP:READ_ANY")).toMatch(/Unknown permission resource "SPACESHIP"\. Valid resources: ACTIVATION_CODE/);
    expect(await problem("DOCKER:LAUNCH")).toMatch(/Unknown permission action "LAUNCH"/);
    expect(await problem("DOCKER:READ_ANY,".repeat(1_000))).toMatch(/longer than 8192 characters/);
    const secret = generateSecret();
    expect(await problem(`${secret}:READ_ANY`)).not.toContain(secret.slice(5));
    // The same through the parameter.
    expect((await ask("/auth?permission=DOCKER", { key })).status).toBe(400);
  });

  it("refuses a key in the query string with 400 and never logs or echoes it", async () => {
    const { store, ask, events } = setUp();
    const { key } = await store.create(input("reader"));
    for (const query of [`api_key=${key}`, `key=${key.slice(5)}`, `token=${key.replace("_", "%5F")}`, `permission=ME:READ_ANY&x=${key}`, "apikey=sapi_mistyped"]) {
      const answer = await ask(`/auth?${query}`, { key });
      expect(answer.status, query).toBe(400);
      expect(answer.text).toMatch(/API keys are not accepted in the URL/);
      expect(answer.text).not.toContain(key.slice(5));
    }
    expect(events.length).toBe(5);
    for (const event of events) expect(JSON.stringify(event)).not.toContain(key.slice(5));
    expect(events.map((e) => e.path)).toEqual(Array(5).fill("/auth"));
  });

  it("counts rate limits: 429 with Retry-After and the RateLimit headers, the headers also on each 200; a 403 costs nothing", async () => {
    const { store, ask } = setUp();
    const { key } = await store.create(input("limited", { rateLimits: [{ limit: 2, durationMs: 60_000 }] }));
    expect((await ask("/auth", { key, headers: { "x-required-permission": "API_KEY:READ_ANY" } })).status).toBe(403);
    const first = await ask("/auth", { key });
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe("2;w=60");
    expect(first.headers.get("ratelimit")).toMatch(/^limit=2, remaining=1, reset=\d+$/);
    expect(first.headers.get("x-api-key-name")).toBe("limited");
    expect((await ask("/auth", { key })).status).toBe(200);
    const over = await ask("/auth", { key });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(over.headers.get("ratelimit")).toMatch(/^limit=2, remaining=0, reset=\d+$/);
    expect(JSON.parse(over.text).errors[0].extensions.code).toBe("RATE_LIMITED");
    expect(over.headers.get("x-api-key-id")).toBeNull();
  });

  it("spends credits: 429 USAGE_EXCEEDED once none is left, with Retry-After until the refill when there is one", async () => {
    const { store, ask } = setUp();
    const once = await store.create(input("once", { credits: { remaining: 1 } }));
    const daily = await store.create(input("daily", { credits: { remaining: 0, refill: { amount: 10, interval: "day" } } }));
    expect((await ask("/auth", { key: once.key })).status).toBe(200);
    const spent = await ask("/auth", { key: once.key });
    expect(spent.status).toBe(429);
    expect(JSON.parse(spent.text).errors[0].extensions.code).toBe("USAGE_EXCEEDED");
    const refilled = await ask("/auth", { key: daily.key });
    expect(refilled.status).toBe(429);
    const retry = Number(refilled.headers.get("retry-after"));
    const midnight = new Date().setUTCHours(24, 0, 0, 0);
    expect(Math.abs(retry - (midnight - Date.now()) / 1000)).toBeLessThan(60);
  });

  it("shares the failed-authentication throttle with /graphql", async () => {
    const { ask } = setUp({ authFailureLimit: "2/1m" });
    expect((await ask("/auth", { key: generateSecret() })).status).toBe(401);
    expect((await ask("/auth")).status).toBe(401);
    const third = await ask("/auth", { key: generateSecret() });
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).not.toBeNull();
    const graphql = await ask("/graphql?query={me{id}}", { key: generateSecret() });
    expect(graphql.status).toBe(429);
  });

  it("records the key's use (last use and count), as /graphql does", async () => {
    const store = createKeyStore();
    const { ask, handler } = setUp({ store, recordLastUse: true });
    const { key, id } = await store.create(input("counted"));
    for (let i = 0; i < 3; i++) expect((await ask("/auth", { key })).status).toBe(200);
    await handler.close!();
    expect((await store.usage(id))?.total).toBe(3);
    expect((await store.getByName("counted"))?.lastUsedAt).toBeDefined();
  });

  it("answers 503 while the store is down, and the access log names the key of a 200 but never its secret", async () => {
    const base = createKeyStore();
    const { key } = await base.create(input("k"));
    const fail = () => {
      throw new ServiceError("STORE_UNAVAILABLE", "Key store unavailable while trying to verify a key: ECONNREFUSED 10.0.0.7:6379");
    };
    const down: KeyStore = { ...base, verify: async () => fail() };
    const answer = await setUp({ store: down, storeStatus: { down: () => {}, up: () => {} } }).ask("/auth", { key });
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("1");
    expect(answer.text).not.toContain("10.0.0.7");

    const { ask, events } = setUp({ store: base });
    expect((await ask("/auth", { key })).status).toBe(200);
    expect(events[0]).toMatchObject({ method: "GET", path: "/auth", status: 200, key: { name: "k" }, operation: "none" });
    expect(JSON.stringify(events)).not.toContain(key.slice(5));
  });

  it("is not served with authEndpoint: false (serve --no-auth-endpoint), nor /v2/keys.verifyKey and /openapi.json", async () => {
    const { store, ask } = setUp({ authEndpoint: false });
    const { key } = await store.create(input("reader", { roles: ["ADMIN"] }));
    const on = setUp({ store });
    for (const path of ["/auth", "/v2/keys.verifyKey", "/openapi.json"]) {
      const method = path === "/v2/keys.verifyKey" ? "POST" : "GET";
      expect((await ask(path, { key, method })).status, path).toBe(404);
      expect((await on.ask(path, { key, method })).status, path).not.toBe(404);
    }
  });
});

describe("/auth on a served process, hostile headers", () => {
  let server: ServerProcess;
  let cleanup: () => void;
  let key: string;
  let storePath: string;
  beforeAll(async () => {
    const s = cliWithStore();
    cleanup = s.cleanup;
    storePath = s.store;
    key = JSON.parse((await s.cli("apikey", "--create", "--name", "reader", "-r", "VIEWER", "--json")).stdout).key;
    server = await startServer({ store: s.store });
  });
  afterAll(async () => {
    await server?.stop();
    cleanup?.();
  });

  /** A request with headers as sent on the wire (a list value: that header repeated). */
  const send = (headers: Record<string, string | string[]>, path = "/auth") =>
    new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest(server.url + path, { headers }, (res) => {
        res.resume().on("end", () => resolve({ status: res.statusCode!, headers: res.headers }));
      });
      req.on("error", reject).end();
    });

  it("answers 431 to a huge header and keeps serving; repeated permission headers all count", async () => {
    expect((await send({ authorization: `Bearer ${key}`, "x-required-permission": "ME:READ_ANY,".repeat(2_000) })).status).toBe(431);
    expect((await send({ authorization: `Bearer ${key}`, "x-required-permission": Array(200).fill("ME:READ_ANY") })).status).toBe(200);
    expect((await send({ authorization: `Bearer ${key}`, "x-required-permission": [...Array(50).fill("ME:READ_ANY"), "API_KEY:READ_ANY"] })).status).toBe(403);
    expect((await send({ authorization: `Bearer ${key}`, "x-required-permission": "ME:READ_ANY,".repeat(800) })).status).toBe(400);
    // Two keys where one is expected is no key: refused, never a guess.
    expect((await send({ "x-api-key": [key, key] })).status).toBe(401);
    const ok = await send({ authorization: `Bearer ${key}` });
    expect(ok.status).toBe(200);
    expect(ok.headers["x-api-key-name"]).toBe("reader");
    expect(server.stderr()).not.toContain(key.slice(5));
  });

  it("serve --no-auth-endpoint answers /auth with 404", async () => {
    const off = await startServer({ store: storePath, args: ["--no-auth-endpoint"] });
    try {
      expect((await fetch(`${off.url}/auth`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
      expect((await send({ authorization: `Bearer ${key}` })).status).toBe(200);
    } finally {
      await off.stop();
    }
  });

  it("refuses a key in the query string without writing it to the access log", async () => {
    const logged = () => server.stderr().match(/\/auth/g)?.length ?? 0;
    const before = logged();
    expect((await send({}, `/auth?api_key=${key}`)).status).toBe(400);
    expect((await send({}, `/auth?permission=ME:READ_ANY&k=${key}`)).status).toBe(400);
    await expect.poll(logged, { timeout: 10_000 }).toBeGreaterThanOrEqual(before + 2); // both lines written, then read
    expect(server.stderr()).not.toContain(key.slice(5));
  });
});
