// The GraphQL-over-HTTP MUSTs that graphql-http's audits do not test, and CORS, on a real node:http
// server (port 0) and through the fetch handler.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { negotiate } from "../../lib/http/negotiate.ts";
import { parseCorsOrigins } from "../../lib/http/cors.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { startServer } from "../helpers/server.ts";
import { runCli } from "../helpers/cli.ts";

const GR = "application/graphql-response+json";
let store: KeyStore;
let server: RunningServer;
let key: string;

beforeAll(async () => {
  store = createKeyStore();
  key = (await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
  server = await serve({ store, port: 0, onError: () => {}, corsOrigins: "https://app.example.com, http://localhost:5173" });
});
afterAll(() => server.close());

async function call(init: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {}) {
  const response = await fetch(`${server.url}${init.path ?? "/graphql"}`, {
    method: init.method ?? "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
    body: init.body,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : null };
}

describe("GraphQL-over-HTTP MUSTs", () => {
  it("answers variables that fail coercion with 400 under graphql-response+json (200 under application/json)", async () => {
    const body = JSON.stringify({ query: "query ($id: PrefixedID!) { apiKey(id: $id) { name } }", variables: { id: 42.5 } });
    const strict = await call({ headers: { accept: GR }, body });
    expect(strict.status).toBe(400);
    expect(strict.headers.get("content-type")).toMatch(/^application\/graphql-response\+json/);
    expect(strict.body.errors[0].message).toMatch(/Variable "\$id"/);
    expect(strict.body.errors[0].extensions.code).toBe("BAD_USER_INPUT");
    expect("data" in strict.body).toBe(false);
    const legacy = await call({ headers: { accept: "application/json" }, body });
    expect(legacy.status).toBe(200);
  });

  it("answers variables over the limits with 400 under graphql-response+json", async () => {
    const body = JSON.stringify({
      query: "query ($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }",
      variables: { r: Array(101).fill("GUEST") },
    });
    const { status, body: answer } = await call({ headers: { accept: GR }, body });
    expect(status).toBe(400);
    expect(answer.errors[0].message).toMatch(/list of 101 items/);
  });

  it("picks the media type by q-value, not by order", async () => {
    const body = JSON.stringify({ query: "{ me { name } }" });
    const { status, headers } = await call({ headers: { accept: `application/json;q=0.9, ${GR}` }, body });
    expect(status).toBe(200);
    expect(headers.get("content-type")).toMatch(/^application\/graphql-response\+json/);
    const low = await call({ headers: { accept: `${GR};q=0.5, application/json` }, body });
    expect(low.headers.get("content-type")).toMatch(/^application\/json/);
    expect(negotiate(`${GR};q=0, application/json;q=0`)).toBeNull();
    expect(negotiate("*/*")).toBe("application/json");
    expect(negotiate(`${GR}, application/json`)).toBe(GR);
    expect(negotiate("text/html, application/xhtml+xml, */*;q=0.8")).toBe("application/json");
  });

  it("gives the 405 for a mutation over GET a Content-Type, a message and METHOD_NOT_ALLOWED", async () => {
    const query = encodeURIComponent("mutation { apiKey { delete(input: { ids: [] }) } }");
    const { status, headers, body } = await call({ method: "GET", path: `/graphql?query=${query}` });
    expect(status).toBe(405);
    expect(headers.get("content-type")).toMatch(/^application\/json/);
    expect(headers.get("allow")).toBe("POST");
    expect(body.errors[0]).toMatchObject({ message: expect.stringMatching(/POST/), extensions: { code: "METHOD_NOT_ALLOWED" } });
  });

  it("gives the 406 for Accept: text/html a body with NOT_ACCEPTABLE", async () => {
    const { status, headers, body } = await call({ method: "GET", path: "/graphql?query={me{id}}", headers: { accept: "text/html" } });
    expect(status).toBe(406);
    expect(headers.get("content-type")).toMatch(/^application\/json/);
    expect(body.errors[0].extensions.code).toBe("NOT_ACCEPTABLE");
    expect(body.errors[0].message).toMatch(/application\/graphql-response\+json/);
  });

  it("says that a bare GET sent no query", async () => {
    const { status, body } = await call({ method: "GET" });
    expect(status).toBe(400);
    expect(body.errors[0].message).toMatch(/^No query was sent/);
    expect(body.errors[0].message).not.toMatch(/variables|extensions/);
  });

  it("refuses a duplicated Content-Type (application/json and text/plain) with 415", async () => {
    // Raw bytes: fetch and node:http's client would merge or refuse the repeated header.
    const body = JSON.stringify({ query: "{ me { id } }" });
    const { hostname, port } = new URL(server.url);
    const reply = await new Promise<string>((resolve, reject) => {
      let data = "";
      const socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ""), () =>
        socket.write(
          `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
            `Content-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        ));
      socket.setEncoding("utf8").on("data", (d) => (data += d)).on("end", () => resolve(data)).on("error", reject);
    });
    const status = Number(reply.split(" ")[1]);
    expect(status).toBe(415);
    expect((await call({ headers: { "content-type": "application/json, text/plain" }, body: "{}" })).status).toBe(415);
  });

  it("refuses a request body typed application/graphql-response+json with 415 (a type of answers only)", async () => {
    const body = JSON.stringify({ query: "{ me { id } }" });
    for (let i = 0; i < 4; i++) { // compiled after a few runs of the same query: refused all the same
      const refused = await call({ headers: { "content-type": GR }, body });
      expect(refused.status).toBe(415);
      expect(refused.body.errors[0].extensions.code).toBe("UNSUPPORTED_MEDIA_TYPE");
      expect((await call({ body })).status).toBe(200);
    }
  });

  it("answers every error the service writes in the media type the client prefers", async () => {
    const bad = await call({ headers: { authorization: "Bearer nope", accept: `${GR}, application/json` }, body: "{}" });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("content-type")).toMatch(/^application\/graphql-response\+json/);
    const legacy = await call({ headers: { authorization: "Bearer nope" }, body: "{}" });
    expect(legacy.headers.get("content-type")).toMatch(/^application\/json/);
    const unsupported = await call({ headers: { accept: GR, "content-type": "text/plain" }, body: "{}" });
    expect(unsupported.status).toBe(415);
    expect(unsupported.headers.get("content-type")).toMatch(/^application\/graphql-response\+json/);
    expect(unsupported.body.errors[0].extensions.code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("answers a store outage (503) in the preferred media type too", async () => {
    const down = { verify: () => Promise.reject(new ServiceError("STORE_UNAVAILABLE", "gone")) } as unknown as KeyStore;
    const handler = createHandler({ store: down, onError: () => {}, storeStatus: { down: () => {}, up: () => {} } });
    const response = await handler(new Request("http://x/graphql", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: GR },
      body: JSON.stringify({ query: "{ me { id } }" }),
    }));
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toMatch(/^application\/graphql-response\+json/);
    expect((await response.json()).errors[0].extensions.code).toBe("STORE_UNAVAILABLE");
  });

  it("gives every 4xx a Content-Type, a message and a code", async () => {
    const cases = [
      await call({ method: "PUT", body: "{}" }),
      await call({ method: "GET" }),
      await call({ headers: { authorization: "" }, body: "{}" }),
      await call({ body: "not json" }),
      await call({ path: "/nowhere", method: "GET" }),
      await call({ headers: { accept: "image/png" }, body: "{}" }),
      await call({ headers: { "content-type": "text/plain" }, body: "{}" }),
    ];
    for (const { status, headers, body } of cases) {
      expect(status).toBeGreaterThanOrEqual(400);
      expect(headers.get("content-type")).toMatch(/json/);
      expect(body.errors[0].message).toBeTruthy();
      expect(body.errors[0].extensions.code).toMatch(/^[A-Z_]+$/);
    }
  });
});

