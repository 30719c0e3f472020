// Key lifecycle through the store contract, on memory, files and Redis: expiry at the exact instant (a
// clock the test sets, never a sleep), pruning, grace periods after an overwrite, and last use (the
// store's latest-wins write and the service's coalescing recorder). Two store instances over the same
// data stand for two processes; both read the same test clock.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { createUseRecorder } from "../../lib/store/last-use.ts";
import type { KeyUse } from "../../lib/store/types.ts";
import { tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { input } from "../helpers/keys.ts";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const MIN = 60_000;
let clock = T0;
const now = () => clock;

interface Backend {
  open(): Promise<KeyStore>;
  close(): Promise<void>;
}

let redis: RedisServer;
let prefixes = 0;
const backends: Record<string, () => Backend> = {
  memory() {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    return { open: async () => createKeyStore({ storage, atomic, now }), close: () => storage.dispose() };
  },
  fs() {
    const { dir, cleanup } = tempDir("service-api-lifecycle-");
    const stores: KeyStore[] = [];
    return {
      open: async () => {
        const driver = fsDriver({ base: join(dir, "keys") });
        const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, now });
        stores.push(store);
        return store;
      },
      close: async () => {
        await Promise.all(stores.map((s) => s.close()));
        cleanup();
      },
    };
  },
  redis() {
    const url = `${redis.url}?prefix=lifecycle${++prefixes}`;
    const stores: KeyStore[] = [];
    return {
      open: async () => {
        const store = createKeyStore({ ...(await openRedisBackend(url)), now });
        stores.push(store);
        return store;
      },
      close: async () => void (await Promise.all(stores.map((s) => s.close()))),
    };
  },
};

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const at = (ms: number) => new Date(ms).toISOString();

