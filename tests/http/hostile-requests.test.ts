// Hostile requests against a real `service-api serve` process: malformed, oversized, deeply nested,
// alias- and fragment-bombed, wrongly typed or wrongly labelled bodies get a 4xx that says what is
// wrong, never a 5xx, and the server keeps serving; forged and truncated keys get 401 and the answer
// never echoes the presented key.
import fc from "fast-check";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../lib/core/secret.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const tmp = tempDir();
const store = join(tmp.dir, "keys");
let server: ServerProcess;
let key: string;

beforeAll(async () => {
  const created = await runCli(["apikey", "--create", "--name", "fuzz admin", "--roles", "ADMIN", "--json", "--store", store]);
  key = JSON.parse(created.stdout).key;
  server = await startServer({ store });
});
afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
  tmp.cleanup();
});

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function post(body: BodyInit, headers: Record<string, string> = {}, path = "/graphql"): Promise<Answer> {
  const response = await fetch(server.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body,
    signal: AbortSignal.timeout(10_000),
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, text, body: parsed };
}

const query = (q: string, variables?: unknown, extra: Record<string, unknown> = {}) =>
  post(JSON.stringify({ query: q, variables, ...extra }));

/** A refusal a client can act on: 4xx, JSON `{errors:[{message}]}` with a non-empty message. */
function expectClear4xx(answer: Answer, label: string) {
  expect(answer.status, `${label}: ${answer.text.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
  expect(answer.status, label).toBeLessThan(500);
  expect(answer.body?.errors?.[0]?.message, `${label}: ${answer.text.slice(0, 200)}`).toMatch(/\w{3}/);
  expect(answer.text, label).not.toMatch(/\n\s+at |node_modules|Internal server error/);
}

/** Whatever GraphQL-over-HTTP allows for a request error (200 with errors for application/json, or 4xx), never 5xx. */
function expectGraphQLError(answer: Answer, label: string) {
  expect(answer.status, `${label}: ${answer.text.slice(0, 200)}`).toBeLessThan(500);
  expect(answer.body?.errors?.[0]?.message, `${label}: ${answer.text.slice(0, 200)}`).toMatch(/\w{3}/);
  expect(answer.text, label).not.toMatch(/\n\s+at |node_modules|Internal server error/);
}

async function expectStillServing() {
  const answer = await query("{ me { name } }");
  expect(answer.status).toBe(200);
  expect(answer.body).toEqual({ data: { me: { name: "fuzz admin" } } });
}

const nest = (depth: number, open: string, close: string, inner: string) => open.repeat(depth) + inner + close.repeat(depth);

describe("malformed and hostile GraphQL requests", () => {
  it.each<[string, string, Record<string, string>?]>([
    ["invalid JSON", "{"],
    ["truncated JSON", '{"query": "{ me { id } }"'],
    ["JSON with a trailing comma", '{"query": "{ me { id } }",}'],
    ["an empty body", ""],
    ["whitespace", "   \n"],
    ["binary garbage", "\u0000\u00ff\u00fe{\u0001"],
    ["a JSON array (batching is not supported)", '[{"query":"{ me { id } }"}]'],
    ["a JSON number", "1"],
    ["a JSON string", '"{ me { id } }"'],
    ["JSON null", "null"],
    ["JSON true", "true"],
    ["the specification's provider/clientId body", '{"provider":"azure","clientId":"x"}'],
    ["a numeric query", '{"query": 1}'],
    ["a query given as a list", '{"query": ["{ me { id } }"]}'],
    ["a query given as an object", '{"query": {"me": "id"}}'],
    ["variables as a string", '{"query": "{ me { id } }", "variables": "x"}'],
    ["variables as a list", '{"query": "{ me { id } }", "variables": [1]}'],
    ["a numeric operationName", '{"query": "{ me { id } }", "operationName": 5}'],
    ["extensions as a number", '{"query": "{ me { id } }", "extensions": 5}'],
    ["JSON nested 100,000 deep", nest(100_000, '{"a":', "}", "1")],
    ["text/plain", '{"query": "{ me { id } }"}', { "content-type": "text/plain" }],
    ["a form", "query=%7B%20me%20%7B%20id%20%7D%20%7D", { "content-type": "application/x-www-form-urlencoded" }],
    ["application/graphql", "{ me { id } }", { "content-type": "application/graphql" }],
    ["multipart", "--x\r\n\r\n{}\r\n--x--", { "content-type": "multipart/form-data; boundary=x" }],
    ["a made-up content type", '{"query": "{ me { id } }"}', { "content-type": "application/jsonx" }],
  ])("answers 4xx with a clear message to %s", async (label, body, headers) => {
    expectClear4xx(await post(body, headers), label);
  });

  it("ignores an unused variable nested 100,000 lists deep, as GraphQL says, without falling over", async () => {
    const answer = await post(`{"query": "{ me { name } }", "variables": {"v": ${nest(100_000, "[", "]", "1")}}}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { me: { name: "fuzz admin" } } });
  });

  it("answers 4xx to a body without a content type", async () => {
    const answer = await post(new Blob(['{"query":"{ me { id } }"}']), { "content-type": "" });
    expectClear4xx(answer, "no content type");
  });

  it("answers 413 to a streamed (chunked) body over 1 MiB without reading it all", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 64) controller.enqueue(chunk); // 4 MiB in all
        else controller.close();
      },
    });
    const answer = await post(stream).catch(() => null); // the server may close the connection early
    if (answer) expect(answer.status).toBe(413);
    await expectStillServing();
  });

  it.each<[string, string, unknown?]>([
    ["syntax error", "{ me { id }"],
    ["an unknown field", "{ secrets }"],
    ["a subscription", "subscription { me { id } }"],
    ["selections 600 deep through inline fragments", nest(600, "{ ... on Query ", "}", "{ me { id } }")],
    ["500 aliases", `{ ${Array.from({ length: 500 }, (_, i) => `a${i}: me { id }`).join(" ")} }`],
    ["40 aliased introspections", `{ ${Array.from({ length: 40 }, (_, i) => `s${i}: __schema { types { name fields { name } } }`).join(" ")} }`],
    ["a fragment cycle", "query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }"],
    [
      "a fragment bomb (2^20 fields)",
      "query { ...F20 } fragment F0 on Query { me { id } } " +
        Array.from({ length: 20 }, (_, i) => `fragment F${i + 1} on Query { ...F${i} ...F${i} }`).join(" "),
    ],
    ["a fragment bomb with aliases", "query { ...F12 } fragment F0 on Query { a: me { id } b: me { name } } " +
      Array.from({ length: 12 }, (_, i) => `fragment F${i + 1} on Query { ...F${i} ...F${i} }`).join(" ")],
    ["3,000 fields", `{ ${"me { id } ".repeat(3_000)} }`],
    ["a 200,000-character string argument", `{ apiKey(id: "${"x".repeat(200_000)}") { id } }`],
    ["a wrongly typed argument", "{ apiKey(id: 5) { id } }"],
    ["a mutation with a wrongly typed input", "mutation ($i: CreateApiKeyInput!) { apiKey { create(input: $i) { id } } }", { i: 5 }],
    ["a mutation with an input missing its name", "mutation ($i: CreateApiKeyInput!) { apiKey { create(input: $i) { id } } }", { i: { roles: ["ADMIN"] } }],
    ["an unknown enum value", "mutation ($i: CreateApiKeyInput!) { apiKey { create(input: $i) { id } } }", { i: { name: "x", roles: ["ROOT"] } }],
    ["an undeclared variable", "{ apiKey(id: $nope) { id } }"],
    ["two operations and no operationName", "query A { me { id } } query B { me { name } }"],
  ])("refuses %s with a GraphQL error, never a 5xx", async (label, q, variables) => {
    expectGraphQLError(await query(q, variables), label);
  });

  it("refuses a variable nested 2,000 lists deep where a list of roles belongs", async () => {
    const q = "mutation ($i: CreateApiKeyInput!) { apiKey { create(input: $i) { id } } }";
    const roles = nest(2_000, "[", "]", '"ADMIN"');
    expectGraphQLError(await post(`{"query": ${JSON.stringify(q)}, "variables": {"i": {"name": "x", "roles": ${roles}}}}`), "nested variable");
  });

  it("refuses an operationName that names no operation", async () => {
    expectGraphQLError(await query("query A { me { id } }", undefined, { operationName: "B" }), "unknown operationName");
  });

  it("never answers 5xx to fuzzed query strings and JSON bodies (property)", async () => {
    const gqlish = fc.array(
      fc.oneof(fc.constantFrom("{", "}", "(", ")", "...", "on", "Query", "me", "id", "apiKeys", "$v", ":", "\"", "fragment", "mutation", "@skip", "#"), fc.string({ maxLength: 5 })),
      { maxLength: 40 },
    ).map((parts) => parts.join(" "));
    await fc.assert(
      fc.asyncProperty(fc.oneof(gqlish.map((q) => JSON.stringify({ query: q })), fc.json({ maxDepth: 4 }), fc.string({ unit: "binary", maxLength: 80 })), async (body) => {
        const answer = await post(body);
        expect(answer.status, `${body.slice(0, 100)} -> ${answer.text.slice(0, 200)}`).toBeLessThan(500);
        expect(answer.text).not.toMatch(/\n\s+at |node_modules/);
      }),
      { numRuns: 150 },
    );
    await expectStillServing();
  });

  it("kept serving, and logged no internal error", async () => {
    await expectStillServing();
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(server.stderr()).not.toMatch(/internal error/i);
  });
});

