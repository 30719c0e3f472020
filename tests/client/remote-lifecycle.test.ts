// The audit trail through GraphQL and remote mode: every mutation and every remote-mode change
// records the calling key as its actor; auditLog needs API_KEY:READ_ANY; remote mode creates with expiry
// and grace, updates expiry, deletes expired keys and reads the trail through the service.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedKey, Role } from "../../lib/core/model.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { createRemoteBackend } from "../../lib/client/remote.ts";
import { runCli } from "../helpers/cli.ts";
import { gql } from "../helpers/server.ts";

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const EVENT = "at action id name actor { kind user host id name } changed replaced";

let store: KeyStore;
let server: RunningServer;
let admin: CreatedKey;
/** The store's clock: real time plus an offset the tests move forward to expire keys. */
let offset = 0;

beforeAll(async () => {
  store = createKeyStore({ now: () => Date.now() + offset });
  server = await serve({ store, port: 0, recordLastUse: { tickMs: 20 }, onError: (e) => console.error(e) });
  admin = await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] });
});
afterAll(() => server?.close());

const make = (name: string, roles: Role[] = [], permissions: { resource: any; actions: any[] }[] = []) =>
  store.create({ name, roles, permissions });
const call = (query: string, variables?: Record<string, unknown>, key = admin.key) => gql(server.url, query, { key, variables });
const byAdmin = () => ({ kind: "key", id: admin.id, name: "admin" });
/** The key "ci" that the first test replaces with a grace period of a minute. */
let replacedCi: string;
/** The events after `since` (the store's own trail), without times. */
const eventsSince = async (count: number) =>
  (await store.audit()).slice(-count).map(({ at: _, ...event }) => event);

