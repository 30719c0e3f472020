// The audit trail holds no event for a change that did not happen: a rename refused because its new name is
// taken writes nothing, on memory, files (both ways of doing file I/O) and a real Redis, from the CLI and over
// GraphQL; a rename whose event cannot be written gives its new name back.
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AuditLog, createMemoryAuditLog } from "../../lib/store/audit.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, startServer } from "../helpers/server.ts";
import { input } from "../helpers/keys.ts";

let redis: RedisServer;
let prefixes = 0;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
  await redis?.stop();
});

/** A store over each backend with its own audit trail; `wrap` may stand in front of that trail. */
const backends: Record<string, (wrap?: (log: AuditLog) => AuditLog) => Promise<KeyStore>> = {
  async memory(wrap = (log) => log) {
    const storage = createStorage();
    return createKeyStore({ storage, atomic: createLocalAtomicIndex(storage), audit: wrap(createMemoryAuditLog()) });
  },
  async fs(wrap = (log) => log) {
    const { dir, cleanup } = tempDir("service-api-audit-truthful-");
    cleanups.push(cleanup);
    const driver = fsDriver({ base: join(dir, "keys") });
    const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, audit: wrap(driver.audit!) });
    cleanups.unshift(() => store.close());
    return store;
  },
  async "fs (blocking)"(wrap = (log) => log) {
    const { dir, cleanup } = tempDir("service-api-audit-truthful-");
    cleanups.push(cleanup);
    const driver = fsDriver({ base: join(dir, "keys"), blocking: true });
    const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, audit: wrap(driver.audit!) });
    cleanups.unshift(() => store.close());
    return store;
  },
  async redis(wrap = (log) => log) {
    const backend = await openRedisBackend(`${redis.url}?prefix=truthful${++prefixes}`);
    const store = createKeyStore({ ...backend, audit: wrap(backend.audit) });
    cleanups.unshift(() => store.close());
    return store;
  },
};

describe.each(Object.keys(backends))("on %s", (name) => {
  it("a rename to a taken name is refused, changes nothing and writes no event", async () => {
    const store = await backends[name]();
    const a = await store.create(input("a"));
    const b = await store.create(input("b"));
    await expect(store.update(a.id, { name: "b" })).rejects.toMatchObject({ code: "NAME_TAKEN" });
    expect((await store.audit()).map((e) => [e.action, e.id, e.name])).toEqual([["create", a.id, "a"], ["create", b.id, "b"]]);
    expect((await store.list()).map((k) => [k.id, k.name]).sort()).toEqual([[a.id, "a"], [b.id, "b"]].sort());
  });

  it("a rename that happens writes its one event", async () => {
    const store = await backends[name]();
    const a = await store.create(input("a"));
    await store.update(a.id, { name: "c", description: "renamed" });
    const events = await store.audit();
    expect(events.map((e) => [e.action, e.id, e.name])).toEqual([["create", a.id, "a"], ["update", a.id, "c"]]);
    expect(events[1].changed).toEqual(["name", "description"]);
  });

  it("a rename whose event cannot be written fails and leaves its new name free", async () => {
    const store = await backends[name]((log) => ({
      ...log,
      append: (event) => (event.action === "update" ? Promise.reject(new Error("audit trail unwritable")) : log.append(event)),
    }));
    const a = await store.create(input("a"));
    await expect(store.update(a.id, { name: "c" })).rejects.toThrow();
    expect((await store.getByName("a"))?.id).toBe(a.id);
    expect(await store.getByName("c")).toBeNull();
    const c = await store.create(input("c"));
    expect((await store.list()).map((k) => k.name).sort()).toEqual(["a", "c"]);
    expect(c.name).toBe("c");
  });
});

describe("a refused rename leaves the trail as it was", () => {
  it("from the CLI", async () => {
    const { dir, cleanup } = tempDir("service-api-audit-truthful-cli-");
    cleanups.push(cleanup);
    const cli = (...args: string[]) => runCli([...args, "--store", join(dir, "keys")]);
    await cli("apikey", "--create", "--name", "a", "-r", "VIEWER");
    await cli("apikey", "--create", "--name", "b", "-r", "VIEWER");
    const before = (await cli("apikey", "--audit", "--json")).stdout;
    const refused = await cli("apikey", "--update", "--name", "a", "--rename", "b");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("already exists");
    expect((await cli("apikey", "--audit", "--json")).stdout).toBe(before);
  });

  it("over GraphQL", async () => {
    const { dir, cleanup } = tempDir("service-api-audit-truthful-gql-");
    cleanups.push(cleanup);
    const store = join(dir, "keys");
    const admin = (await runCli(["apikey", "--create", "--name", "admin", "-r", "ADMIN", "--store", store])).stdout.trim();
    const server = await startServer({ store });
    cleanups.unshift(() => server.stop());
    const make = async (name: string) =>
      (await gql(server.url, `mutation { apiKey { create(input: { name: "${name}", roles: [VIEWER] }) { id } } }`, { key: admin }))
        .body.data.apiKey.create.id as string;
    const a = await make("a");
    await make("b");
    const trail = async () => (await gql(server.url, "{ auditLog { action id name changed } }", { key: admin })).body.data.auditLog;
    const before = await trail();
    const update = "mutation($id: PrefixedID!) { apiKey { update(input: { id: $id, name: \"b\" }) { id } } }";
    const answer = await gql(server.url, update, { key: admin, variables: { id: a } });
    expect(answer.body.errors?.[0]?.extensions?.code).toBe("NAME_TAKEN");
    expect(await trail()).toEqual(before);
    expect(before.map((e: { action: string }) => e.action)).toEqual(["create", "create", "create"]);
  });
});
