// Attacks on the key lifecycle, each held here:
// - a key in its grace period can be read, deleted and named through GraphQL and `--url` (never left usable
//   out of reach);
// - a temporary key cannot make itself, or keys it creates, permanent;
// - impossible dates (2027-02-30, +15:00) are refused, never rolled over;
// - root working on another user's store is recorded in the audit trail as root, not as that user.
import { chmodSync, chownSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CreatedKey } from "../../lib/core/model.ts";
import { parseInstant } from "../../lib/core/lifecycle.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { lacksRoot, NOBODY, NOT_ROOT } from "../helpers/users.ts";
import { gql } from "../helpers/server.ts";

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let store: KeyStore;
let server: RunningServer;
let admin: CreatedKey;

beforeAll(async () => {
  store = createKeyStore();
  server = await serve({ store, port: 0, recordLastUse: false });
  admin = await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] });
});
afterAll(() => server?.close());

const call = (query: string, variables?: Record<string, unknown>, key = admin.key) => gql(server.url, query, { key, variables });

describe("a key in its grace period", () => {
  it("is found by id (with graceUntil), deleted by id through GraphQL, and refused at once", async () => {
    const old = await store.create({ name: "rotated", roles: ["GUEST"], permissions: [] });
    const fresh = await store.create({ name: "rotated", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: HOUR });
    const read = await call(`query ($id: PrefixedID!) { apiKey(id: $id) { id graceUntil } }`, { id: old.id });
    expect(read.body.data.apiKey).toEqual({ id: old.id, graceUntil: expect.any(String) });
    expect((await call("{ me { id } }", undefined, old.key)).status).toBe(200);
    const deleted = await call(`mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, { ids: [old.id] });
    expect(deleted.body).toEqual({ data: { apiKey: { delete: true } } });
    expect((await call("{ me { id } }", undefined, old.key)).status).toBe(401);
    expect((await call("{ me { id } }", undefined, fresh.key)).status).toBe(200);
  });

  it("goes with its name: `--delete --name --url` stops the new and the old secret, as locally", async () => {
    const old = await store.create({ name: "deploy", roles: ["GUEST"], permissions: [] });
    const fresh = await store.create({ name: "deploy", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: HOUR });
    const result = await runCli(["apikey", "--delete", "--name", "deploy", "--url", server.url, "--json"], {
      env: { SERVICE_API_KEY: admin.key },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ deleted: 1, keys: [{ id: fresh.id, name: "deploy" }] });
    for (const key of [old.key, fresh.key]) expect((await call("{ me { id } }", undefined, key)).status).toBe(401);
    expect((await store.list()).filter((k) => k.name === "deploy")).toEqual([]);
  });

  it("cannot be changed, and says why", async () => {
    const old = await store.create({ name: "frozen", roles: ["GUEST"], permissions: [] });
    await store.create({ name: "frozen", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: HOUR });
    await expect(store.update(old.id, { description: "x" })).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("(its grace period): it can be deleted, not changed"),
    });
  });
});

describe("a temporary key stays temporary", () => {
  it("cannot clear or extend its own expiry, nor create a key that outlives it", async () => {
    const until = Date.now() + HOUR;
    const temp = await store.create({
      name: "temporary",
      roles: [],
      permissions: [{ resource: "API_KEY", actions: ["UPDATE_OWN", "READ_OWN", "CREATE_ANY"] }],
      expiresAt: iso(until),
    });
    const update = (expiresAt: string | null) =>
      call(`mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { expiresAt } } }`, { input: { id: temp.id, expiresAt } }, temp.key);
    for (const expiresAt of [null, iso(until + 1000), "2036-01-01"]) {
      const answer = await update(expiresAt);
      expect(answer.body.errors?.[0]?.extensions?.code, JSON.stringify(answer.body)).toBe("FORBIDDEN");
    }
    expect((await store.get(temp.id))?.expiresAt).toBe(iso(until));
    // Shortening is allowed.
    expect((await update(iso(until - 1000))).body.data.apiKey.update.expiresAt).toBe(iso(until - 1000));

    const create = (extra: string) =>
      call(`mutation { apiKey { create(input: { name: "child", permissions: [{ resource: API_KEY, actions: [READ_OWN] }]${extra} }) { id expiresAt } } }`, undefined, temp.key);
    expect((await create("")).body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect((await create(`, expiresAt: "${iso(until + HOUR)}"`)).body.errors?.[0]?.extensions?.code).toBe("FORBIDDEN");
    expect((await store.list()).some((k) => k.name === "child")).toBe(false);
    const child = (await create(`, expiresAt: "${iso(until - 2000)}"`)).body.data.apiKey.create;
    expect(child.expiresAt).toBe(iso(until - 2000));
  });
});

describe("times that do not exist", () => {
  it("are refused, not rolled over: no February 30th, April 31st, 24:00, leap second or offset past 14:00", () => {
    for (const text of ["2027-02-30", "2027-02-29", "2027-04-31T10:00:00Z", "2027-01-01T24:00Z", "2026-12-31T23:59:60Z", "2027-01-01T10:00:00+15:00", "2027-01-01T10:00+14:30", "2027-13-01"]) {
      expect(() => parseInstant(text, "--expires-at"), text).toThrow(/is not a real date and time/);
    }
    expect(iso(parseInstant("2028-02-29", "x"))).toBe("2028-02-29T00:00:00.000Z");
    expect(iso(parseInstant("2027-01-01T10:00:00+14:00", "x"))).toBe("2026-12-31T20:00:00.000Z");
  });

  it("the CLI refuses one with exit 2 and creates nothing", async () => {
    const tmp = tempDir();
    try {
      const store = join(tmp.dir, "keys");
      const result = await runCli(["apikey", "--create", "--name", "x", "-r", "GUEST", "--expires-at", "2027-02-30", "--store", store]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("not a real date");
      expect((await runCli(["apikey", "--list", "--json", "--store", store])).stdout).toBe('{"keys":[]}\n');
    } finally {
      tmp.cleanup();
    }
  });
});

describe("an overwrite of a name nobody has", () => {
  it("says Created, not Replaced, and promises no grace for a secret that never was", async () => {
    const tmp = tempDir();
    try {
      const store = join(tmp.dir, "keys");
      const result = await runCli(["apikey", "--create", "--name", "fresh", "-r", "GUEST", "--overwrite", "--grace", "1h", "--store", store]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/Created API key 'fresh'/);
      expect(result.stderr).not.toMatch(/keeps working until/);
      const again = await runCli(["apikey", "--create", "--name", "fresh", "-r", "GUEST", "--overwrite", "--grace", "1h", "--store", store]);
      expect(again.stderr).toMatch(/Replaced API key 'fresh'.*keeps working until/s);
    } finally {
      tmp.cleanup();
    }
  });
});

describe("the actor when root works on another user's store", () => {
  it.skipIf(lacksRoot)(`is root, not the store's owner (${NOT_ROOT})`, async () => {
    const tmp = tempDir();
    try {
      chmodSync(tmp.dir, 0o755);
      const dir = join(tmp.dir, "keys");
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, NOBODY, NOBODY);
      const made = await runCli(["apikey", "--create", "--name", "by root", "-r", "GUEST", "--json", "--store", dir]);
      expect(made.code, made.stderr).toBe(0);
      const audit = await runCli(["apikey", "--audit", "--json", "--store", dir]);
      const [event] = JSON.parse(audit.stdout).events;
      expect(event).toMatchObject({ action: "create", name: "by root", actor: { kind: "local", user: "root" } });
    } finally {
      tmp.cleanup();
    }
  });
});