describe.each(Object.keys(backends))("key lifecycle on %s", (kind) => {
  let backend: Backend;
  let store: KeyStore;
  let other: KeyStore;

  beforeEach(async () => {
    clock = T0;
    backend = backends[kind]();
    store = await backend.open();
    other = await backend.open();
  });
  afterEach(async () => {
    await backend.close();
  });

  it("a key stops verifying at the exact instant of its expiry, remembered or not, in every instance", async () => {
    const { key, expiresAt } = await store.create(input("temp", { expiresAt: at(T0 + 1000) }));
    expect(expiresAt).toBe(at(T0 + 1000));
    clock = T0 + 999;
    expect((await store.verify(key))?.name).toBe("temp");
    expect((await store.verify(key))?.name).toBe("temp"); // now remembered
    expect((await other.verify(key))?.name).toBe("temp");
    clock = T0 + 1000;
    expect(await store.verify(key)).toBeNull(); // the remembered verification lapses too
    expect(await other.verify(key)).toBeNull();
    expect(await store.refusal(key)).toEqual({ reason: "expired" }); // expired, not retired: it is still its name's key
    // Still a key until pruned: listed, with its expiry.
    expect((await other.list()).map((k) => [k.name, k.expiresAt])).toEqual([["temp", at(T0 + 1000)]]);
    expect(await store.refusal("sapi_not_a_key")).toEqual({ reason: "unknown" });
  });

  it("create refuses an expiry that is past, now, unparsable or without a zone, and stores nothing", async () => {
    for (const expiresAt of [at(T0 - 1), at(T0), "tomorrow", "2030-01-02T10:00"]) {
      await expect(store.create(input("bad", { expiresAt }))).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
    expect(await store.list()).toEqual([]);
    expect(await store.audit()).toEqual([]);
  });

  it("update sets and clears an expiry; a cleared expiry makes an expired key work again", async () => {
    const { id, key } = await store.create(input("ci"));
    await store.update(id, { expiresAt: at(T0 + MIN) });
    clock = T0 + MIN;
    expect(await other.verify(key)).toBeNull();
    await expect(store.update(id, { expiresAt: at(T0) })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const cleared = await other.update(id, { expiresAt: null });
    expect(cleared.expiresAt).toBeUndefined();
    expect((await store.verify(key))?.id).toBe(id);
  });

  it("deleteExpired removes exactly the expired keys, in both instances' view, and only once", async () => {
    await store.create(input("short", { expiresAt: at(T0 + 1000) }));
    await store.create(input("long", { expiresAt: at(T0 + 10 * MIN) }));
    const forever = await store.create(input("forever"));
    clock = T0 + 1000;
    const [gone, again] = await Promise.all([store.deleteExpired(), other.deleteExpired()]);
    expect([...gone, ...again].map((k) => k.name)).toEqual(["short"]);
    expect((await other.list()).map((k) => k.name).sort()).toEqual(["forever", "long"]);
    expect((await store.verify(forever.key))?.name).toBe("forever");
    expect(await store.deleteExpired()).toEqual([]);
  });

  it("an overwrite with a grace period keeps the old secret working until then, listed as in grace", async () => {
    const old = await store.create(input("deploy"));
    expect((await store.verify(old.key))?.id).toBe(old.id); // remembered by this instance
    clock = T0 + 1; // list orders by creation time
    const fresh = await other.create(input("deploy"), { overwrite: true, graceMs: 10 * MIN });
    expect(fresh.id).not.toBe(old.id);
    for (const s of [store, other]) {
      expect((await s.verify(old.key))?.id).toBe(old.id);
      expect((await s.verify(fresh.key))?.id).toBe(fresh.id);
    }
    const listed = await store.list();
    expect(listed.map((k) => [k.id, k.graceUntil])).toEqual([[old.id, at(T0 + 1 + 10 * MIN)], [fresh.id, undefined]]);
    expect((await store.getByName("deploy"))?.id).toBe(fresh.id);
    clock = T0 + 10 * MIN; // a millisecond before the grace ends
    expect((await store.verify(old.key))?.id).toBe(old.id);
    clock = T0 + 1 + 10 * MIN;
    expect(await store.verify(old.key)).toBeNull();
    expect(await other.refusal(old.key)).toEqual({ reason: "expired", retired: { id: old.id, name: "deploy" } });
    expect((await other.verify(fresh.key))?.id).toBe(fresh.id);
    expect((await store.deleteExpired()).map((k) => k.id)).toEqual([old.id]);
    expect((await store.list()).map((k) => k.id)).toEqual([fresh.id]);
  });

  it("without a grace period the old secret stops before the overwrite returns", async () => {
    const old = await store.create(input("deploy"));
    await store.verify(old.key);
    await other.create(input("deploy"), { overwrite: true });
    expect(await store.verify(old.key)).toBeNull();
    expect(await store.refusal(old.key)).toEqual({ reason: "unknown", retired: { id: old.id, name: "deploy" } });
  });

  it("deleting the name stops the new secret and the old one in its grace period", async () => {
    const old = await store.create(input("deploy"));
    const fresh = await store.create(input("deploy"), { overwrite: true, graceMs: MIN });
    expect((await other.deleteByName("deploy"))?.id).toBe(fresh.id);
    expect(await store.verify(old.key)).toBeNull();
    expect(await store.verify(fresh.key)).toBeNull();
    expect(await store.list()).toEqual([]);
  });

  it("a key in grace can be deleted by id alone; the new key stays", async () => {
    const old = await store.create(input("deploy"));
    const fresh = await store.create(input("deploy"), { overwrite: true, graceMs: MIN });
    expect((await other.deleteById(old.id))?.id).toBe(old.id);
    expect(await store.verify(old.key)).toBeNull();
    expect((await store.verify(fresh.key))?.id).toBe(fresh.id);
  });

  it("a second overwrite with grace ends the first grace: at most two secrets of a name work", async () => {
    const first = await store.create(input("deploy"));
    clock = T0 + 1; // list orders by creation time
    const second = await store.create(input("deploy"), { overwrite: true, graceMs: MIN });
    clock = T0 + 2;
    const third = await other.create(input("deploy"), { overwrite: true, graceMs: MIN });
    expect(await store.verify(first.key)).toBeNull();
    expect((await store.verify(second.key))?.id).toBe(second.id);
    expect((await store.verify(third.key))?.id).toBe(third.id);
    expect((await store.list()).map((k) => k.id)).toEqual([second.id, third.id]);
  });

  it("a grace period never outlives the old key's own expiry", async () => {
    const old = await store.create(input("deploy", { expiresAt: at(T0 + MIN) }));
    await store.create(input("deploy"), { overwrite: true, graceMs: 10 * MIN });
    expect((await store.list()).find((k) => k.id === old.id)?.graceUntil).toBe(at(T0 + MIN));
    clock = T0 + MIN;
    expect(await other.verify(old.key)).toBeNull();
  });

  it("refuses a grace period without overwrite, of zero, or longer than 24 hours", async () => {
    await store.create(input("deploy"));
    for (const [options, message] of [
      [{ graceMs: MIN }, /needs --overwrite/],
      [{ overwrite: true, graceMs: 0 }, /at most 24h/],
      [{ overwrite: true, graceMs: 24 * 60 * MIN + 1 }, /at most 24h/],
    ] as const) {
      await expect(store.create(input("deploy"), options)).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(message) });
    }
    expect((await store.list()).length).toBe(1);
  });

  it("recordUse keeps the latest time whichever instance writes last, and never revives a deleted key", async () => {
    const a = await store.create(input("used"));
    const b = await store.create(input("gone"));
    await store.recordUse(new Map([[a.id, T0 + 2 * MIN]]));
    await other.recordUse(new Map([[a.id, T0 + MIN]])); // an older time, written later
    expect((await other.get(a.id))?.lastUsedAt).toBe(at(T0 + 2 * MIN));
    expect((await store.get(b.id))?.lastUsedAt).toBeUndefined();
    await other.deleteById(b.id);
    await store.recordUse(new Map([[b.id, T0 + 3 * MIN]]));
    expect(await store.get(b.id)).toBeNull();
    expect((await store.list()).map((k) => [k.name, k.lastUsedAt])).toEqual([["used", at(T0 + 2 * MIN)]]);
    // Writing last use changes no verification.
    expect((await store.verify(a.key))?.id).toBe(a.id);
  });

  it("the recorder writes a key's first use within a tick, then at most once per interval, with the latest time and every use counted", async () => {
    const { id, key } = await store.create(input("busy"));
    const writes: Array<Map<string, KeyUse>> = [];
    const counted = { recordUse: async (uses: ReadonlyMap<string, number | KeyUse>) => {
      writes.push(new Map([...uses].map(([id, use]) => [id, structuredClone(use as KeyUse)])));
      await store.recordUse(uses);
    } };
    let wall = T0;
    const recorder = createUseRecorder(counted, { tickMs: 20, intervalMs: 400, now: () => wall });
    const started = performance.now();
    let last = 0;
    // 1,000 uses over ~1.2 s of real time; the recorder's clock is moved with each use.
    for (let i = 0; i < 1000; i++) {
      wall = T0 + i;
      last = wall;
      recorder.seen(id);
      if (i === 0) {
        while (!writes.length && performance.now() - started < 2000) await new Promise((r) => setTimeout(r, 5));
        expect(writes[0].get(id)?.at).toBe(T0);
      }
      if (i % 100 === 0) wall = T0 + i * 1.2, await new Promise((r) => setTimeout(r, 60));
    }
    // The recorder's clock covered 1,200 ms: the first write, then at most one per 400 ms.
    expect(writes.length).toBeLessThanOrEqual(1 + Math.ceil(1200 / 400));
    await recorder.close();
    expect(writes.at(-1)!.get(id)?.at).toBe(last);
    expect((await other.get(id))?.lastUsedAt).toBe(at(last));
    // Every use counted once, on its UTC day, however the writes were coalesced.
    expect(writes.reduce((sum, write) => sum + (write.get(id)?.days?.["2030-01-01"] ?? 0), 0)).toBe(1000);
    expect(await other.usage(id)).toEqual({ total: 1000, days: [{ date: "2030-01-01", count: 1000 }] });
    expect((await other.verify(key))?.id).toBe(id);
  });

  it("the recorder counts uses per UTC day across midnight, and a failed write loses no count and counts none twice", async () => {
    const { id } = await store.create(input("night owl"));
    let failing = true;
    const flaky = { recordUse: async (uses: ReadonlyMap<string, number | KeyUse>) => {
      if (failing) throw new Error("store down");
      await store.recordUse(uses);
    } };
    let wall = T0 - 1_000; // 1 s before midnight UTC
    const errors: unknown[] = [];
    const recorder = createUseRecorder(flaky, { tickMs: 60_000, now: () => wall, onError: (e) => errors.push(e) });
    recorder.seen(id);
    recorder.seen(id);
    await recorder.flush();
    expect(errors).toHaveLength(1);
    wall = T0 + 1_000;
    recorder.seen(id);
    failing = false;
    await recorder.close();
    expect(await store.usage(id)).toEqual({ total: 3, days: [{ date: "2029-12-31", count: 2 }, { date: "2030-01-01", count: 1 }] });
    expect((await store.get(id))?.lastUsedAt).toBe(at(T0 + 1_000));
  });

  it("a write that fails part-way retries only the keys it did not write: no count is added twice", async () => {
    const storage = createStorage();
    let failOn = "";
    const setItem = storage.setItem.bind(storage);
    storage.setItem = (async (key: string, value: unknown) => {
      if (key === failOn) throw new Error("disk full");
      return setItem(key, value as never);
    }) as typeof storage.setItem;
    const local = createKeyStore({ storage, now });
    const first = await local.create(input("first"));
    const second = await local.create(input("second"));
    const errors: unknown[] = [];
    const recorder = createUseRecorder(local, { tickMs: 60_000, now: () => T0, onError: (e) => errors.push(e) });
    recorder.seen(first.id);
    recorder.seen(second.id);
    failOn = `keys:${second.id}`;
    await recorder.flush();
    expect(errors).toHaveLength(1);
    failOn = "";
    await recorder.close();
    expect((await local.usage(first.id))?.total).toBe(1);
    expect((await local.usage(second.id))?.total).toBe(1);
  });
});