describe("forged and truncated bearer keys", () => {
  it("are refused with 401, and the answer never echoes the presented key", async () => {
    const forgeries = [
      key.slice(0, -1), // truncated
      key.slice(0, 20),
      key.slice(0, 5),
      key.slice(0, -1) + (key.endsWith("A") ? "B" : "A"), // checksum broken
      key.slice(0, 10) + (key[10] === "x" ? "y" : "x") + key.slice(11), // body changed
      generateSecret(), // well formed, never issued
      key.toUpperCase(),
      key + "A",
      `${key}${key}`,
      "sapi_" + "A".repeat(8_000),
      key.replace("sapi_", "SAPI_"),
      key.replace("sapi_", "sk_live_"),
    ];
    for (const forged of forgeries) {
      for (const headers of [{ authorization: `Bearer ${forged}` }, { authorization: "", "x-api-key": forged }, { authorization: `bearer   ${forged}` }]) {
        const answer = await post(JSON.stringify({ query: "{ me { id } }" }), headers);
        const label = `${Object.keys(headers)[0]}: ${forged.slice(0, 30)}`;
        expect(answer.status, label).toBe(401);
        expect(answer.body?.errors?.[0]?.extensions?.code, label).toBe("UNAUTHENTICATED");
        const fragment = forged.slice(5, 20);
        if (fragment.length >= 8) expect(answer.text, label).not.toContain(fragment);
        expect(answer.text, label).not.toMatch(/sapi_[0-9A-Za-z]{6}/i);
      }
    }
  });

  it("a key in the wrong scheme or with extra words is refused without echo", async () => {
    for (const authorization of [`Basic ${key}`, `Token ${key}`, `Bearer ${key} extra`, `${key}`, `Bearer`, `Bearer ${key},${key}`]) {
      const answer = await post(JSON.stringify({ query: "{ me { id } }" }), { authorization });
      expect(answer.status, authorization.slice(0, 30)).toBe(401);
      expect(answer.text).not.toContain(key.slice(5, 20));
    }
  });

  it("the real key still works (so the refusals above can fail)", async () => {
    await expectStillServing();
  });
});
