// One contract, every backend: the same store tests run against memory:, fs: (a temp directory) and
// Redis (a private redis-server). A backend hands out several store instances over the same data,
// as several processes or hosts would have (for Redis each instance has its own connection).
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import Redis from "ioredis";
import { createStorage, type Storage } from "unstorage";
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it, vi } from "vitest";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { generateSecret, sha256Hex } from "../../lib/core/secret.ts";
import { type AtomicIndex, createKeyStore, createLocalAtomicIndex, type KeyStore, type KeyStoreOptions } from "../../lib/store/key-store.ts";
import { tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { input } from "../helpers/keys.ts";

interface Backend {
  /** A new store instance over this backend's data (a new connection where the backend has one), with `extra` options. */
  open(extra?: KeyStoreOptions): Promise<KeyStore>;
  /** The atomic index operations of a new instance over this backend's data. */
  atomic(): Promise<AtomicIndex>;
  /** Every value the backend holds, as stored. */
  rawValues(): Promise<string[]>;
  /** Full listings (`getKeys`) made through any instance so far. */
  listings: number;
  /** Server-side scan commands so far, where the backend can tell. */
  serverScans?(): Promise<number>;
  close(): Promise<void>;
}

/** Counts the full listings a store makes; every other call passes through. */
function counting(storage: Storage, backend: { listings: number }): Storage {
  return {
    ...storage,
    getKeys: (...args: Parameters<Storage["getKeys"]>) => {
      backend.listings++;
      return storage.getKeys(...args);
    },
  };
}

async function walkFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walkFiles(path)));
    else out.push(await fsp.readFile(path, "utf8"));
  }
  return out;
}

let redis: RedisServer;
let admin: Redis;
let prefixes = 0;

async function fsBackend(blocking: boolean): Promise<Backend> {
  const { dir, cleanup } = tempDir("service-api-contract-");
  const stores: KeyStore[] = [];
  const backend: Backend = {
    listings: 0,
    open: async (extra = {}) => {
      const driver = fsDriver({ base: join(dir, "keys"), blocking });
      const store = createKeyStore({ storage: counting(createStorage({ driver }), backend), atomic: driver.atomic, ...extra });
      stores.push(store);
      return store;
    },
    atomic: async () => fsDriver({ base: join(dir, "keys"), blocking }).atomic,
    rawValues: () => walkFiles(dir),
    close: async () => {
      await Promise.all(stores.map((s) => s.close()));
      cleanup();
    },
  };
  return backend;
}

const backends: Record<string, () => Promise<Backend>> = {
  async memory() {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    const backend: Backend = {
      listings: 0,
      open: async (extra = {}) => createKeyStore({ storage: counting(storage, backend), atomic, ...extra }),
      atomic: async () => atomic,
      rawValues: async () =>
        Promise.all((await storage.getKeys()).map(async (key) => JSON.stringify(await storage.getItem(key)))),
      close: () => storage.dispose(),
    };
    return backend;
  },
  fs: () => fsBackend(false),
  // The CLI's way: the same driver doing its file operations on the calling thread.
  "fs (blocking)": () => fsBackend(true),
  async redis() {
    const prefix = `contract${++prefixes}`;
    const url = `${redis.url}?prefix=${prefix}`;
    const stores: KeyStore[] = [];
    const scans = async () => {
      const stats = await admin.info("commandstats");
      return [...stats.matchAll(/^cmdstat_(?:scan|keys):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const backend: Backend = {
      listings: 0,
      open: async (extra = {}) => {
        const { storage, atomic, dispose } = await openRedisBackend(url);
        const store = createKeyStore({ storage: counting(storage, backend), atomic, dispose, ...extra });
        stores.push(store);
        return store;
      },
      atomic: async () => {
        const opened = await openRedisBackend(url);
        disposers.push(opened.dispose);
        return opened.atomic;
      },
      rawValues: async () => {
        const keys = await admin.keys(`${prefix}:*`);
        return Promise.all(
          keys.map(async (key) => {
            const type = await admin.type(key);
            if (type === "set") return (await admin.smembers(key)).join("\n");
            return type === "zset" ? (await admin.zrange(key, 0, -1)).join("\n") : ((await admin.get(key)) ?? ""); // the index pages read
          }),
        );
      },
      serverScans: scans,
      close: async () => {
        await Promise.all(stores.map((s) => s.close()));
        await Promise.all(disposers.splice(0).map((dispose) => dispose()));
      },
    };
    return backend;
  },
};
const disposers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url, { lazyConnect: true });
  await admin.connect();
});

afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});


/** Settles every promise; returns the values and the errors apart. */
async function settle<T>(promises: Promise<T>[]): Promise<{ values: T[]; errors: unknown[] }> {
  const results = await Promise.allSettled(promises);
  return {
    values: results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : [])),
    errors: results.flatMap((r) => (r.status === "rejected" ? [r.reason] : [])),
  };
}

