// The creation-ordered index that `apiKeys(first:, after:)` pages read (lib/store/_key-order.ts), on memory,
// files and a real redis-server: pages walked with a small `first` give exactly the keys of a full read,
// sorted by creation time then id, after creates (two writers at once), deletes, renames, rotations with
// a grace period and imports; a page reads about its own records, not every key; and on files and Redis
// a record without its entry (a store from before the index) or an entry without its record (a crash)
// still pages correctly.
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { pageKeys } from "../../lib/store/paging.ts";
import { orderName } from "../../lib/store/_key-order.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { redisCommand, type RedisServer, startRedis } from "../helpers/redis.ts";

let tmp: ReturnType<typeof tempDir>;
let redis: RedisServer;
beforeAll(async () => {
  tmp = tempDir("service-api-paging-index-");
  redis = await startRedis();
}, 30_000);
afterAll(async () => {
  await redis?.stop();
  tmp?.cleanup();
});

const fsStore = (base: string) => {
  const driver = fsDriver({ base, sync: false });
  return createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
};
const redisStore = async (prefix: string) => {
  const backend = await openRedisBackend(`${redis.url}?prefix=${prefix}`);
  return createKeyStore({ ...backend });
};

/** Every key, as a full read has them, in page order (creation time, then id). */
async function fullScan(store: KeyStore): Promise<string[]> {
  const keys = [];
  for await (const page of store.listPages()) keys.push(...page);
  return keys.map((k) => orderName(Date.parse(k.createdAt), k.id)).sort().map((name) => name.slice(16));
}

/** Every key, through pages of `first`, and how many records the pages read. */
async function paged(store: KeyStore, first: number): Promise<{ ids: string[]; reads: number }> {
  let reads = 0;
  const counting = { ...store, get: (id: string) => (reads++, store.get(id)) };
  const ids: string[] = [];
  for (let after: { createdAt: string; id: string } | undefined; ;) {
    const page = await pageKeys(counting, { first, after }, Date.now());
    ids.push(...page.map((k) => k.id));
    if (page.length < first) return { ids, reads };
    after = page.at(-1);
  }
}

const make = (store: KeyStore, names: string[]) =>
  Promise.all(names.map((name) => store.create({ name, roles: ["VIEWER"], permissions: [] })));