describe("audit events of GraphQL mutations", () => {
  it("each mutation appends its event with the calling key as actor, and auditLog returns them oldest first", async () => {
    const actor = { kind: "key", id: admin.id, name: "admin" };
    const made = (await call(`mutation { apiKey { create(input: { name: "ci", roles: [VIEWER], expiresAt: "${iso(Date.now() + HOUR)}" }) { id expiresAt } } }`))
      .body.data.apiKey.create;
    const id = made.id;
    replacedCi = id;
    await call(`mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { id } } }`, {
      input: { id, description: "nightly", expiresAt: null },
    });
    await call(`mutation ($id: PrefixedID!) { apiKey { addRole(input: { apiKeyId: $id, role: CONNECT }) } }`, { id });
    await call(`mutation ($id: PrefixedID!) { apiKey { removeRole(input: { apiKeyId: $id, role: CONNECT }) } }`, { id });
    const replaced = (await call(`mutation { apiKey { create(input: { name: "ci", roles: [GUEST], overwrite: true, graceSeconds: 60 }) { id } } }`))
      .body.data.apiKey.create.id;
    const deleted = await call(`mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, { ids: [replaced] });
    expect(deleted.body.data.apiKey.delete).toBe(true);

    const expected = [
      { action: "create", id, name: "ci", actor },
      { action: "update", id, name: "ci", actor, changed: ["description", "expiresAt"] },
      { action: "update", id, name: "ci", actor, changed: ["roles"] },
      { action: "update", id, name: "ci", actor, changed: ["roles"] },
      { action: "overwrite", id: replaced, name: "ci", actor, replaced: id },
      { action: "delete", id: replaced, name: "ci", actor },
    ];
    expect(await eventsSince(6)).toEqual(expected);

    const { body } = await call(`{ auditLog(since: "1h", limit: 6) { ${EVENT} } }`);
    const log = body.data.auditLog;
    expect(log.map(({ at: _, ...e }: { at: string }) => e)).toEqual(
      expected.map((e) => ({ changed: null, replaced: null, ...e, actor: { ...actor, user: null, host: null } })),
    );
    for (const event of log) expect(Date.parse(event.at)).toBeGreaterThan(Date.now() - 60_000);
    // Events by the CLI or the library name the person at the host instead.
    const first = (await call(`{ auditLog(limit: 10000) { actor { kind user host id } } }`)).body.data.auditLog[0];
    expect(first).toEqual({ actor: { kind: "local", user: expect.any(String), host: expect.any(String), id: null } });
  });

  it("deleteExpired prunes the expired keys and the ended grace periods with the calling key as actor", async () => {
    const temp = await store.create({ name: "temp", roles: ["GUEST"], permissions: [], expiresAt: iso(Date.now() + HOUR) });
    offset += 2 * HOUR;
    const { body } = await call("mutation { apiKey { deleteExpired { id name } } }");
    expect(body.data.apiKey.deleteExpired).toEqual([{ id: replacedCi, name: "ci" }, { id: temp.id, name: "temp" }]);
    expect(await eventsSince(2)).toEqual([
      { action: "prune", id: replacedCi, name: "ci", actor: byAdmin() },
      { action: "prune", id: temp.id, name: "temp", actor: byAdmin() },
    ]);
    expect((await call("mutation { apiKey { deleteExpired { id } } }")).body.data.apiKey.deleteExpired).toEqual([]);
  });

  it("auditLog and deleteExpired need API_KEY:READ_ANY and API_KEY:DELETE_ANY: FORBIDDEN without", async () => {
    const viewer = await make("viewer", ["VIEWER"]); // READ_ANY on everything but API_KEY
    const reader = await make("reader", [], [{ resource: "API_KEY", actions: ["READ_ANY"] }]);
    const denied = await call(`{ auditLog { id } online }`, undefined, viewer.key);
    expect(denied.status).toBe(200);
    expect(denied.body.data).toEqual({ auditLog: null, online: true });
    expect(denied.body.errors.map((e: any) => [e.path, e.extensions.code])).toEqual([[["auditLog"], "FORBIDDEN"]]);
    expect(denied.body.errors[0].message).toContain("API_KEY:READ_ANY");

    expect((await call(`{ auditLog(limit: 1) { action } }`, undefined, reader.key)).body.data.auditLog).toHaveLength(1);
    const prune = await call(`mutation { apiKey { deleteExpired { id } } }`, undefined, reader.key);
    expect(prune.body.errors[0]).toMatchObject({ path: ["apiKey", "deleteExpired"], extensions: { code: "FORBIDDEN" } });
  });

  it("auditLog refuses a since it cannot read and a limit out of bounds", async () => {
    for (const [args, message] of [
      [`since: "yesterday"`, /since needs a duration back from now \(45s, 30m, 12h, 7d\) or an ISO 8601 time/],
      [`limit: 0`, /limit is from 1 to 10000/],
      [`limit: 10001`, /limit is from 1 to 10000/],
    ]) {
      const { body } = await call(`{ auditLog(${args}) { id } }`);
      expect(body.errors[0].extensions.code, args as string).toBe("INVALID_INPUT");
      expect(body.errors[0].message).toMatch(message);
    }
    const future = await call(`{ auditLog(since: "${iso(Date.now() + offset + HOUR)}") { id } }`);
    expect(future.body.data.auditLog).toEqual([]);
  });
});

describe("remote mode (createRemoteBackend)", () => {
  it("creates with expiry and grace, updates expiry, deletes expired keys, lists lifecycle fields and reads the trail; the calling key is the actor", async () => {
    const remote = createRemoteBackend({ baseUrl: server.url, apiKey: admin.key });
    offset += 60_000; // the store's clock past every earlier event
    const since = Date.now() + offset;
    const expiresAt = iso(Date.now() + offset + HOUR);
    const made = await remote.create({ name: "deploy", roles: ["GUEST"], permissions: [], expiresAt });
    expect(made).toMatchObject({ name: "deploy", expiresAt });
    const next = await remote.create({ name: "deploy", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: 90_000 });
    const listed = await remote.list();
    const old = listed.find((k) => k.id === made.id)!;
    expect(Date.parse(old.graceUntil!) - Date.parse(next.createdAt)).toBeGreaterThanOrEqual(89_000);
    expect(listed.find((k) => k.id === next.id)!.graceUntil).toBeUndefined();

    const updated = await remote.update(next.id, { expiresAt: iso(Date.now() + offset + 2 * HOUR) });
    expect(updated.expiresAt).toBe(iso(Date.parse(updated.expiresAt!)));
    expect((await remote.update(next.id, { expiresAt: null })).expiresAt).toBeUndefined();

    offset += 5 * 60_000; // past the old key's grace period
    const pruned = await remote.deleteExpired();
    expect(pruned.map((k) => k.id)).toEqual([made.id]);

    // The admin key has been used all along: its lastUsedAt reaches the list within a tick or two.
    await expect.poll(async () => (await remote.list()).find((k) => k.id === admin.id)?.lastUsedAt, { timeout: 2_000 }).toBeDefined();

    const events = await remote.audit({ since });
    expect(events.map((e) => [e.action, e.name])).toEqual([
      ["create", "deploy"],
      ["overwrite", "deploy"],
      ["update", "deploy"],
      ["update", "deploy"],
      ["prune", "deploy"],
    ]);
    for (const event of events) expect(event.actor).toEqual(byAdmin());
    expect(events[1]).toMatchObject({ id: next.id, replaced: made.id });
    expect(events[2].changed).toEqual(["expiresAt"]);
    expect(await remote.audit({ since, limit: 2 })).toEqual(events.slice(-2));
    expect(await store.audit({ since })).toEqual(events);
  });

  it("`apikey --list --json --url` (the CLI, a child process) shows expiresAt and lastUsedAt from the service", async () => {
    const temp = await store.create({ name: "listed", roles: ["GUEST"], permissions: [], expiresAt: iso(Date.now() + offset + HOUR) });
    await gql(server.url, "{ me { id } }", { key: temp.key });
    await expect.poll(async () => (await store.get(temp.id))?.lastUsedAt, { timeout: 2_000 }).toBeDefined();
    const result = await runCli(["apikey", "--list", "--json", "--url", server.url], {
      env: { SERVICE_API_KEY: admin.key, SERVICE_API_STORE: undefined },
    });
    expect(result.code, result.stderr).toBe(0);
    const shown = JSON.parse(result.stdout).keys.find((k: { id: string }) => k.id === temp.id);
    expect(shown).toEqual({ ...(await store.get(temp.id)) });
  });
});

describe("remote mode against a hostile service", () => {
  it("refuses lifecycle fields and audit events of the wrong shape, and escapes the text it keeps", async () => {
    let data: unknown;
    const hostile = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ data }));
      });
    });
    await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", resolve));
    try {
      const remote = createRemoteBackend({ baseUrl: `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`, apiKey: admin.key });
      const key = { id: "x", name: "x", description: null, roles: [], permissions: [], createdAt: iso(0) };
      data = { apiKeys: [{ ...key, lastUsedAt: "\u001b]0;pwned\u0007" }] };
      expect(await remote.list().catch((e) => e.message)).toMatch(/apiKeys\.0\.lastUsedAt/);
      data = { apiKey: { deleteExpired: [{ ...key, expiresAt: 42 }] } };
      expect(await remote.deleteExpired().catch((e) => e.message)).toMatch(/deleteExpired\.0\.expiresAt/);
      const event = { at: iso(0), action: "create", id: "x", name: "x", changed: null, replaced: null };
      data = { auditTrail: { events: [{ ...event, actor: { kind: "root", id: "x", name: "x" } }], cursor: null } };
      expect(await remote.audit().catch((e) => e.message)).toMatch(/auditTrail\.events\.0\.actor/);
      data = { auditTrail: { events: [{ ...event, actor: { kind: "local", user: "u", host: "h", id: null, name: null } }], cursor: 42 } };
      expect(await remote.audit().catch((e) => e.message)).toMatch(/auditTrail\.cursor/);
      data = { auditTrail: { events: [{ ...event, name: "evil\u001b[2J", actor: { kind: "local", user: "u\u202e", host: "h", id: null, name: null } }], cursor: null } };
      expect(await remote.audit()).toEqual([
        { at: iso(0), action: "create", id: "x", name: "evil\\u{1b}[2J", actor: { kind: "local", user: "u\\u{202e}", host: "h" } },
      ]);
    } finally {
      hostile.closeAllConnections();
      hostile.close();
    }
  });
});
