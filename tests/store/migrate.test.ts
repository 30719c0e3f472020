// A store written by the release before a rotated key became one key with two secrets, on files and on a
// real Redis, opened by this one: each rotation twin is folded into its key (its old secret works until its
// end, a disable stops both, credits and rate limits are shared), an overwrite's key in grace stays a key of
// its own, a migration cut short at any step finishes on the next open, and two opening it at once agree.
import { join } from "node:path";
import { createStorage, type Storage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, type KeyStore, type KeyStoreOptions } from "../../lib/store/key-store.ts";
import { openKeyStore, type StoreSpec } from "../../lib/store/config.ts";
import { generateSecret, sha256Hex } from "../../lib/core/secret.ts";
import type { StoredKey } from "../../lib/core/model.ts";
import { tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { input } from "../helpers/keys.ts";

const GRACE_MS = 10 * 60_000;

/**
 * What the earlier release's `rotate(id, { graceMs })` left, step by step as its lib/store/_rotate.ts wrote
 * it: the new secret's entry, a twin of the old record under a new id with `graceUntil`, the name's grace
 * entry at the twin, the old secret's entry moved to the twin, and the key's record with the new hash.
 */
async function rotateAsBefore(storage: Storage, id: string) {
  const old = (await storage.getItem(`keys:${id}`)) as StoredKey;
  const secret = generateSecret();
  const next = { ...old, hash: sha256Hex(secret) };
  await storage.setItem(`secrets:${next.hash}`, id);
  const twin: StoredKey = { ...old, id: crypto.randomUUID(), graceUntil: new Date(Date.now() + GRACE_MS).toISOString() };
  await storage.setItem(`keys:${twin.id}`, twin);
  await storage.setItem(`grace:${sha256Hex(old.name)}`, twin.id);
  await storage.setItem(`secrets:${old.hash}`, twin.id);
  await storage.setItem(`keys:${id}`, next);
  return { secret, twin };
}

interface Layout {
  spec: StoreSpec;
  /** The raw storage and the options a store over it needs (its counters too, on Redis). */
  open(): Promise<{ storage: Storage; options: KeyStoreOptions; close(): Promise<void> }>;
}

let redis: RedisServer;
const cleanups: (() => void)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  for (const cleanup of cleanups) cleanup();
});

const layouts: Record<string, () => Layout> = {
  fs: () => {
    const { dir, cleanup } = tempDir("service-api-migrate-");
    cleanups.push(cleanup);
    const base = join(dir, "keys");
    return {
      spec: { kind: "fs", dir: base },
      open: async () => {
        const driver = fsDriver({ base });
        const storage = createStorage({ driver });
        return { storage, options: { storage, atomic: driver.atomic }, close: () => storage.dispose() };
      },
    };
  },
  redis: () => {
    const url = `${redis.url}?prefix=migrate${crypto.randomUUID().slice(0, 8)}`;
    return {
      spec: { kind: "redis", url },
      open: async () => {
        const backend = await openRedisBackend(url);
        return { storage: backend.storage, options: backend, close: backend.dispose };
      },
    };
  },
};

/** Each verifyDetailed code in turn, alternating the two secrets. */
async function codes(store: KeyStore, a: string, b: string, n: number): Promise<string[]> {
  const found: string[] = [];
  for (let i = 0; i < n; i++) found.push((await store.verifyDetailed(i % 2 ? b : a, { onUse: () => {} })).code);
  return found;
}

