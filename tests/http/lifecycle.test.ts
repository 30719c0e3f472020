// Key lifecycle in the service: expiry and grace periods at the exact instant, with a clock the
// test controls (the store's `now`), remembered verifications and answers included; last use coalesced by
// each server (the recorder's `now`), written off the request path and flushed when the server closes.
import { describe, expect, it } from "vitest";
import { createStorage } from "unstorage";
import type { Role } from "../../lib/core/model.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import type { KeyUse } from "../../lib/store/types.ts";
import { gql, inProcessServers, startServer } from "../helpers/server.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { resolveLastUse } from "../../lib/cli/commands/serve.ts";
import { dependsOnKeyOnly, parseDocument } from "../../lib/graphql/schema.ts";
import { getOperationAST } from "graphql";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const EXPIRED = /^Expired API key/;

const start = inProcessServers();
const make = (store: KeyStore, name: string, roles: Role[] = ["ADMIN"], expiresAt?: string) =>
  store.create({ name, roles, permissions: [], ...(expiresAt ? { expiresAt } : {}) });

/** A memory store whose storage counts every write, and whose clock the test sets. */
function countedStore() {
  const storage = createStorage();
  let writes = 0;
  for (const method of ["setItem", "setItems", "setItemRaw", "removeItem"] as const) {
    const original = storage[method].bind(storage) as (...args: unknown[]) => Promise<unknown>;
    (storage as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => (writes++, original(...args));
  }
  const clock = { now: T0 };
  const store = createKeyStore({ storage, now: () => clock.now });
  return { store, clock, writes: () => writes };
}

describe("expiry in the service", () => {
  it("an expired key gets 401 saying it expired from its expiry's exact instant, remembered verification and answers included, with no store write", async () => {
    const { store, clock, writes } = countedStore();
    const server = await start({ store, recordLastUse: false });
    const temp = await make(store, "temp", ["GUEST"], iso(T0 + 60_000));
    const gone = await make(store, "gone", ["GUEST"]);
    await store.deleteById(gone.id);

    // Twice: the second is answered from memory (the verification and the `me` answer are remembered).
    for (let i = 0; i < 2; i++) expect((await gql(server.url, "{ me { id } }", { key: temp.key })).body.data.me.id).toBe(temp.id);
    clock.now = T0 + 59_999;
    expect((await gql(server.url, "{ me { id } }", { key: temp.key })).status).toBe(200);

    clock.now = T0 + 60_000;
    const before = writes();
    const refused = await gql(server.url, "{ me { id } }", { key: temp.key });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe("Bearer");
    expect(refused.body.errors[0].extensions.code).toBe("UNAUTHENTICATED");
    expect(refused.body.errors[0].message).toMatch(EXPIRED);
    expect((await gql(server.url, "{ online }", { key: temp.key })).body.errors[0].message).toMatch(EXPIRED);
    expect(writes()).toBe(before);

    // A revoked key keeps the message it always had.
    const revoked = await gql(server.url, "{ me { id } }", { key: gone.key });
    expect(revoked.status).toBe(401);
    expect(revoked.body.errors[0].message).toBe("Invalid or revoked API key");
  });

  it("an expired key's use is not recorded: the refusal writes nothing, now or at the next tick", async () => {
    const { store, clock, writes } = countedStore();
    const temp = await make(store, "temp", ["GUEST"], iso(T0 + 1_000));
    clock.now = T0 + 1_000;
    const server = await start({ store, recordLastUse: { tickMs: 10, now: () => clock.now } });
    const before = writes();
    for (let i = 0; i < 5; i++) expect((await gql(server.url, "{ me { id } }", { key: temp.key })).status).toBe(401);
    await new Promise((r) => setTimeout(r, 100));
    await server.close();
    expect(writes()).toBe(before);
    expect((await store.list())[0].lastUsedAt).toBeUndefined();
  });

  it("a key replaced with graceSeconds authenticates until graceUntil, then gets 401 saying it expired; the new key works throughout", async () => {
    const { store, clock } = countedStore();
    const server = await start({ store, recordLastUse: false });
    const admin = await make(store, "admin");
    const old = await make(store, "deploy", ["VIEWER"]);
    expect((await gql(server.url, "{ me { id } }", { key: old.key })).body.data.me.id).toBe(old.id);

    const replaced = await gql(
      server.url,
      `mutation { apiKey { create(input: { name: "deploy", roles: [VIEWER], overwrite: true, graceSeconds: 30 }) { id key graceUntil } } }`,
      { key: admin.key },
    );
    const fresh = replaced.body.data.apiKey.create;
    expect(fresh.graceUntil).toBeNull(); // the new key has no grace period; the old one has
    const listed = (await gql(server.url, "{ apiKeys { id name graceUntil } }", { key: admin.key })).body.data.apiKeys;
    expect(listed.find((k: { id: string }) => k.id === old.id)).toEqual({ id: old.id, name: "deploy", graceUntil: iso(T0 + 30_000) });

    clock.now = T0 + 29_999;
    expect((await gql(server.url, "{ me { id } }", { key: old.key })).body.data.me.id).toBe(old.id);
    expect((await gql(server.url, "{ me { id } }", { key: fresh.key })).body.data.me.id).toBe(fresh.id);
    clock.now = T0 + 30_000;
    const refused = await gql(server.url, "{ me { id } }", { key: old.key });
    expect(refused.status).toBe(401);
    expect(refused.body.errors[0].message).toMatch(EXPIRED);
    expect((await gql(server.url, "{ me { id } }", { key: fresh.key })).body.data.me.id).toBe(fresh.id);
  });

  it("graceSeconds needs overwrite and at most 24 hours; a past expiresAt is refused", async () => {
    const { store } = countedStore();
    const server = await start({ store, recordLastUse: false });
    const admin = await make(store, "admin");
    const create = (input: string) => gql(server.url, `mutation { apiKey { create(input: { ${input} }) { id } } }`, { key: admin.key });
    for (const [input, message] of [
      [`name: "a", roles: [GUEST], graceSeconds: 60`, /needs overwrite/],
      [`name: "admin", roles: [GUEST], overwrite: true, graceSeconds: 86401`, /from 1 to 86400/],
      [`name: "a", roles: [GUEST], expiresAt: "2020-01-01T00:00:00Z"`, /expiresAt.*not in the future/],
      [`name: "a", roles: [GUEST], expiresAt: "tomorrow"`, /expiresAt needs an ISO 8601 time/],
    ] as const) {
      const { body } = await create(input);
      expect(body.errors[0].extensions.code, input).toBe("INVALID_INPUT");
      expect(body.errors[0].message, input).toMatch(message);
    }
    expect((await store.list()).map((k) => k.name)).toEqual(["admin"]);
  });

  it("update sets and clears expiresAt; deleteExpired removes the expired keys and returns them", async () => {
    const { store, clock } = countedStore();
    const server = await start({ store, recordLastUse: false });
    const admin = await make(store, "admin");
    const temp = await make(store, "temp", ["GUEST"]);
    const update = (expiresAt: string | null) =>
      gql(server.url, `mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { expiresAt } } }`, {
        key: admin.key,
        variables: { input: { id: temp.id, expiresAt } },
      });
    expect((await update(iso(T0 + 5_000))).body.data.apiKey.update).toEqual({ expiresAt: iso(T0 + 5_000) });
    expect((await update(null)).body.data.apiKey.update).toEqual({ expiresAt: null });
    await update(iso(T0 + 5_000));
    clock.now = T0 + 5_000;
    const pruned = await gql(server.url, "mutation { apiKey { deleteExpired { id name expiresAt } } }", { key: admin.key });
    expect(pruned.body.data.apiKey.deleteExpired).toEqual([{ id: temp.id, name: "temp", expiresAt: iso(T0 + 5_000) }]);
    expect((await store.list()).map((k) => k.name)).toEqual(["admin"]);
  });
});

describe("last use in the service", () => {
  /** A store whose `recordUse` calls are kept, and a recorder clock the test sets. */
  function recorded() {
    const store = createKeyStore();
    const calls: Map<string, number | KeyUse>[] = [];
    const counted: KeyStore = { ...store, recordUse: async (uses) => (calls.push(new Map(uses)), store.recordUse(uses)) };
    /** The times written for key `id`, in order. */
    const writesOf = (id: string) => calls.filter((uses) => uses.has(id)).map((uses) => (uses.get(id) as KeyUse).at);
    return { store, counted, calls, writesOf, clock: { now: T0 } };
  }

  it("N requests make one write within the tick, then at most one a minute per key; lastUsedAt shows in apiKeys; close writes the rest", async () => {
    const { store, counted, writesOf, clock } = recorded();
    const tickMs = 20;
    const server = await start({ store: counted, recordLastUse: { tickMs, now: () => clock.now } });
    const a = await make(store, "a");
    const b = await make(store, "b", ["GUEST"]);

    // Remembered answers (`me`) count as uses too, as do computed ones.
    const sent = performance.now();
    await Promise.all(Array.from({ length: 40 }, (_, i) => gql(server.url, i % 2 ? "{ me { id } }" : "{ apiKeys { id } }", { key: a.key })));
    await Promise.all(Array.from({ length: 10 }, () => gql(server.url, "{ me { id } }", { key: b.key })));
    await expect.poll(() => writesOf(a.id).length + writesOf(b.id).length, { interval: 5, timeout: 2_000 }).toBe(2);
    // Within a tick or two of the last request, give or take a busy machine's timer lag.
    expect(performance.now() - sent).toBeLessThan(1_000);
    expect([writesOf(a.id), writesOf(b.id)]).toEqual([[T0], [T0]]);
    const seen = (await gql(server.url, "{ apiKeys { name lastUsedAt } }", { key: a.key })).body.data.apiKeys;
    expect(seen).toEqual([{ name: "a", lastUsedAt: iso(T0) }, { name: "b", lastUsedAt: iso(T0) }]);

    // Within the minute: uses are noted, nothing is written, however many ticks pass.
    clock.now = T0 + 30_000;
    await Promise.all(Array.from({ length: 20 }, () => gql(server.url, "{ me { id } }", { key: a.key })));
    await new Promise((r) => setTimeout(r, tickMs * 10));
    expect([writesOf(a.id), writesOf(b.id)]).toEqual([[T0], [T0]]);

    // A minute after the first write: the latest use seen meanwhile is written, for the key that had one.
    clock.now = T0 + 60_000;
    await expect.poll(() => writesOf(a.id).length, { interval: 5, timeout: 2_000 }).toBe(2);
    expect([writesOf(a.id), writesOf(b.id)]).toEqual([[T0, T0 + 30_000], [T0]]);
    expect((await store.get(a.id))?.lastUsedAt).toBe(iso(T0 + 30_000));

    // What is pending when the server closes is written then, not lost.
    clock.now = T0 + 70_000;
    await gql(server.url, "{ me { id } }", { key: b.key });
    await server.close();
    expect(writesOf(b.id)).toEqual([T0, T0 + 70_000]);
    expect((await store.get(b.id))?.lastUsedAt).toBe(iso(T0 + 70_000));
  });

  it("answers holding lastUsedAt or auditLog are never remembered: a use written shows on the very next request", async () => {
    const { store, clock } = countedStore();
    const server = await start({ store, recordLastUse: false });
    const admin = await make(store, "admin");
    const query = "{ apiKeys { name lastUsedAt } }";
    expect((await gql(server.url, query, { key: admin.key })).body.data.apiKeys).toEqual([{ name: "admin", lastUsedAt: null }]);
    await store.recordUse(new Map([[admin.id, clock.now]])); // changes no verification, so no validity token
    expect((await gql(server.url, query, { key: admin.key })).body.data.apiKeys).toEqual([{ name: "admin", lastUsedAt: iso(T0) }]);
    for (const text of [query, "{ auditLog { id } }", "{ me { id } auditLog { id } }", "{ me { id } ... on Query { apiKeys { lastUsedAt } } }"]) {
      const document = parseDocument(text);
      expect(dependsOnKeyOnly(document, getOperationAST(document)!), text).toBe(false);
    }
  });

  it("recordLastUse: false writes nothing; a failed write is logged once and requests are answered meanwhile", async () => {
    const off = recorded();
    const quiet = await start({ store: off.counted, recordLastUse: false });
    const key = await make(off.store, "a");
    for (let i = 0; i < 5; i++) await gql(quiet.url, "{ me { id } }", { key: key.key });
    await quiet.close();
    expect(off.calls).toHaveLength(0);
    expect((await off.store.get(key.id))?.lastUsedAt).toBeUndefined();

    const store = createKeyStore();
    const b = await make(store, "b");
    let failing = true;
    const flaky: KeyStore = {
      ...store,
      recordUse: async (uses) => {
        if (failing) throw new Error("Key store unavailable while trying to record when keys were used: EIO");
        return store.recordUse(uses);
      },
    };
    const lines: string[] = [];
    const server = await start({
      store: flaky,
      // The default minute between writes: a failed write must not count as one, and is retried at the next tick.
      recordLastUse: { tickMs: 10 },
      storeStatus: { down: (line) => lines.push(`down: ${line}`), up: (line) => lines.push(`up: ${line}`) },
    });
    for (let i = 0; i < 10; i++) {
      expect((await gql(server.url, "{ me { id } }", { key: b.key })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 15));
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^down: cannot record when keys were last used.*EIO/);
    failing = false;
    // No new request: the uses that failed are retried on their own, at the next tick.
    await expect.poll(() => lines.length, { timeout: 2_000 }).toBe(2);
    expect(lines[1]).toBe("up: recording when keys were last used again");
    expect((await store.get(b.id))?.lastUsedAt).toBeDefined();
  });
});

describe("serve's switch for last use", () => {
  it("--no-last-use or SERVICE_API_LAST_USE=off turns it off; on by default; a value it cannot read stops serve with exit 2", async () => {
    expect(resolveLastUse(undefined, {})).toBe(true);
    expect(resolveLastUse(false, { SERVICE_API_LAST_USE: "on" })).toBe(false);
    for (const off of ["off", "0", "false", "NO"]) expect(resolveLastUse(undefined, { SERVICE_API_LAST_USE: off })).toBe(false);
    for (const on of ["on", "1", "true", " yes "]) expect(resolveLastUse(undefined, { SERVICE_API_LAST_USE: on })).toBe(true);
    const result = await runCli(["serve", "--port", "0", "--store", "memory:"], { env: { SERVICE_API_LAST_USE: "sometimes" } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("SERVICE_API_LAST_USE");
  });

  it("`serve` (a child process) writes the uses it holds on SIGTERM, before closing the store; with --no-last-use it writes none", async () => {
    const tmp = tempDir();
    try {
      for (const args of [[], ["--no-last-use"]]) {
        const store = `${tmp.dir}/keys${args.length}`;
        const made = await runCli(["apikey", "--create", "--name", "ci", "--roles", "GUEST", "--json", "--store", store]);
        const server = await startServer({ store, args });
        expect((await gql(server.url, "{ me { id } }", { key: JSON.parse(made.stdout).key })).status).toBe(200);
        expect(await server.stop()).toEqual({ code: 0, signal: null }); // at once: well within the first 5 s
        const [key] = JSON.parse((await runCli(["apikey", "--list", "--json", "--store", store])).stdout).keys;
        if (args.length) expect(key.lastUsedAt, "--no-last-use").toBeUndefined();
        else expect(Date.now() - Date.parse(key.lastUsedAt)).toBeLessThan(30_000);
      }
    } finally {
      tmp.cleanup();
    }
  });
});
