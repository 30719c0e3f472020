// Credits, the store's contract on memory, files and a real redis-server: each verification takes one,
// none is left at 0 (USAGE_EXCEEDED), a refill sets the count back at the UTC day's or month's edge,
// an update sets it anew, the count reaches the record when the use is written, and verifyDetailed
// answers the verified key's rate limits and credits.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, type KeyStore, type KeyStoreOptions } from "../../lib/store/key-store.ts";
import { parseCredits, parseRefill } from "../../lib/core/credits.ts";
import { exportLines, parseExport } from "../../lib/store/transfer.ts";
import { createMemoryCreditCounter } from "../../lib/store/credit-counter.ts";
import { tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { input } from "../helpers/keys.ts";

let redis: RedisServer;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await redis?.destroy();
});

/** Opens store instances over one backend's data, as several processes would have. */
type Opener = (extra?: KeyStoreOptions) => Promise<KeyStore>;
let prefixes = 0;
const backends: Record<string, () => Opener> = {
  memory: () => {
    const storage = createStorage();
    return async (extra = {}) => createKeyStore({ storage, ...extra });
  },
  fs: () => {
    const { dir, cleanup } = tempDir("service-api-credits-");
    cleanups.push(cleanup);
    return async (extra = {}) => {
      const driver = fsDriver({ base: join(dir, "keys") });
      const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, ...extra });
      cleanups.push(() => store.close());
      return store;
    };
  },
  redis: () => {
    const url = `${redis.url}?prefix=credits${++prefixes}`;
    return async (extra = {}) => {
      const backend = await openRedisBackend(url);
      const store = createKeyStore({ ...backend, ...extra });
      cleanups.push(() => store.close());
      return store;
    };
  },
};

/** The use is counted by the caller (`onUse`): no recorder timer runs behind the test's back. */
const verify = (store: KeyStore, secret: string) => store.verifyDetailed(secret, { onUse: () => {} });
const codes = async (store: KeyStore, secret: string, n: number) => {
  const out: [string, number | null][] = [];
  for (let i = 0; i < n; i++) {
    const answer = await verify(store, secret);
    out.push([answer.code, answer.credits]);
  }
  return out;
};