describe.each(Object.keys(layouts))("a store written before, on %s", (kind) => {
  it("is migrated on open: a rotated key is one key with two secrets, and an overwrite's key in grace stays its own", async () => {
    const layout = layouts[kind]();
    const raw = await layout.open();
    const before = createKeyStore(raw.options);
    const capped = await before.create(input("capped", { roles: ["ADMIN"], credits: { remaining: 4 } }));
    const limited = await before.create(input("limited", { rateLimits: [{ limit: 3, durationMs: 3_600_000 }] }));
    const replaced = await before.create(input("replaced"));
    await new Promise((tick) => setTimeout(tick, 2)); // not the same millisecond: the listing orders the two by creation
    const replacing = await before.create(input("replaced"), { overwrite: true, graceMs: GRACE_MS });
    const cappedNew = await rotateAsBefore(raw.storage, capped.id);
    const limitedNew = await rotateAsBefore(raw.storage, limited.id);
    // Migrations cut short: after step 1 (the key holds the old secret, the twin is still there), and after
    // the twin's record went but before its grace entry did.
    const half = await before.create(input("half"));
    const halfNew = await rotateAsBefore(raw.storage, half.id);
    await raw.storage.setItem(`keys:${half.id}`, { ...(await raw.storage.getItem(`keys:${half.id}`) as object), retiring: { hash: sha256Hex(half.key), until: halfNew.twin.graceUntil } });
    const cut = await before.create(input("cut"));
    const cutNew = await rotateAsBefore(raw.storage, cut.id);
    await raw.storage.setItem(`keys:${cut.id}`, { ...(await raw.storage.getItem(`keys:${cut.id}`) as object), retiring: { hash: sha256Hex(cut.key), until: cutNew.twin.graceUntil } });
    await raw.storage.setItem(`secrets:${sha256Hex(cut.key)}`, cut.id);
    await raw.storage.removeItem(`keys:${cutNew.twin.id}`);
    await before.close();

    // Two processes opening it at once fold each twin once.
    const [store, alongside] = await Promise.all([openKeyStore(layout.spec), openKeyStore(layout.spec)]);
    await alongside.close();
    try {
      const rows = (await store.list()).map((k) => [k.name, k.id, k.graceUntil ? "grace" : k.retiringUntil ? "retiring" : "one"]);
      expect(rows).toEqual([
        ["capped", capped.id, "retiring"],
        ["limited", limited.id, "retiring"],
        ["replaced", replaced.id, "grace"],
        ["replaced", replacing.id, "one"],
        ["half", half.id, "retiring"],
        ["cut", cut.id, "retiring"],
      ]);
      expect((await store.get(capped.id))?.retiringUntil).toBe(cappedNew.twin.graceUntil);
      for (const [key, rotated] of [[capped, cappedNew], [half, halfNew], [cut, cutNew]] as const) {
        expect(await store.verify(key.key)).toMatchObject({ id: key.id, graceUntil: rotated.twin.graceUntil });
        expect(await store.verify(rotated.secret)).toMatchObject({ id: key.id });
      }
      expect(await store.verify(replaced.key)).toMatchObject({ id: replaced.id, graceUntil: expect.any(String) });
      // Credits and rate limits are the key's: 4 and 3 in all, whichever secret spends them.
      expect(await codes(store, capped.key, cappedNew.secret, 6)).toEqual(["VALID", "VALID", "VALID", "VALID", "USAGE_EXCEEDED", "USAGE_EXCEEDED"]);
      expect(await codes(store, limited.key, limitedNew.secret, 5)).toEqual(["VALID", "VALID", "VALID", "RATE_LIMITED", "RATE_LIMITED"]);
      // A disable stops both secrets.
      await store.update(capped.id, { disabled: true });
      for (const secret of [capped.key, cappedNew.secret]) expect(await store.verify(secret)).toBeNull();
      // Once its end has passed, the old secret is refused and the new one still works.
      const later = createKeyStore({ ...(await layout.open()).options, now: () => Date.now() + GRACE_MS + 1_000 });
      expect(await later.verify(limited.key)).toBeNull();
      expect(await later.verify(limitedNew.secret)).toMatchObject({ id: limited.id });
      await later.close();
    } finally {
      await store.close();
    }
    // Opening again changes nothing, and no twin is left.
    const again = await openKeyStore(layout.spec);
    expect((await again.list()).map((k) => k.id)).toEqual([capped.id, limited.id, replaced.id, replacing.id, half.id, cut.id]);
    const check = await layout.open();
    for (const { twin } of [cappedNew, limitedNew, halfNew, cutNew]) {
      expect(await check.storage.getItem(`keys:${twin.id}`)).toBeNull();
      expect(await check.storage.getItem(`grace:${sha256Hex(twin.name)}`)).toBeNull();
    }
    await check.close();
    await again.close();
  });
});