/** Creates from two writers at once, then deletes, renames, rotations (with grace) and an import. */
async function churn(one: KeyStore, two: KeyStore, source: KeyStore) {
  const made = (await Promise.all([make(one, range("one", 40)), make(two, range("two", 40))])).flat();
  for (const key of made.slice(0, 8)) await one.deleteById(key.id);
  for (const key of made.slice(8, 12)) await two.update(key.id, { name: `${key.name} renamed` });
  for (const key of made.slice(12, 16)) await one.rotate(key.id, { graceMs: 60_000 });
  await make(source, range("imported", 10));
  const report = await one.importRecords((await source.exportRecords()).map((record, i) => ({ line: i + 2, record })));
  expect(report.imported).toHaveLength(10);
}
const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix} ${i}`);

describe.each([
  ["memory", async () => {
    const store = createKeyStore();
    return { one: store, two: store };
  }],
  ["files", async () => {
    const base = join(tmp.dir, "churn");
    return { one: fsStore(base), two: fsStore(base) }; // two drivers, as two processes would have
  }],
  ["Redis", async () => ({ one: await redisStore("churn"), two: await redisStore("churn") })],
])("the index on %s", (_, open) => {
  it("pages give exactly the full read's keys in its order after every kind of change, reading about a page of records each", async () => {
    const { one, two } = await open();
    const source = createKeyStore();
    try {
      expect(one.ordered).toBeTypeOf("function");
      await churn(one, two, source);
      const expected = await fullScan(one);
      expect(expected.length).toBe(80 - 8 + 10); // a rotated key is one key, also in its grace period
      for (const first of [1, 7, 50]) expect((await paged(one, first)).ids).toEqual(expected);
      expect((await paged(two, 7)).ids).toEqual(expected);
      // A page of 5 reads its 5 records and a few entries past them, not the 86 keys.
      let reads = 0;
      const counting = { ...one, get: (id: string) => (reads++, one.get(id)) };
      expect((await pageKeys(counting, { first: 5 }, Date.now())).map((k) => k.id)).toEqual(expected.slice(0, 5));
      expect(reads).toBeLessThanOrEqual(13);
    } finally {
      await one.close();
      if (two !== one) await two.close();
    }
  }, 60_000);
});

describe("the listing files keep between pages", () => {
  it("files: a key created or deleted after a page, however long after, is seen by the next page", async () => {
    const base = join(tmp.dir, "listing");
    const store = fsStore(base);
    const other = fsStore(base); // another process's driver
    await make(store, range("listed", 5));
    for (let round = 0; round < 3; round++) {
      await new Promise((done) => setTimeout(done, 1_100)); // the listing is trusted once a second older than the change
      expect((await paged(store, 50)).ids).toEqual(await fullScan(store));
      const [made] = await make(other, [`late ${round}`]);
      expect((await paged(store, 50)).ids).toContain(made.id);
      await other.deleteById(made.id);
      expect((await paged(store, 50)).ids).not.toContain(made.id);
    }
    await Promise.all([store.close(), other.close()]);
  }, 30_000);
});

describe("two processes creating keys at once", () => {
  it("files: every key the CLI processes created is paged once, in order", async () => {
    const base = join(tmp.dir, "processes");
    const writer = (who: string) => (async () => {
      for (let i = 0; i < 8; i++) {
        const made = await runCli(["apikey", "--create", "--name", `${who} ${i}`, "--roles", "GUEST", "--store", base]);
        expect(made.code, made.stderr).toBe(0);
      }
    })();
    await Promise.all([writer("left"), writer("right")]);
    const store = fsStore(base);
    const expected = await fullScan(store);
    expect(expected).toHaveLength(16);
    expect(readdirSync(join(base, "order"))).toHaveLength(16); // made by the processes, not by a repair
    expect((await paged(store, 5)).ids).toEqual(expected);
    await store.close();
  }, 120_000);
});

describe("a crash between a record and its entry", () => {
  it("files: a record without its entry is paged (added on the next open), an entry without its record is skipped", async () => {
    const base = join(tmp.dir, "crash");
    const store = fsStore(base);
    const keys = await make(store, range("crash", 30));
    await store.close();
    const order = join(base, "order");
    const entries = readdirSync(order);
    expect(entries).toHaveLength(30);
    // A record without an entry, an entry whose record never got written, an entry at another creation time.
    const lost = entries.find((name) => name.endsWith(keys[3].id))!;
    rmSync(join(order, lost));
    writeFileSync(join(order, orderName(Date.now(), crypto.randomUUID())), "");
    writeFileSync(join(order, orderName(0, keys[5].id)), "");
    const reopened = fsStore(base);
    const expected = await fullScan(reopened);
    expect(expected).toHaveLength(30);
    expect((await paged(reopened, 4)).ids).toEqual(expected);
    expect(readdirSync(order)).toContain(lost);
    await reopened.close();
  });

  it("files: a store written before the index (no order/) pages every key once its index is built", async () => {
    const base = join(tmp.dir, "migrate");
    const store = fsStore(base);
    await make(store, range("old", 25));
    await store.close();
    rmSync(join(base, "order"), { recursive: true });
    const reopened = fsStore(base);
    const expected = await fullScan(reopened);
    expect((await paged(reopened, 6)).ids).toEqual(expected);
    expect(readdirSync(join(base, "order"))).toHaveLength(25);
    await reopened.close();
  });

  it("Redis: records without entries (an older store) are indexed on first use, a stray entry is skipped", async () => {
    const store = await redisStore("migrate");
    await make(store, range("old", 25));
    await redisCommand(redis.port, "DEL migrate:order migrate:order-built");
    await redisCommand(redis.port, `ZADD migrate:order 0 ${orderName(Date.now(), crypto.randomUUID())}`);
    const reopened = await redisStore("migrate");
    const expected = await fullScan(reopened);
    expect(expected).toHaveLength(25);
    expect((await paged(reopened, 6)).ids).toEqual(expected);
    expect(await redisCommand(redis.port, "ZCARD migrate:order")).toContain("26");
    await Promise.all([store.close(), reopened.close()]);
  });
});
