// Several servers recording last use on one store (files, then Redis) while the CLI, a child process,
// deletes keys: no deleted key comes back (not listed, its record gone) and the latest time wins whichever
// server writes last. Each server's recorder runs on a clock the test sets. Server B writes at every tick
// (racing the deletes); server A holds every use until it closes, after the deletes: a stale writer.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { redisCommand, type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql } from "../helpers/server.ts";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const KEYS = 16;

/** Where a key's record lives, to prove it gone (and, for a live key, that the check looks in the right place). */
type RecordProbe = (id: string) => Promise<boolean>;

async function deleteWhileRecording(spec: string, recordExists: RecordProbe) {
  const stores: KeyStore[] = await Promise.all([0, 1, 2].map(() => openKeyStore(parseStoreSpec(spec))));
  const [setup, storeA, storeB] = stores;
  const clocks = { a: T0, b: T0 + 1_000 };
  const servers: RunningServer[] = [];
  try {
    const keys = [];
    for (let i = 0; i < KEYS; i++) keys.push(await setup.create({ name: `k${i}`, roles: ["GUEST"], permissions: [] }));
    const doomed = keys.filter((_, i) => i % 2 === 0);
    // Writes that carry uses of the keys being deleted, by server: the races this test is about.
    const doomedWrites = { a: 0, b: 0 };
    for (const [store, clock, tickMs] of [[storeA, "a", 600_000], [storeB, "b", 5]] as const) {
      const counted: KeyStore = {
        ...store,
        recordUse: (uses) => (doomed.some((k) => uses.has(k.id)) && doomedWrites[clock]++, store.recordUse(uses)),
      };
      servers.push(await serve({ store: counted, port: 0, recordLastUse: { tickMs, intervalMs: 0, now: () => clocks[clock] } }));
    }
    const kept = keys.filter((_, i) => i % 2 === 1);

    let deleting = true;
    const traffic = (async () => {
      for (let round = 0; deleting || round < 3; round++) {
        clocks.a += 10;
        clocks.b += 10;
        await Promise.all(keys.flatMap((k) => servers.map((s) => gql(s.url, "{ me { id } }", { key: k.key }))));
      }
    })();
    const deletes = await Promise.all(doomed.map((k) => runCli(["apikey", "--delete", "--name", k.name, "--json", "--store", spec])));
    deleting = false;
    await traffic;
    for (const result of deletes) expect(result.code, result.stderr).toBe(0);
    expect(doomedWrites).toEqual({ a: 0, b: expect.any(Number) });
    expect(doomedWrites.b).toBeGreaterThan(0);

    // The latest time wins: server B's later time written first, then server A's earlier one.
    clocks.a = T0 + 500_000;
    clocks.b = T0 + 900_000;
    await Promise.all(kept.map((k) => gql(servers[1].url, "{ me { id } }", { key: k.key })));
    await servers[1].close(); // writes what it holds
    await Promise.all(kept.map((k) => gql(servers[0].url, "{ me { id } }", { key: k.key })));
    await servers[0].close();
    expect(doomedWrites.a).toBe(1); // its one write, after the deletes, held uses of the deleted keys

    const listed = await runCli(["apikey", "--list", "--json", "--store", spec]);
    const after = JSON.parse(listed.stdout).keys as { id: string; lastUsedAt?: string }[];
    expect(after.map((k) => k.id).sort()).toEqual(kept.map((k) => k.id).sort());
    for (const key of after) expect(key.lastUsedAt).toBe(new Date(T0 + 900_000).toISOString());
    for (const key of doomed) {
      expect(await recordExists(key.id), `record of deleted key ${key.name}`).toBe(false);
      expect(await setup.get(key.id)).toBeNull();
    }
    expect(await recordExists(kept[0].id)).toBe(true); // the probe looks where records are
  } finally {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all(stores.map((s) => s.close()));
  }
}

describe("servers recording last use while the CLI deletes keys", () => {
  const tmp = tempDir();
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
    tmp.cleanup();
  });

  it("on a file store: no deleted key comes back, and the latest time wins", async () => {
    const dir = join(tmp.dir, "keys");
    await deleteWhileRecording(`fs:${dir}`, async (id) => existsSync(join(dir, "keys", id)));
  }, 60_000);

  it("on Redis: no deleted key comes back, and the latest time wins", async () => {
    await deleteWhileRecording(redis.url, async (id) => (await redisCommand(redis.port, `EXISTS service-api:keys:${id}`)).startsWith(":1"));
  }, 60_000);
});