describe("CORS", () => {
  const preflight = (origin: string) =>
    fetch(`${server.url}/graphql`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });

  it("answers a preflight from an allowed origin with 204 and the allow headers", async () => {
    const response = await preflight("https://app.example.com");
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(response.headers.get("access-control-allow-methods")).toBe("GET, POST");
    expect(response.headers.get("access-control-allow-headers")).toBe("authorization, content-type, x-api-key");
    expect(Number(response.headers.get("access-control-max-age"))).toBeGreaterThan(0);
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
    expect(response.headers.get("vary")).toBe("Origin");
  });

  it("gives other origins no CORS headers", async () => {
    const response = await preflight("https://evil.example.com");
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect(response.headers.get("access-control-allow-methods")).toBeNull();
    const answer = await call({ headers: { origin: "https://evil.example.com" }, body: JSON.stringify({ query: "{ me { id } }" }) });
    expect(answer.headers.get("access-control-allow-origin")).toBeNull();
    expect(answer.headers.get("vary")).toBe("Origin, Authorization, x-api-key");
  });

  it("lets an allowed origin read answers and errors (401 included), with Vary: Origin", async () => {
    const ok = await call({ headers: { origin: "http://localhost:5173" }, body: JSON.stringify({ query: "{ me { name } }" }) });
    expect(ok.body.data.me.name).toBe("admin");
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(ok.headers.get("vary")).toBe("Origin, Authorization, x-api-key");
    const denied = await call({ headers: { origin: "http://localhost:5173", authorization: "Bearer x" }, body: "{}" });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(denied.headers.get("access-control-expose-headers")).toMatch(/www-authenticate/);
  });

  it("is off by default: a preflight gets 405 and no CORS headers", async () => {
    const handler = createHandler({ store, onError: () => {} });
    const response = await handler(new Request("http://x/graphql", { method: "OPTIONS", headers: { origin: "https://app.example.com" } }));
    expect(response.status).toBe(405);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows * (any origin; no credentials, keys are headers)", async () => {
    const handler = createHandler({ store, onError: () => {}, corsOrigins: ["*"] });
    const response = await handler(new Request("http://x/graphql", { method: "OPTIONS", headers: { origin: "https://ide.example" } }));
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("validates origins", () => {
    expect(parseCorsOrigins("https://a.example, http://localhost:3000")).toEqual(["https://a.example", "http://localhost:3000"]);
    for (const bad of ["https://a.example/", "a.example", "https://a.example/path", "ftp://a.example", "https://u:p@a.example", "*, https://a.example"]) {
      expect(() => parseCorsOrigins(bad), bad).toThrow(/CORS origin/);
    }
    expect(() => createHandler({ store, corsOrigins: "https://x.example/" })).toThrow(/Invalid CORS origin 'https:\/\/x.example\/'/);
  });

  it("is configured by --cors-origin and SERVICE_API_CORS_ORIGINS in the CLI, and a bad origin exits 2", async () => {
    for (const [args, env] of [[["--cors-origin", "https://app.example.com"], {}], [[], { SERVICE_API_CORS_ORIGINS: "https://app.example.com" }]] as const) {
      const running = await startServer({ store: "memory:", args: [...args], env });
      try {
        const response = await fetch(`${running.url}/graphql`, { method: "OPTIONS", headers: { origin: "https://app.example.com" } });
        expect(response.status).toBe(204);
        expect(response.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      } finally {
        await running.stop();
      }
    }
    const bad = await runCli(["serve", "--port", "0", "--store", "memory:", "--cors-origin", "https://app.example.com/"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/Invalid CORS origin/);
  });
});

describe("answers no shared cache may keep", () => {
  const PRIVATE = { cacheControl: "no-store", vary: "Authorization, x-api-key" };
  const fields = (response: Response) => ({ cacheControl: response.headers.get("cache-control"), vary: response.headers.get("vary") });

  it("carry Cache-Control: no-store and Vary: Authorization, x-api-key on every /graphql answer", async () => {
    const plain = await serve({ store, port: 0, onError: () => {} }); // CORS off: no Origin to vary by
    try {
      const get = (query: string, headers: Record<string, string> = { "x-api-key": key }) =>
        fetch(`${plain.url}/graphql?query=${encodeURIComponent(query)}`, { headers });
      const post = (body: string, headers: Record<string, string> = {}) =>
        fetch(`${plain.url}/graphql`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", ...headers }, body });
      const me = JSON.stringify({ query: "{ me { id } info { hostname } }" });
      const answers: [string, Response][] = [
        ["an ADMIN's key list over GET", await get("{ apiKeys { id name } }")],
        ["a remembered answer, first", await get("{ me { id name } }")],
        ["a remembered answer, again", await get("{ me { id name } }")],
        ...await Promise.all([1, 2, 3, 4, 5].map(async (i) => [`a compiled answer, run ${i}`, await post(me)] as [string, Response])),
        ["a result with errors", await post(JSON.stringify({ query: "{ nope }" }))],
        ["401", await get("{ me { id } }", { "x-api-key": "sapi_nope" })],
        ["405", await fetch(`${plain.url}/graphql`, { method: "PUT", headers: { "x-api-key": key } })],
        ["406", await get("{ me { id } }", { "x-api-key": key, accept: "image/png" })],
        ["415", await post(me, { "content-type": "text/plain" })],
        ["a mutation over GET", await get("mutation { apiKey { delete(input: { ids: [] }) } }")],
      ];
      for (const [what, response] of answers) {
        expect(fields(response), what).toEqual(PRIVATE);
        await response.arrayBuffer();
      }
      expect(answers[0][1].status).toBe(200);
    } finally {
      await plain.close();
    }
  });

  it("vary by Origin too when CORS is on", async () => {
    const answer = await call({ headers: { "x-api-key": key, authorization: "" }, body: JSON.stringify({ query: "{ apiKeys { id } }" }) });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    expect(answer.headers.get("vary")).toBe("Origin, Authorization, x-api-key");
  });
});
