// Listing many keys a page at a time: GraphQL `apiKeys(first:, after:)` against `serve --port 0` (every key
// exactly once across the pages while keys are created and deleted meanwhile), and `apikey --list --limit` and the
// streamed `--list --json` of the CLI, a child process.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const SEEDED = 600;
let tmp: ReturnType<typeof tempDir>;
let store: string;
let library: KeyStore;
let server: ServerProcess;
let admin: string;
const seeded: string[] = [];

beforeAll(async () => {
  tmp = tempDir("service-api-paging-");
  store = join(tmp.dir, "keys");
  const driver = fsDriver({ base: store, sync: false }); // a bulk load that can be redone: no fsync
  library = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
  admin = (await library.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < SEEDED) seeded.push((await library.create({ name: `seed ${next++}`, roles: ["VIEWER"], permissions: [] })).id);
  }));
  server = await startServer({ store });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await library?.close();
  tmp?.cleanup();
});

const PAGE = "query($first: Int, $after: String, $filter: String) { apiKeys(first: $first, after: $after, filter: $filter) { id createdAt cursor } }";
type Listed = { id: string; createdAt: string; cursor: string };

describe("apiKeys(first:, after:)", () => {
  it("returns every key exactly once across pages, oldest first, while keys are created and deleted meanwhile", async () => {
    const got: Listed[] = [];
    let after: string | undefined;
    let extra = 0;
    const gone = new Set<string>(); // deleted before a page could return them
    for (let pages = 0; pages < 100; pages++) {
      // Keys made while a page is read sort after every key already there: they may show up, never twice.
      const [answer] = await Promise.all([
        gql(server.url, PAGE, { key: admin, variables: { first: 50, after } }),
        ...Array.from({ length: 5 }, () => library.create({ name: `late ${extra++}`, roles: ["GUEST"], permissions: [] })),
      ]);
      expect(answer.body.errors).toBeUndefined();
      const page: Listed[] = answer.body.data.apiKeys;
      expect(page.length).toBeLessThanOrEqual(50);
      got.push(...page);
      if (page.length < 50) break;
      after = page.at(-1)!.cursor;
      // The key the cursor names, and one not yet returned, are deleted before the next page.
      const seen = new Set(got.map((k) => k.id));
      const unseen = seeded.find((id) => !seen.has(id) && !gone.has(id));
      expect(await library.deleteById(page.at(-1)!.id)).not.toBeNull();
      if (unseen && (await library.deleteById(unseen))) gone.add(unseen);
    }
    const ids = got.map((k) => k.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of seeded) expect(ids.includes(id)).toBe(!gone.has(id));
    expect(gone.size).toBeGreaterThan(5);
    const order = got.map((k) => `${k.createdAt}|${k.id}`);
    expect(order).toEqual([...order].sort());
  }, 120_000);

  it("answers as before without first and after: every key at once", async () => {
    const answer = await gql(server.url, "{ apiKeys { id } }", { key: admin });
    expect(answer.body.data.apiKeys.length).toBeGreaterThanOrEqual(SEEDED + 1);
  });

  it("pages a filter's matches, and refuses a first out of 1..1000 or a cursor it did not hand out", async () => {
    const filtered = await gql(server.url, PAGE, { key: admin, variables: { first: 3, filter: "role:admin" } });
    expect(filtered.body.data.apiKeys).toHaveLength(1);
    for (const [variables, message] of [
      [{ first: 0 }, "first is from 1 to 1000"],
      [{ first: 1001 }, "first is from 1 to 1000"],
      [{ first: 5, after: "not-a-cursor" }, "after must be the cursor of a key"],
    ] as const) {
      const answer = await gql(server.url, PAGE, { key: admin, variables });
      expect(answer.body.errors[0].message).toContain(message);
    }
  });
});

describe("apikey --list", () => {
  it("--limit n lists the n oldest keys; streamed --json is the whole list as one JSON object", async () => {
    const all = await runCli(["apikey", "--list", "--json", "--store", store], { timeoutMs: 60_000 });
    expect(all.code, all.stderr).toBe(0);
    const keys = JSON.parse(all.stdout).keys;
    expect(keys.length).toBeGreaterThan(SEEDED);
    const limited = await runCli(["apikey", "--list", "--limit", "5", "--store", store]);
    expect(limited.code, limited.stderr).toBe(0);
    expect(limited.stdout.trimEnd().split("\n").map((line) => line.split("\t")[1])).toEqual(keys.slice(0, 5).map((k: { id: string }) => k.id));
    const none = await runCli(["apikey", "--list", "--json", "--filter", "name:nothing-like-this", "--store", store]);
    expect(JSON.parse(none.stdout)).toEqual({ keys: [] });
    const zero = await runCli(["apikey", "--list", "--limit", "0", "--store", store]);
    expect([zero.code, zero.stderr.trim()]).toEqual([2, "Error: --limit needs a whole number of keys, 1 or more (got '0')"]);
  }, 120_000);
});