describe.each(Object.keys(backends))("credits on %s", (name) => {
  it("each verification takes one; at 0 the key is refused with USAGE_EXCEEDED and nothing more is taken", async () => {
    const store = await backends[name]()();
    const { key, id } = await store.create(input("capped", { credits: { remaining: 3 } }));
    expect(await codes(store, key, 5)).toEqual([["VALID", 2], ["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0], ["USAGE_EXCEEDED", 0]]);
    // The count reaches the record when the key's use is written.
    await store.recordUse(new Map([[id, Date.now()]]));
    expect((await store.get(id))?.credits).toEqual({ remaining: 0 });
    const free = await store.create(input("free"));
    expect(await verify(store, free.key)).toMatchObject({ code: "VALID", credits: null, ratelimits: null });
  });

  it("an update sets the count anew (and counts as changed), null removes the cap", async () => {
    const store = await backends[name]()();
    const { key, id } = await store.create(input("topped", { credits: { remaining: 1 } }));
    expect(await codes(store, key, 2)).toEqual([["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    await new Promise((r) => setTimeout(r, 2)); // a new setting is told apart by when it was made
    expect((await store.update(id, { credits: { remaining: 10 } })).credits).toEqual({ remaining: 10 });
    expect(await codes(store, key, 1)).toEqual([["VALID", 9]]);
    await store.update(id, { credits: null });
    expect(await verify(store, key)).toMatchObject({ code: "VALID", credits: null });
    expect((await store.get(id))?.credits).toBeUndefined();
    const changed = (await store.audit()).filter((e) => e.action === "update").map((e) => e.changed);
    expect(changed).toEqual([["credits"], ["credits"]]);
  });

  it("n/day sets the count back to n at UTC midnight, n/month on the 1st", async () => {
    const clock = { now: Date.parse("2026-06-30T23:59:59.000Z") };
    const store = await backends[name]()({ now: () => clock.now, verifyCacheSize: 0 });
    const daily = await store.create(input("daily", { credits: { remaining: 2, refill: { amount: 5, interval: "day" } } }));
    const monthly = await store.create(input("monthly", { credits: { remaining: 1, refill: { amount: 3, interval: "month" } } }));
    expect(await codes(store, daily.key, 3)).toEqual([["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    expect(await codes(store, monthly.key, 2)).toEqual([["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    clock.now = Date.parse("2026-06-30T23:59:59.999Z"); // not yet
    expect(await codes(store, daily.key, 1)).toEqual([["USAGE_EXCEEDED", 0]]);
    clock.now = Date.parse("2026-07-01T00:00:00.000Z"); // a new day and a new month
    expect(await codes(store, daily.key, 6)).toEqual([["VALID", 4], ["VALID", 3], ["VALID", 2], ["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    expect(await codes(store, monthly.key, 1)).toEqual([["VALID", 2]]);
    clock.now = Date.parse("2026-07-31T23:00:00.000Z"); // still July: no refill of the monthly key
    expect(await codes(store, monthly.key, 3)).toEqual([["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    await store.recordUse(new Map([[daily.id, clock.now], [monthly.id, clock.now]]));
    expect((await store.get(monthly.id))?.credits).toEqual({ remaining: 0, refill: { amount: 3, interval: "month" } });
  });

  it("verifyDetailed answers each rate limit; a rate-limited verification takes no credit", async () => {
    const store = await backends[name]()();
    const { key } = await store.create(input("both", { credits: { remaining: 10 }, rateLimits: [{ limit: 2, durationMs: 60_000 }, { limit: 100, durationMs: 3_600_000 }] }));
    const answers = [await verify(store, key), await verify(store, key), await verify(store, key)];
    expect(answers.map((a) => [a.code, a.credits])).toEqual([["VALID", 9], ["VALID", 8], ["RATE_LIMITED", 8]]);
    expect(answers[1].ratelimits).toEqual([
      { name: "2/1m", limit: 2, remaining: 0, reset: expect.any(String), exceeded: false },
      { name: "100/1h", limit: 100, remaining: 98, reset: expect.any(String), exceeded: false },
    ]);
    expect(answers[2].ratelimits![0]).toMatchObject({ remaining: 0, exceeded: true });
    expect(answers[2].ratelimits![1]).toMatchObject({ remaining: 98, exceeded: false });
    const reset = Date.parse(answers[2].ratelimits![0].reset) - Date.now();
    expect(reset).toBeGreaterThan(50_000);
    expect(reset).toBeLessThanOrEqual(60_000);
  });

  it("a second instance over the same data: exact on Redis; in process (files, memory) within what the other spent since its last write", async () => {
    const open = backends[name]();
    const a = await open();
    const b = await open();
    const { key, id } = await a.create(input("shared", { credits: { remaining: 5 } }));
    expect(await codes(a, key, 2)).toEqual([["VALID", 4], ["VALID", 3]]);
    if (name !== "redis") {
      // b has not seen a's spends (a has not written them): it counts from the record's 5.
      expect(await codes(b, key, 1)).toEqual([["VALID", 4]]);
      await a.recordUse(new Map([[id, Date.now()]])); // record: 5 - 2 = 3
      await b.recordUse(new Map([[id, Date.now()]])); // record: 3 - 1 = 2, and b learns it
      expect((await a.get(id))?.credits?.remaining).toBe(2);
      expect(await codes(b, key, 3)).toEqual([["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    } else {
      // One count on the server, whichever instance asks.
      expect(await codes(b, key, 4)).toEqual([["VALID", 2], ["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    }
  });

  it("export and import carry the credits", async () => {
    const store = await backends[name]()();
    const { id } = await store.create(input("moved", { credits: { remaining: 7, refill: { amount: 9, interval: "month" } } }));
    const text = [...exportLines(await store.exportRecords())].join("");
    const parsed = parseExport(text);
    expect(parsed.keys[0].record.credits).toMatchObject({ remaining: 7, refill: { amount: 9, interval: "month" } });
    const other = await backends[name]()();
    await other.importRecords(parsed.keys);
    expect((await other.get(id))?.credits).toEqual({ remaining: 7, refill: { amount: 9, interval: "month" } });
  });

  it("a verification refused for missing permissions takes no credit and shows those left", async () => {
    const store = await backends[name]()();
    const { key } = await store.create(input("reader", { credits: { remaining: 3 } }));
    const lacking = await store.verifyDetailed(key, { onUse: () => {}, permissions: [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }] });
    expect(lacking).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS", valid: false, credits: 3 });
    expect(await codes(store, key, 1)).toEqual([["VALID", 2]]);
  });

  it("a key exported, spent, deleted and imported back gets the exported count, not the spent one", async () => {
    const open = backends[name]();
    const store = await open();
    const { key, id } = await store.create(input("restored", { credits: { remaining: 3 } }));
    const parsed = parseExport([...exportLines(await store.exportRecords())].join(""));
    expect(await codes(store, key, 4)).toEqual([["VALID", 2], ["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    await store.deleteById(id);
    await store.importRecords(parsed.keys);
    // What the list shows is what the service counts from: on Redis the deleted key's count is still there.
    expect((await store.get(id))?.credits).toEqual({ remaining: 3 });
    expect(await codes(store, key, 4)).toEqual([["VALID", 2], ["VALID", 1], ["VALID", 0], ["USAGE_EXCEEDED", 0]]);
    const again = await open(); // another process on the same data counts from the same setting
    expect((await again.get(id))?.credits).toEqual({ remaining: 3 });
  });
});

describe("a failed write of the count", () => {
  it("keeps the spends it carried for the next write (files and memory)", async () => {
    const storage = createStorage();
    let failing = false;
    const setItem = storage.setItem.bind(storage);
    storage.setItem = (async (key: string, value: unknown) => {
      if (failing && key.startsWith("keys:")) throw Object.assign(new Error("disk full"), { code: "ENOSPC" });
      return setItem(key, value as never);
    }) as typeof storage.setItem;
    const store = createKeyStore({ storage });
    const { key, id } = await store.create(input("flaky", { credits: { remaining: 5 } }));
    expect(await codes(store, key, 2)).toEqual([["VALID", 4], ["VALID", 3]]);
    failing = true;
    await expect(store.recordUse(new Map([[id, Date.now()]]))).rejects.toThrow();
    failing = false;
    expect(await codes(store, key, 1)).toEqual([["VALID", 2]]);
    await store.recordUse(new Map([[id, Date.now()]]));
    expect((await store.get(id))?.credits).toEqual({ remaining: 2 }); // 5 - 2 - 1: none lost
  });
});

describe("the values people type", () => {
  it("--credits takes 0 to 1,000,000,000; --refill n/day or n/month with n at least 1", () => {
    expect(parseCredits("0")).toBe(0);
    expect(parseCredits("1000000000")).toBe(1_000_000_000);
    for (const bad of ["-1", "1000000001", "1.5", "ten", "", "1e3"]) expect(() => parseCredits(bad), bad).toThrow(/0 to 1,000,000,000/);
    expect(parseRefill("1000/day")).toEqual({ amount: 1000, interval: "day" });
    expect(parseRefill(" 5 / month ")).toEqual({ amount: 5, interval: "month" });
    for (const bad of ["0/day", "10/week", "10", "10/1d", "1000000001/day"]) expect(() => parseRefill(bad), bad).toThrow(/<amount>\/<day\|month>/);
  });

  it("the store refuses out-of-range credits from the library", async () => {
    const store = createKeyStore();
    await expect(store.create(input("neg", { credits: { remaining: -1 } }))).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(store.create(input("big", { credits: { remaining: 1_000_000_001 } }))).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(store.create(input("bad", { credits: { remaining: 1, refill: { amount: 1, interval: "week" as "day" } } }))).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(await store.list()).toEqual([]);
  });
});

describe("the in-process credit counter's bound", () => {
  it("keeps a key in use while 10,000 others pass through a bound of 100, and forgets idle ones", () => {
    const counter = createMemoryCreditCounter(100);
    const credits = { remaining: 1_000_000, setAt: new Date(0).toISOString() };
    const now = Date.now();
    let expected = credits.remaining;
    for (let i = 0; i < 10_000; i++) {
      counter.spend(`other-${i}`, credits, now);
      if (i % 10 === 0) expect(counter.spend("busy", credits, now).remaining).toBe(--expected);
    }
    // Forgotten: an idle key's count starts again from its record.
    expect(counter.peek("other-0", credits, now)).toBe(credits.remaining);
    expect(counter.peek("busy", credits, now)).toBe(expected);
  });
});
