// The budget of one request (lib/graphql/request-budget.ts): its apiKeys fields return at most
// REQUEST_BUDGET.keys keys in all, counted before anything is resolved, and a request over it gets one
// INVALID_INPUT error, never a 500 or a stall; the answer's length is bounded behind it (lib/http/route.ts).
// In process over a memory store, and a served files store with a GUEST asking beside a heavy request.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { REQUEST_BUDGET } from "../../lib/graphql/request-budget.ts";
import { tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const aliased = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(" ");
/** More keys than the budget over 30 aliases: 30 x 170 = 5,100. */
const KEYS = Math.floor(REQUEST_BUDGET.keys / 30) + 4;

describe("the key budget of one request", () => {
  let store: KeyStore;
  let reader: string;
  let guest: string;
  let lists = 0;
  let usages = 0;
  let handler: ReturnType<typeof createHandler>;

  beforeAll(async () => {
    const base = createKeyStore();
    reader = (await base.create({ name: "reader", roles: [], permissions: [{ resource: "API_KEY", actions: ["READ_ANY"] }] })).key;
    guest = (await base.create({ name: "guest", roles: ["GUEST"], permissions: [] })).key;
    for (let i = 2; i < KEYS; i++) await base.create({ name: `seed ${i}`, roles: ["VIEWER"], permissions: [] });
    store = {
      ...base,
      list: () => (lists++, base.list()),
      usage: (id) => (usages++, base.usage(id)),
    };
    handler = createHandler({ store });
  });

  const ask = async (query: string, key = reader, accept = "application/json") => {
    const response = await handler(
      new Request("http://x/graphql", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept },
        body: JSON.stringify({ query }),
      }),
    );
    return { status: response.status, body: await response.json() };
  };

  it("refuses 30 aliases of every key when they would return more than the budget: one INVALID_INPUT error, nothing resolved", async () => {
    [lists, usages] = [0, 0];
    const answer = await ask(`{ ${aliased(30, "apiKeys { id name usage { total } }")} }`);
    expect(answer.status).toBe(200);
    expect(answer.body.data).toBeUndefined();
    expect(answer.body.errors).toEqual([{
      message: `apiKeys: one request returns at most ${REQUEST_BUDGET.keys} keys in all, and this one asks for ${30 * KEYS} (a field without first counts every key its filter keeps); ask for pages with first (1 to 1000) and after, or send separate requests`,
      extensions: { code: "INVALID_INPUT" },
    }]);
    expect([lists, usages]).toEqual([1, 0]); // the store listed once to count, no key's usage read
    const strict = await ask(`{ ${aliased(30, "apiKeys { id }")} }`, reader, "application/graphql-response+json");
    expect(strict.status).toBe(400);
    expect(strict.body.errors[0].extensions.code).toBe("INVALID_INPUT");
  });

  it("refuses pages that ask for more than the budget in all without reading the store", async () => {
    lists = 0;
    const answer = await ask(`{ ${aliased(6, "apiKeys(first: 1000) { id }")} }`);
    expect(answer.body.errors[0].message).toMatch(/at most 5000 keys in all, and this one asks for 6000/);
    expect(lists).toBe(0);
  });

  it("answers what stays within it: every key once, pages across aliases, filters that keep few, usage read once per key", async () => {
    const all = await ask("{ apiKeys { id } }");
    expect(all.body.data.apiKeys).toHaveLength(KEYS);
    usages = 0;
    const pages = await ask(`{ ${aliased(30, `apiKeys(first: ${Math.floor(REQUEST_BUDGET.keys / 30)}) { id usage { total } }`)} }`);
    expect(pages.body.errors).toBeUndefined();
    expect(Object.values(pages.body.data).every((page) => (page as unknown[]).length === Math.floor(REQUEST_BUDGET.keys / 30))).toBe(true);
    expect(usages).toBe(Math.floor(REQUEST_BUDGET.keys / 30)); // 30 aliases of the same keys: one read each
    const filtered = await ask(`{ ${aliased(30, 'apiKeys(filter: "role:guest") { name }')} }`);
    expect(filtered.body.data.a29).toEqual([{ name: "guest" }]);
  });

  it("costs a key that may not read keys nothing: its apiKeys fields are FORBIDDEN, the store not listed", async () => {
    lists = 0;
    const answer = await ask(`{ ${aliased(30, "apiKeys { id }")} }`, guest);
    expect(answer.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(Array(30).fill("FORBIDDEN"));
    expect(lists).toBe(0);
  });

  it("refuses an answer longer than its bound with INVALID_INPUT instead of a 500", async () => {
    const bound = REQUEST_BUDGET.answerChars;
    REQUEST_BUDGET.answerChars = 1_000;
    try {
      const answer = await ask("{ apiKeys { id name } }");
      expect(answer.status).toBe(200);
      expect(answer.body.errors[0]).toMatchObject({ extensions: { code: "INVALID_INPUT" } });
      expect(answer.body.errors[0].message).toMatch(/^The answer would be longer than 1000 characters; ask for fewer keys/);
    } finally {
      REQUEST_BUDGET.answerChars = bound;
    }
  });
});

describe("a served files store under the heaviest requests", () => {
  const SEEDED = 600;
  let tmp: ReturnType<typeof tempDir>;
  let server: ServerProcess;
  let reader: string;
  let guest: string;

  beforeAll(async () => {
    tmp = tempDir("service-api-budget-");
    const dir = join(tmp.dir, "keys");
    const driver = fsDriver({ base: dir, sync: false }); // a bulk load that can be redone: no fsync
    const library = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
    reader = (await library.create({ name: "reader", roles: [], permissions: [{ resource: "API_KEY", actions: ["READ_ANY"] }] })).key;
    guest = (await library.create({ name: "guest", roles: ["GUEST"], permissions: [] })).key;
    const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`label${i}`, "v".repeat(128)]));
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < SEEDED) await library.create({ name: `seed ${next++}`, description: "d".repeat(1000), labels, roles: ["VIEWER"], permissions: [] });
    }));
    await library.close();
    server = await startServer({ store: dir });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    tmp?.cleanup();
  });

  it("refuses 30 aliases of every key with all their fields and usage, and a GUEST is answered meanwhile", async () => {
    const alone: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      await gql(server.url, "{ me { id } }", { key: guest });
      alone.push(performance.now() - started);
    }
    const baseline = alone.sort((a, b) => a - b)[5];
    const query = `{ ${aliased(30, "apiKeys { id name description labels { key value } permissions { resource actions } usage { total } }")} }`;
    let running = true;
    const waits: number[] = [];
    const heavy = gql(server.url, query, { key: reader }).finally(() => (running = false));
    while (running) {
      const started = performance.now();
      expect((await gql(server.url, "{ me { id } }", { key: guest })).status).toBe(200);
      waits.push(performance.now() - started);
    }
    const answer = await heavy;
    expect(answer.status).toBe(200);
    expect(answer.body.errors[0].extensions.code).toBe("INVALID_INPUT");
    expect(answer.body.errors[0].message).toMatch(/^apiKeys: one request returns at most 5000 keys in all, and this one asks for 18060/);
    // Before the budget this request kept the event loop busy for seconds; now the GUEST never waits long.
    expect(Math.max(...waits)).toBeLessThan(1_000 + 10 * baseline);
  }, 60_000);
});