describe.each(Object.keys(backends))("key store contract on %s", (kind) => {
  let backend: Backend;
  let store: KeyStore;

  beforeEach(async () => {
    backend = await backends[kind]();
    store = await backend.open();
  });
  afterEach(async () => {
    await store.close();
    await backend.close();
  });

  it("create returns a secret, and get, getByName, list and verify find the key", async () => {
    const created = await store.create(input("deploy key", { description: "CI", permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] }));
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.key).toMatch(/^sapi_/);
    const info = { id: created.id, name: "deploy key", description: "CI", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] };
    expect(await store.get(created.id)).toMatchObject(info);
    expect(await store.getByName("deploy key")).toMatchObject(info);
    expect(await store.verify(created.key)).toMatchObject(info);
    expect((await store.list()).map((k) => k.id)).toEqual([created.id]);
    expect(await store.get(created.id)).not.toHaveProperty("hash");
    expect(await store.verify(generateSecret())).toBeNull();
    expect(await store.verify(created.key.slice(0, -1) + (created.key.endsWith("A") ? "B" : "A"))).toBeNull();
  });

  it("create rejects a taken name with NAME_TAKEN and leaves the existing key unchanged", async () => {
    const first = await store.create(input("ci"));
    const error = await store.create(input("ci", { roles: ["ADMIN"] })).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe("NAME_TAKEN");
    expect(error.message).toBe("API key with name 'ci' already exists. Use --overwrite to replace it.");
    expect(await store.getByName("ci")).toMatchObject({ id: first.id, roles: ["VIEWER"] });
    expect((await store.verify(first.key))?.id).toBe(first.id);
    expect(await store.list()).toHaveLength(1);
  });

  it("overwrite gives a new id and secret, and the old secret stops verifying", async () => {
    const old = await store.create(input("ci"));
    const replaced = await store.create(input("ci", { roles: ["ADMIN"] }), { overwrite: true });
    expect(replaced.id).not.toBe(old.id);
    expect(replaced.key).not.toBe(old.key);
    expect(await store.verify(old.key)).toBeNull();
    expect(await store.get(old.id)).toBeNull();
    expect(await store.verify(replaced.key)).toMatchObject({ id: replaced.id, roles: ["ADMIN"] });
    expect((await store.list()).map((k) => k.id)).toEqual([replaced.id]);
  });

  it("overwrite of a name nobody has simply creates the key", async () => {
    const created = await store.create(input("fresh"), { overwrite: true });
    expect((await store.verify(created.key))?.id).toBe(created.id);
  });

  it("deleteByName removes the key and revokes its secret; a second delete finds nothing", async () => {
    const kept = await store.create(input("kept"));
    const gone = await store.create(input("gone"));
    expect(await store.deleteByName("gone")).toMatchObject({ id: gone.id, name: "gone" });
    expect(await store.verify(gone.key)).toBeNull();
    expect(await store.getByName("gone")).toBeNull();
    expect(await store.get(gone.id)).toBeNull();
    expect(await store.deleteByName("gone")).toBeNull();
    expect((await store.list()).map((k) => k.id)).toEqual([kept.id]);
    expect((await store.verify(kept.key))?.id).toBe(kept.id);
  });

  it("deleteById removes the key and revokes its secret; an unknown id deletes nothing", async () => {
    const created = await store.create(input("by id"));
    expect(await store.deleteById(crypto.randomUUID())).toBeNull();
    expect(await store.deleteById(created.id)).toMatchObject({ id: created.id, name: "by id" });
    expect(await store.verify(created.key)).toBeNull();
    expect(await store.deleteById(created.id)).toBeNull();
    // The name is free again.
    expect((await store.create(input("by id"))).name).toBe("by id");
  });

  it("isEmpty is true only while no key exists", async () => {
    expect(await store.isEmpty()).toBe(true);
    await store.create(input("one"));
    expect(await store.isEmpty()).toBe(false);
    await store.create(input("one"), { overwrite: true });
    expect(await store.isEmpty()).toBe(false);
    await store.deleteByName("one");
    expect(await store.isEmpty()).toBe(true);
  });

  it("update changes fields, and a rename keeps names unique and the secret working", async () => {
    const a = await store.create(input("alpha"));
    await store.create(input("beta"));
    expect(await store.update(a.id, { description: "renamed", roles: ["ADMIN"] })).toMatchObject({ description: "renamed", roles: ["ADMIN"] });
    expect(await store.update(a.id, { name: "gamma" })).toMatchObject({ id: a.id, name: "gamma" });
    expect(await store.getByName("alpha")).toBeNull();
    expect((await store.getByName("gamma"))?.id).toBe(a.id);
    expect((await store.verify(a.key))?.name).toBe("gamma");
    // The old name is free, the taken one is refused.
    expect((await store.create(input("alpha"))).name).toBe("alpha");
    expect(await store.update(a.id, { name: "beta" }).catch((e) => e.code)).toBe("NAME_TAKEN");
    expect((await store.getByName("gamma"))?.id).toBe(a.id);
    expect(await store.update(a.id, { roles: [], permissions: [] }).catch((e) => e.code)).toBe("INVALID_INPUT");
    expect(await store.update(crypto.randomUUID(), { name: "delta" }).catch((e) => e.code)).toBe("NOT_FOUND");
    expect((await store.list()).map((k) => k.name).sort()).toEqual(["alpha", "beta", "gamma"]);
  });

  it("of 16 concurrent creates of one name through separate instances exactly one wins", async () => {
    const stores = await Promise.all(Array.from({ length: 16 }, () => backend.open()));
    const { values, errors } = await settle(stores.map((s) => s.create(input("race"))));
    expect(values).toHaveLength(1);
    expect(errors).toHaveLength(15);
    expect(errors.every((e) => e instanceof ServiceError && e.code === "NAME_TAKEN")).toBe(true);
    expect((await store.list()).map((k) => k.id)).toEqual([values[0].id]);
    expect((await store.verify(values[0].key))?.id).toBe(values[0].id);
  });

  it("after 16 concurrent overwrites exactly one key is live and exactly one secret verifies", async () => {
    const first = await store.create(input("hot"));
    const stores = await Promise.all(Array.from({ length: 16 }, () => backend.open()));
    const { values, errors } = await settle(stores.map((s) => s.create(input("hot"), { overwrite: true })));
    expect(errors).toEqual([]);
    const live = await store.list();
    expect(live).toHaveLength(1);
    const verified = (await Promise.all([first, ...values].map((k) => store.verify(k.key)))).filter(Boolean);
    expect(verified.map((k) => k!.id)).toEqual([live[0].id]);
    expect((await store.getByName("hot"))?.id).toBe(live[0].id);
  });

  it("an instance that remembers a verified key notices its revocation by another instance at once", async () => {
    const other = await backend.open();
    const doomed = await store.create(input("doomed"));
    const rotated = await store.create(input("rotated"));
    const changed = await store.create(input("changed"));
    for (const k of [doomed, rotated, changed]) expect((await store.verify(k.key))?.id).toBe(k.id);
    await other.deleteByName("doomed");
    expect(await store.verify(doomed.key)).toBeNull();
    await other.create(input("rotated"), { overwrite: true });
    expect(await store.verify(rotated.key)).toBeNull();
    await other.update(changed.id, { roles: ["ADMIN"] });
    expect((await store.verify(changed.key))?.roles).toEqual(["ADMIN"]);
    await other.deleteById(changed.id);
    expect(await store.verify(changed.key)).toBeNull();
  });

  it("verify's validity token stays while nothing changes, and changes with any change by any instance and after the TTL", async () => {
    const other = await backend.open();
    const mine = await store.create(input("mine"));
    await store.create(input("theirs"));
    const token = async () => (await store.verify(mine.key))!.validity;
    const first = await token();
    expect(first).toEqual(expect.any(String));
    expect(await token()).toBe(first);
    expect((await other.verify(mine.key))!.validity).not.toBe(first); // another instance vouches for itself
    await other.update(mine.id, { description: "changed" });
    const updated = await token();
    expect(updated).not.toBe(first);
    expect(await token()).toBe(updated);
    await other.deleteByName("theirs"); // another key's revocation
    vi.useFakeTimers({ toFake: ["performance"] });
    try {
      const revoked = await token();
      expect(revoked).not.toBe(updated);
      expect(await token()).toBe(revoked);
      vi.advanceTimersByTime(4_000);
      expect(await token()).toBe(revoked);
      vi.advanceTimersByTime(1_001); // past the default 5 s: checked again, a new token
      const rechecked = await token();
      expect(rechecked).not.toBe(revoked);
      expect(await token()).toBe(rechecked);
    } finally {
      vi.useRealTimers();
    }
  });

  it("stores no secret in clear, only its SHA-256", async () => {
    const created = [
      await store.create(input("one")),
      await store.create(input("two", { description: "second" })),
      await store.create(input("one"), { overwrite: true }),
    ];
    const values = (await backend.rawValues()).join("\n");
    expect(values.length).toBeGreaterThan(0);
    for (const { key } of created) {
      expect(values).not.toContain(key);
      expect(values).not.toContain(key.slice("sapi_".length, -6));
    }
    expect(values).toContain(await sha256Hex(created[1].key));
  });

  it("create, verify, lookups and deletes read by key and never list the store", async () => {
    for (let i = 0; i < 20; i++) await store.create(input(`bulk ${i}`));
    const other = await backend.open();
    const scansBefore = await backend.serverScans?.();
    backend.listings = 0;
    const created = await other.create(input("probe"));
    await other.create(input("probe"), { overwrite: true }).then((k) => other.verify(k.key));
    await other.verify(created.key);
    await other.verify(generateSecret());
    await other.getByName("bulk 3");
    await other.get(created.id);
    await other.create(input("probe")).catch(() => {});
    await other.deleteByName("probe");
    await other.deleteByName("missing");
    await other.deleteById((await other.getByName("bulk 4"))!.id);
    await other.update((await other.getByName("bulk 5"))!.id, { name: "bulk five" });
    expect(backend.listings).toBe(0);
    if (scansBefore !== undefined) expect(await backend.serverScans!()).toBe(scansBefore);
    // The instruments do see a listing.
    await other.list();
    expect(backend.listings).toBeGreaterThan(0);
    if (scansBefore !== undefined) expect(await backend.serverScans!()).toBeGreaterThan(scansBefore);
  });

  it("webhook endpoints: the secret only from add, sealed at rest; listed, changed and removed through any instance without listing the store", async () => {
    const other = await backend.open();
    const scansBefore = await backend.serverScans?.();
    backend.listings = 0;
    const { endpoint, secret } = await store.webhooks!.add({ url: "https://hooks.example.com/in", events: ["key.created"] });
    await store.webhooks!.add({ url: "http://127.0.0.1:9/second" });
    expect((await other.webhooks!.list()).map((e) => e.url)).toEqual(["https://hooks.example.com/in", "http://127.0.0.1:9/second"]);
    expect(await other.webhooks!.signingSecrets(endpoint.id)).toEqual([secret]);
    expect(await other.webhooks!.update(endpoint.id, { events: [], disabled: true })).toMatchObject({ events: [], disabled: true });
    expect(await other.webhooks!.remove(endpoint.id)).toMatchObject({ id: endpoint.id });
    expect((await store.webhooks!.list()).map((e) => e.url)).toEqual(["http://127.0.0.1:9/second"]);
    expect(backend.listings).toBe(0);
    if (scansBefore !== undefined) expect(await backend.serverScans!()).toBe(scansBefore);
    const { secret: kept } = await store.webhooks!.add({ url: "https://hooks.example.com/third" });
    const values = (await backend.rawValues()).join("\n");
    expect(values).toContain("https://hooks.example.com/third");
    expect(values).not.toContain(kept.slice("whsec_".length, -4));
    await other.close();
  });

  it("changes of one webhook endpoint through two instances at once all hold: a disable never drops a rotated secret", async () => {
    const other = await backend.open();
    for (let round = 0; round < 5; round++) {
      const { endpoint } = await store.webhooks!.add({ url: `https://hooks.example.com/r${round}` });
      const [, rotated] = await Promise.all([other.webhooks!.update(endpoint.id, { disabled: true }), store.webhooks!.rotateSecret(endpoint.id, 0)]);
      expect(await other.webhooks!.get(endpoint.id)).toMatchObject({ disabled: true });
      expect(await other.webhooks!.signingSecrets(endpoint.id)).toEqual([rotated.secret]); // the secret shown once signs
    }
  });

  it("a webhook lease is held by one instance at a time, renewed by its holder, and taken over once it lapses", async () => {
    const others = await Promise.all(Array.from({ length: 6 }, () => backend.open()));
    const held = await Promise.all(others.map((s, i) => s.webhooks!.lease.hold("webhook:wh_x", `owner${i}`, 60_000)));
    expect(held.filter(Boolean)).toHaveLength(1);
    const winner = held.indexOf(true);
    expect(await others[winner].webhooks!.lease.hold("webhook:wh_x", `owner${winner}`, 60_000)).toBe(true);
    const loser = (winner + 1) % others.length;
    expect(await others[loser].webhooks!.lease.hold("webhook:wh_x", `owner${loser}`, 60_000)).toBe(false);
    await others[winner].webhooks!.lease.release("webhook:wh_x", `owner${winner}`);
    expect(await others[loser].webhooks!.lease.hold("webhook:wh_x", `owner${loser}`, 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(await others[winner].webhooks!.lease.hold("webhook:wh_x", `owner${winner}`, 60_000)).toBe(true);
    await Promise.all(others.map((s) => s.close()));
  });

  // The store enforces the CLI's and GraphQL's rules, whoever calls it.
  const refused = async (promise: Promise<unknown>, message: string) => {
    const error = await promise.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("INVALID_INPUT");
    expect((error as ServiceError).message).toContain(message);
  };

  it("create refuses what the CLI refuses, with the CLI's messages, and stores nothing", async () => {
    const raw = store.create as (input: unknown) => Promise<unknown>;
    await refused(raw({ name: "raw-name!", roles: ["ADMIN"], permissions: [] }), "only letters, numbers, and spaces");
    await refused(raw({ name: "ok", roles: ["SUPERUSER"], permissions: [] }), "Unknown role \"SUPERUSER\"");
    await refused(raw({ name: "ok", roles: [], permissions: [{ resource: "NOPE", actions: ["READ_ANY"] }] }), "Unknown permission resource");
    await refused(raw({ name: "ok", roles: [], permissions: [] }), "at least one role or permission");
    await refused(raw({ name: "ok", roles: ["VIEWER"], permissions: [], description: `x ${generateSecret()}` }), "secret");
    await refused(raw({ name: "\u3164", roles: ["VIEWER"], permissions: [] }), "invisible");
    await refused(raw(null), "name");
    expect(await store.list()).toEqual([]);
    expect(await backend.rawValues()).toEqual([]);
  });

  it("create normalizes like the CLI: roles as a string, a name with spaces around it, NFD", async () => {
    const raw = store.create as (input: unknown) => Promise<{ name: string; roles: string[] }>;
    const created = await raw({ name: "  Cafe\u0301 key ", roles: "viewer, admin", permissions: "docker:read_any" });
    expect(created.name).toBe("Caf\u00e9 key");
    expect(created.roles).toEqual(["ADMIN", "VIEWER"]);
    expect((await store.getByName(" Cafe\u0301 key"))?.name).toBe("Caf\u00e9 key");
    expect((await store.deleteByName("Cafe\u0301 key "))?.name).toBe("Caf\u00e9 key");
  });

  it("update refuses an unknown role, an invalid name or permission, and changes nothing", async () => {
    const created = await store.create(input("keep me"));
    const raw = store.update as (id: string, patch: unknown) => Promise<unknown>;
    await refused(raw(created.id, { roles: ["ROOT"] }), "Unknown role \"ROOT\"");
    await refused(raw(created.id, { name: "bad_name" }), "only letters, numbers, and spaces");
    await refused(raw(created.id, { permissions: ["DOCKER"] }), "expected RESOURCE:ACTION");
    await refused(raw(created.id, { roles: [], permissions: [] }), "at least one role or permission");
    expect(await store.get(created.id)).toMatchObject({ name: "keep me", roles: ["VIEWER"] });
    expect((await store.verify(created.key))?.id).toBe(created.id);
    const updated = await raw(created.id, { roles: "admin", hash: "planted", createdAt: "1970" });
    expect(updated).toMatchObject({ roles: ["ADMIN"], createdAt: created.createdAt });
    expect((await store.verify(created.key))?.roles).toEqual(["ADMIN"]);
  });

  it("takeIf removes an entry only while it holds the expected value, and of concurrent callers exactly one wins", async () => {
    const [one, two] = [await backend.atomic(), await backend.atomic()];
    expect(await one.claim("names:contract", "a")).toBe(true);
    expect(await one.takeIf("names:contract", "b")).toBe(false);
    expect(await one.takeIf("names:missing", "a")).toBe(false);
    expect(await two.swap("names:contract", "b")).toBe("a");
    expect(await one.takeIf("names:contract", "a")).toBe(false); // moved on to another value: left alone
    const wins = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).takeIf("names:contract", "b")));
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await one.claim("names:contract", "c")).toBe(true); // really gone
  });

  it("exclusive runs the holders of one lock one at a time, across instances, and a failing holder releases it", async () => {
    const instances = [await backend.atomic(), await backend.atomic()];
    let inside = 0;
    let most = 0;
    const holder = (i: number) => instances[i % 2].exclusive("keys:contract", async () => {
      most = Math.max(most, ++inside);
      await new Promise((done) => setTimeout(done, 2));
      inside--;
      if (i === 3) throw new Error("holder failed");
      return i;
    });
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => holder(i)));
    expect(most).toBe(1);
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect(await instances[0].exclusive("keys:contract", async () => "free again")).toBe("free again");
  });

  it("every revocation changes the revision token another instance reads, and the revision stays one whole token", async () => {
    const watcher = await backend.atomic();
    const reader = async () => (watcher.version ? await watcher.version("meta:revision") : "");
    const created = await store.create(input("watched"));
    const seen = new Set([await reader()]);
    for (let i = 0; i < 5; i++) {
      await store.update(created.id, { description: `round ${i}` });
      seen.add(await reader());
    }
    if (watcher.version) expect(seen.size).toBe(6);
    const raw = await backend.rawValues();
    expect(raw.join("\n")).toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
  });

  it("a disable refuses the key in every instance at once, says why, keeps it listed, and an enable restores it", async () => {
    const other = await backend.open();
    const key = await store.create(input("paused"));
    expect((await store.verify(key.key))?.id).toBe(key.id); // remembered by this instance
    const disabled = await other.update(key.id, { disabled: true, disabledReason: "leaked in a log" });
    expect(disabled).toMatchObject({ disabled: true, disabledReason: "leaked in a log" });
    expect(await store.verify(key.key)).toBeNull();
    expect((await store.refusal(key.key)).reason).toBe("disabled");
    expect(await store.verifyDetailed(key.key)).toMatchObject({ valid: false, code: "DISABLED", id: key.id, name: "paused", credits: null, ratelimits: null });
    expect((await store.list()).find((k) => k.id === key.id)).toMatchObject({ disabled: true, disabledReason: "leaked in a log" });
    await other.update(key.id, { disabled: false });
    expect((await store.verify(key.key))?.id).toBe(key.id);
    const enabled = await store.get(key.id);
    expect(enabled).not.toHaveProperty("disabled");
    expect(enabled).not.toHaveProperty("disabledReason");
    expect((await other.audit()).map((e) => e.action).slice(-2)).toEqual(["disable", "enable"]);
  });

  it("a disable's reason is checked like a description, and a reason without a disable is refused", async () => {
    const key = await store.create(input("reasoned"));
    const refused = async (patch: object) => (await store.update(key.id, patch).catch((e: ServiceError) => e)) as ServiceError;
    expect((await refused({ disabled: true, disabledReason: `a ${generateSecret()}` })).message).toMatch(/must not contain an API key secret/);
    expect((await refused({ disabled: true, disabledReason: "bell\u0007" })).code).toBe("INVALID_INPUT");
    expect((await refused({ disabled: true, disabledReason: "x".repeat(501) })).message).toMatch(/at most 500/);
    expect((await refused({ disabledReason: "why" })).code).toBe("INVALID_INPUT");
    expect((await store.update("00000000-0000-4000-8000-000000000000", { disabled: true }).catch((e: ServiceError) => e.code))).toBe("NOT_FOUND");
  });

  it("counts uses per key per UTC day, adds the counts of several instances, and keeps 30 days", async () => {
    const other = await backend.open();
    const key = await store.create(input("counted"));
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const now = Date.now();
    await store.recordUse(new Map([[key.id, { at: now - 40 * 86_400_000, days: { [day(now - 40 * 86_400_000)]: 7 } }]]));
    await store.recordUse(new Map([[key.id, { at: now - 86_400_000, days: { [day(now - 86_400_000)]: 2 } }]]));
    await Promise.all([
      store.recordUse(new Map([[key.id, { at: now, days: { [day(now)]: 3 } }]])),
      other.recordUse(new Map([[key.id, { at: now - 5, days: { [day(now)]: 4 } }]])),
    ]);
    expect(await other.usage(key.id)).toEqual({
      total: 16,
      days: [{ date: day(now - 86_400_000), count: 2 }, { date: day(now), count: 7 }],
    });
    expect((await store.get(key.id))?.lastUsedAt).toBe(new Date(now).toISOString());
    expect(await store.get(key.id)).not.toHaveProperty("usage");
    await store.update(key.id, { description: "kept" });
    expect((await store.usage(key.id))?.total).toBe(16);
    await store.deleteById(key.id);
    await store.recordUse(new Map([[key.id, { at: now, days: { [day(now)]: 1 } }]]));
    expect(await store.get(key.id)).toBeNull();
    expect(await store.usage(key.id)).toBeNull();
  });

  it("verifyDetailed says why, checks permissions, and counts a working key's use off the call's path", async () => {
    const viewer = await store.create(input("verified", { permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] }));
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] }); // the recorder's tick
    expect(await store.verifyDetailed(viewer.key, { permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] })).toEqual({
      valid: true, code: "VALID", id: viewer.id, name: "verified", roles: ["VIEWER"],
      permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }], expiresAt: null, credits: null, ratelimits: null,
    });
    expect(await store.verifyDetailed(viewer.key, { permissions: [{ resource: "DOCKER", actions: ["DELETE_ANY"] }] })).toMatchObject({
      valid: false, code: "INSUFFICIENT_PERMISSIONS", id: viewer.id,
    });
    expect(await store.verifyDetailed(generateSecret())).toMatchObject({ valid: false, code: "NOT_FOUND", id: null, roles: null });
    expect(await store.verifyDetailed("not a key")).toMatchObject({ code: "NOT_FOUND" });
    try {
      expect((await store.usage(viewer.id))?.total).toBe(0); // not written on the call's path
      await vi.advanceTimersByTimeAsync(5_000);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(async () => expect(await store.usage(viewer.id)).toEqual({ total: 2, days: [{ date: new Date().toISOString().slice(0, 10), count: 2 }] }));
    expect((await store.get(viewer.id))?.lastUsedAt).toBeDefined();
  });

  it("rotate gives the same key a new secret: id and every setting stay, the old secret stops at once on every instance", async () => {
    const other = await backend.open();
    const expiresAt = new Date(Date.now() + 90 * 86_400_000).toISOString();
    const old = await store.create(input("deploy key", { description: "CI", roles: ["CONNECT"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }], expiresAt }));
    await store.recordUse(new Map([[old.id, Date.now() - 60_000]])); // a field create never sets: carried over too
    const before = await store.get(old.id);
    expect((await other.verify(old.key))?.id).toBe(old.id); // remembered by the other instance
    const rotated = await store.rotate(old.id);
    expect(rotated.key).toMatch(/^sapi_/);
    expect(rotated.key).not.toBe(old.key);
    const { key: _key, ended, ...info } = rotated;
    expect(info).toEqual(before);
    expect(ended).toBeNull(); // it had no earlier old secret to end
    expect(await other.get(old.id)).toEqual(before);
    expect(await other.verify(old.key)).toBeNull();
    expect(await store.verify(old.key)).toBeNull();
    expect(await other.verify(rotated.key)).toMatchObject({ id: old.id, roles: ["CONNECT"], description: "CI", expiresAt });
    expect(await store.list()).toEqual([before]);
    expect((await store.audit()).map((e) => [e.action, e.id])).toEqual([["create", old.id], ["rotate", old.id]]);
    const raw = (await backend.rawValues()).join("\n");
    expect(raw).not.toContain(rotated.key);
    expect(raw).toContain(sha256Hex(rotated.key));
    expect(raw).not.toContain(sha256Hex(old.key));
    // The old secret coming back is named (a sign of a leak, or of a deployment that missed the rotation).
    expect((await store.refusal(old.key)).retired).toMatchObject({ id: old.id, name: "deploy key" });
  });

  it("a key rotated with a grace period is one key with two secrets: a role cut, a disable and a delete stop both", async () => {
    const other = await backend.open();
    const old = await store.create(input("ci", { roles: ["ADMIN"] }));
    const rotated = await store.rotate(old.id, { graceMs: 10 * 60_000 });
    expect(rotated.id).toBe(old.id);
    const retiring = await other.verify(old.key);
    expect(retiring).toMatchObject({ id: old.id, name: "ci", roles: ["ADMIN"], graceUntil: rotated.retiringUntil });
    expect(Date.parse(rotated.retiringUntil!)).toBeGreaterThan(Date.now());
    expect(await other.verify(rotated.key)).toMatchObject({ id: old.id });
    expect((await other.verify(rotated.key))?.graceUntil).toBeUndefined();
    // One row, marked with the end of its old secret.
    expect((await store.list()).map((k) => [k.id, k.graceUntil, k.retiringUntil])).toEqual([[old.id, undefined, rotated.retiringUntil]]);
    await other.update(old.id, { roles: ["GUEST"] });
    for (const secret of [old.key, rotated.key]) expect((await store.verify(secret))?.roles).toEqual(["GUEST"]);
    await other.update(old.id, { disabled: true });
    for (const secret of [old.key, rotated.key]) expect(await store.verify(secret)).toBeNull();
    expect(await store.refusal(old.key)).toMatchObject({ reason: "disabled" });
    await other.update(old.id, { disabled: false });
    // A second rotation with grace ends the first one's old secret: a key has at most two working secrets.
    const third = await other.rotate(old.id, { graceMs: 60_000 });
    expect(await store.verify(old.key)).toBeNull();
    expect((await store.refusal(old.key)).retired).toMatchObject({ id: old.id, name: "ci" });
    expect(await store.verify(rotated.key)).toMatchObject({ id: old.id, graceUntil: third.retiringUntil });
    expect(await store.deleteByName("ci")).toMatchObject({ id: old.id });
    for (const secret of [old.key, rotated.key, third.key]) expect(await other.verify(secret)).toBeNull();
    expect(await store.list()).toEqual([]);
    const raw = (await backend.rawValues()).join("\n");
    for (const secret of [rotated.key, third.key]) expect(raw).not.toContain(sha256Hex(secret)); // no entry left behind
  });

  it("a rotation with grace leaves the name's other key, in an overwrite's grace period, alone: it is not a delete", async () => {
    const other = await backend.open();
    const admin = await store.create(input("pair", { roles: ["ADMIN"] }));
    const own = await store.create(input("pair"), { overwrite: true, graceMs: 60 * 60_000 });
    const rotated = await other.rotate(own.id, { graceMs: 60_000 });
    expect(await store.verify(admin.key)).toMatchObject({ id: admin.id, roles: ["ADMIN"] });
    for (const secret of [own.key, rotated.key]) expect((await other.verify(secret))?.id).toBe(own.id);
    const trail = (await other.audit()).map((e) => e.action);
    expect(trail).not.toContain("delete");
    expect(trail).toContain("rotate");
  });

  it("a rotation reports the earlier old secret it ends, decided under the key's lock: of two at once, exactly one", async () => {
    const other = await backend.open();
    const key = await store.create(input("twice", { roles: ["ADMIN"] }));
    const both = await Promise.all([store.rotate(key.id, { graceMs: 60_000 }), other.rotate(key.id, { graceMs: 60_000 })]);
    const [first, second] = both[0].ended ? [both[1], both[0]] : both;
    expect(first.ended ?? null).toBeNull(); // the original secret was the key's own, not an earlier old one
    expect(second.ended).toEqual({ until: first.retiringUntil });
    expect(await store.verify(key.key)).toBeNull(); // the one it says it ended
    const third = await other.rotate(key.id);
    expect(third.ended).toEqual({ until: second.retiringUntil });
    expect((await store.rotate(key.id)).ended ?? null).toBeNull();
  });

  it("a key rotated with a grace period has one count of credits and rate limits, one usage and one last use, for both secrets", async () => {
    const capped = await store.create(input("capped", { credits: { remaining: 4 } }));
    const limited = await store.create(input("limited", { rateLimits: [{ limit: 3, durationMs: 3_600_000 }] }));
    const cappedNew = await store.rotate(capped.id, { graceMs: 60_000 });
    const limitedNew = await store.rotate(limited.id, { graceMs: 60_000 });
    const codes = async (secrets: string[]) => {
      const found: string[] = [];
      for (const secret of secrets) found.push((await store.verifyDetailed(secret, { onUse: () => {} })).code);
      return found;
    };
    const both = (a: string, b: string, n: number) => Array.from({ length: n }, (_, i) => (i % 2 ? b : a));
    expect(await codes(both(capped.key, cappedNew.key, 6))).toEqual(["VALID", "VALID", "VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
    expect(await codes(both(limited.key, limitedNew.key, 5))).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED", "RATE_LIMITED"]);
    const at = Date.parse("2026-06-01T12:00:00Z");
    await store.recordUse(new Map([[capped.id, { at, days: { "2026-06-01": 3 } }]]));
    expect((await store.list()).find((k) => k.id === capped.id)?.lastUsedAt).toBe(new Date(at).toISOString());
    expect(await store.usage(capped.id)).toMatchObject({ total: 3 });
  });

  it("of 8 concurrent rotations through separate instances exactly one new secret verifies, and a rotation racing a delete leaves nothing working", async () => {
    const instances = [store, ...(await Promise.all(Array.from({ length: 3 }, () => backend.open())))];
    const old = await store.create(input("busy", { description: "kept" }));
    const { values, errors } = await settle(Array.from({ length: 8 }, (_, i) => instances[i % 4].rotate(old.id)));
    expect(errors).toEqual([]);
    const working = [];
    for (const k of [old, ...values]) if (await instances[1].verify(k.key)) working.push(k.key);
    expect(working).toHaveLength(1);
    expect(await store.list()).toEqual([expect.objectContaining({ id: old.id, description: "kept" })]);
    const doomed = await store.create(input("doomed"));
    const [rotation, deletion] = await Promise.allSettled([instances[1].rotate(doomed.id, { graceMs: 60_000 }), instances[2].deleteByName("doomed")]);
    expect(deletion).toMatchObject({ status: "fulfilled", value: { id: doomed.id } });
    const secrets = [doomed.key, ...(rotation.status === "fulfilled" ? [rotation.value.key] : [])];
    for (const secret of secrets) expect(await instances[3].verify(secret)).toBeNull();
    const raw = (await backend.rawValues()).join("\n");
    for (const secret of secrets) expect(raw).not.toContain(sha256Hex(secret)); // no entry left behind
    expect((await store.list()).map((k) => k.name)).toEqual(["busy"]);
  });

  it("rotate refuses an unknown id, a key in its grace period and a bad grace period, and changes nothing", async () => {
    const old = await store.create(input("ci"));
    await store.rotate(old.id, { graceMs: 60_000 });
    const replacing = await store.create(input("ci"), { overwrite: true, graceMs: 60_000 }); // the old key now in its grace period
    const twin = (await store.list()).find((k) => k.graceUntil)!;
    expect(twin.id).toBe(old.id);
    expect(await store.verify(old.key)).toBeNull(); // the replaced key keeps one secret in its grace period: its current one
    const refusals: [string, object, string, RegExp][] = [
      ["00000000-0000-4000-8000-000000000000", {}, "NOT_FOUND", /No API key found with id/],
      ["../../etc/passwd", {}, "NOT_FOUND", /No API key found with id/],
      [twin.id, {}, "NOT_FOUND", /grace period\): it can be deleted, not rotated/],
      [replacing.id, { graceMs: 0 }, "INVALID_INPUT", /at most 24h/],
      [replacing.id, { graceMs: 24 * 3_600_000 + 1 }, "INVALID_INPUT", /at most 24h/],
    ];
    const listed = await store.list();
    for (const [id, options, code, message] of refusals) {
      const error = await store.rotate(id, options).catch((e) => e);
      expect(error).toBeInstanceOf(ServiceError);
      expect([error.code, error.message]).toEqual([code, expect.stringMatching(message)]);
    }
    expect(await store.list()).toEqual(listed);
    expect((await store.audit()).filter((e) => e.action === "rotate")).toHaveLength(1);
  });

  describe("retired secrets", () => {
    /** A store instance on this backend with a clock the test moves, and no verify cache (every verify reads). */
    const clocked = async (extra: KeyStoreOptions = {}) => {
      const clock = { now: Date.parse("2026-06-01T12:00:00Z") };
      const timed = await backend.open({ now: () => clock.now, verifyCacheSize: 0, ...extra });
      return { clock, timed };
    };
    const reuses = async (s: KeyStore) => (await s.audit()).filter((e) => e.action === "reuse");

    it("a deleted key's secret is refused, and the refusal names the key it belonged to", async () => {
      const gone = await store.create(input("gone"));
      const other = await store.create(input("other"));
      await store.deleteByName("gone");
      const byId = await store.create(input("by id"));
      await store.deleteById(byId.id);
      const fresh = await backend.open({ verifyCacheSize: 0 }); // another process: nothing remembered
      expect(await fresh.verify(gone.key)).toBeNull();
      expect(await fresh.refusal(gone.key)).toEqual({ reason: "unknown", retired: { id: gone.id, name: "gone" } });
      expect(await fresh.refusal(byId.key)).toEqual({ reason: "unknown", retired: { id: byId.id, name: "by id" } });
      // A secret this store never issued, and a live key's, name nothing.
      expect(await fresh.refusal(generateSecret())).toEqual({ reason: "unknown" });
      expect(await fresh.refusal(other.key)).toEqual({ reason: "unknown" });
      await fresh.close();
    });

    it("a retired hash never verifies: not through its retired entry, not from a cache, not after its name is taken again", async () => {
      const old = await store.create(input("ci"));
      expect((await store.verify(old.key))?.id).toBe(old.id); // remembered by this instance
      await store.deleteByName("ci");
      const again = await store.create(input("ci"));
      const fresh = await backend.open();
      for (const s of [store, fresh]) {
        expect(await s.verify(old.key)).toBeNull();
        expect((await s.verify(again.key))?.id).toBe(again.id);
      }
      // Only the hash is kept with the key's id and name: no roles, no permissions, no secret.
      const raw = (await backend.rawValues()).filter((v) => v.includes("retiredAt"));
      expect(raw).toHaveLength(1);
      expect(Object.keys(JSON.parse(raw[0])).sort()).toEqual(["id", "name", "retiredAt"]);
      expect((await backend.rawValues()).join("\n")).not.toContain(old.key);
      await fresh.close();
    });

    it("an overwrite retires the old secret at once, or with a grace period once it is over", async () => {
      const { clock, timed } = await clocked();
      const first = await timed.create(input("deploy"));
      const second = await timed.create(input("deploy"), { overwrite: true });
      expect(await timed.refusal(first.key)).toEqual({ reason: "unknown", retired: { id: first.id, name: "deploy" } });
      await timed.create(input("deploy"), { overwrite: true, graceMs: 60_000 });
      expect((await timed.verify(second.key))?.id).toBe(second.id); // in its grace period: no reuse
      clock.now += 61_000;
      expect(await timed.verify(second.key)).toBeNull();
      expect(await timed.refusal(second.key)).toEqual({ reason: "expired", retired: { id: second.id, name: "deploy" } });
      expect(await timed.deleteExpired()).toHaveLength(1); // its record goes; it stays retired
      expect(await timed.refusal(second.key)).toEqual({ reason: "unknown", retired: { id: second.id, name: "deploy" } });
      await timed.close();
    });

    it("a refused retired secret is audited as reuse by that key, at most once per key per minute", async () => {
      const { clock, timed } = await clocked();
      const a = await timed.create(input("a"));
      const b = await timed.create(input("b"));
      await timed.deleteByName("a");
      await timed.deleteByName("b");
      for (let i = 0; i < 5; i++) await timed.refusal(a.key);
      await timed.refusal(b.key);
      await timed.refusal(generateSecret()); // never issued: no event
      expect((await reuses(timed)).map((e) => [e.id, e.name, e.actor])).toEqual([
        [a.id, "a", { kind: "key", id: a.id, name: "a" }],
        [b.id, "b", { kind: "key", id: b.id, name: "b" }],
      ]);
      clock.now += 59_000;
      await timed.refusal(a.key);
      expect(await reuses(timed)).toHaveLength(2);
      clock.now += 2_000;
      await timed.refusal(a.key);
      expect((await reuses(timed)).map((e) => e.id)).toEqual([a.id, b.id, a.id]);
      await timed.close();
    });

    it("retired entries are kept retiredRetentionMs, then ignored, and deleteExpired removes them", async () => {
      const { clock, timed } = await clocked({ retiredRetentionMs: 3_600_000 });
      const early = await timed.create(input("early"));
      const late = await timed.create(input("late"));
      await timed.deleteByName("early");
      clock.now += 1_800_000;
      await timed.deleteByName("late");
      clock.now += 1_800_000; // early's entry is an hour old, late's half an hour
      expect(await timed.refusal(early.key)).toEqual({ reason: "unknown" });
      expect(await timed.refusal(late.key)).toEqual({ reason: "unknown", retired: { id: late.id, name: "late" } });
      const retiredValues = async () => (await backend.rawValues()).filter((v) => v.includes("retiredAt"));
      expect(await retiredValues()).toHaveLength(2);
      expect(await timed.deleteExpired()).toEqual([]);
      expect((await retiredValues()).map((v) => JSON.parse(v).id)).toEqual([late.id]);
      clock.now += 1_800_000;
      await timed.deleteExpired();
      expect(await retiredValues()).toEqual([]);
      await timed.close();
    });
  });
});

describe("retired secrets on Redis", () => {
  it("carry the retention as their TTL, so Redis drops them by itself", async () => {
    const prefix = `retired${++prefixes}`;
    const { storage, atomic, dispose } = await openRedisBackend(`${redis.url}?prefix=${prefix}`);
    const store = createKeyStore({ storage, atomic, dispose, retiredRetentionMs: 2 * 86_400_000 });
    try {
      const gone = await store.create(input("gone"));
      await store.deleteByName("gone");
      const ttl = await admin.ttl(`${prefix}:retired:${sha256Hex(gone.key)}`);
      expect(ttl).toBeGreaterThan(2 * 86_400 - 60);
      expect(ttl).toBeLessThanOrEqual(2 * 86_400);
      // Nothing else of the key is left to expire: only its retired entry remains under the prefix.
      expect((await admin.keys(`${prefix}:*`)).filter((k) => k.includes(gone.id) || k.includes(sha256Hex(gone.key)))).toEqual([`${prefix}:retired:${sha256Hex(gone.key)}`]);
    } finally {
      await store.close();
    }
  });
});

describe("verifyDetailed on an expired key", () => {
  it("answers EXPIRED with the key's id, and counts no use", async () => {
    let now = Date.parse("2026-06-01T00:00:00Z");
    const store = createKeyStore({ now: () => now });
    const short = await store.create(input("short", { expiresAt: "2026-06-01T01:00:00Z" }));
    now += 2 * 3_600_000;
    expect(await store.verifyDetailed(short.key)).toMatchObject({ valid: false, code: "EXPIRED", id: short.id, expiresAt: "2026-06-01T01:00:00.000Z" });
    await store.close();
  });
});
