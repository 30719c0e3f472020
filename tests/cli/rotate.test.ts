// `apikey --rotate`: a new secret for a key that keeps its id and every setting. The CLI runs as a child
// process on an fs store that a server (port 0, another process) serves, so the old secret's refusal is
// checked where clients meet it; GraphQL `apiKey { rotate }` and remote mode (`--url`) go through that server.
// Also the notice of `--overwrite`, which makes a new key from the flags given.
import { spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStorage } from "unstorage";
import { createMemoryAuditLog } from "../../lib/store/audit.ts";
import { createKeyStore, createLocalAtomicIndex } from "../../lib/store/key-store.ts";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

let dir: string;
let cleanup: () => void;
let storePath: string;
let server: ServerProcess;
let admin: { key: string; id: string };

const cli = (...args: string[]) => runCli([...args, "--store", storePath]);
const remote = (key: string, ...args: string[]) => runCli(args, { env: { SERVICE_API_KEY: key, SERVICE_API_STORE: undefined } });
const me = (key: string) => gql(server.url, "{ me { id name } }", { key });
const json = (stdout: string) => JSON.parse(stdout);
const listed = async () => json((await cli("apikey", "--list", "--json")).stdout).keys as Record<string, unknown>[];
const create = async (...args: string[]) => {
  const result = await cli("apikey", "--create", "--json", ...args);
  expect(result.code, result.stderr).toBe(0);
  return json(result.stdout) as { key: string; id: string; name: string; expiresAt?: string };
};

beforeAll(async () => {
  ({ dir, cleanup } = tempDir("service-api-rotate-"));
  storePath = join(dir, "keys");
  admin = await create("--name", "admin", "-r", "ADMIN");
  server = await startServer({ store: storePath });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  cleanup?.();
});

describe("apikey --rotate on an fs store", () => {
  it("keeps the id, roles, permissions, description and expiry; the old secret is refused at once, the new one works", async () => {
    const old = await create("--name", "deploy key", "-r", "CONNECT", "-p", "DOCKER:READ_ANY", "-d", "CI pipeline", "--expires-in", "90d", "--label", "env=prod");
    expect((await me(old.key)).status).toBe(200); // the server has verified (and remembers) the old secret
    const before = (await listed()).find((k) => k.id === old.id);
    const result = await cli("apikey", "--rotate", "--name", "deploy key", "--json");
    expect(result.code, result.stderr).toBe(0);
    const rotated = json(result.stdout);
    expect(Object.keys(rotated)).toEqual(["key", "name", "id", "expiresAt"]);
    expect(rotated).toMatchObject({ name: "deploy key", id: old.id, expiresAt: old.expiresAt });
    expect(rotated.key).toMatch(/^sapi_/);
    expect(rotated.key).not.toBe(old.key);
    const after = (await listed()).filter((k) => k.name === "deploy key");
    expect(after).toEqual([before]);
    expect(before).toMatchObject({ roles: ["CONNECT"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }], description: "CI pipeline", labels: { env: "prod" } });
    const refused = await me(old.key);
    expect(refused.status).toBe(401);
    expect(await me(rotated.key)).toMatchObject({ status: 200, body: { data: { me: { id: old.id, name: "deploy key" } } } });
    const events = json((await cli("apikey", "--audit", "--json")).stdout).events as { action: string; id: string }[];
    expect(events.filter((e) => e.action !== "reuse").at(-1)).toMatchObject({ action: "rotate", id: old.id });
  });

  it("prints the secret alone on stdout, and with --grace both secrets are one key: a role cut, --disable and --delete reach both", async () => {
    const old = await create("--name", "rolling", "-r", "ADMIN", "-d", "web");
    const result = await cli("apikey", "--rotate", "--id", old.id, "--grace", "1h");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^sapi_\S+\n$/);
    const secret = result.stdout.trim();
    expect(result.stderr).toMatch(/^Rotated API key 'rolling' \(id [0-9a-f-]{36}\): a new secret, the same settings\. The old secret keeps working until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\./);
    expect(result.stderr).not.toContain(secret);
    expect(result.stderr).not.toMatch(/previous rotation/);
    const roles = async (key: string) => {
      const answer = await gql(server.url, "{ me { id roles } }", { key });
      return answer.status === 200 ? answer.body.data.me : answer.status;
    };
    expect([await roles(old.key), await roles(secret)]).toEqual([{ id: old.id, roles: ["ADMIN"] }, { id: old.id, roles: ["ADMIN"] }]);
    const keys = (await listed()).filter((k) => k.name === "rolling");
    expect(keys.map((k) => [k.id, k.graceUntil, typeof k.retiringUntil, k.description])).toEqual([[old.id, undefined, "string", "web"]]);
    expect((await cli("apikey", "--update", "--name", "rolling", "-r", "GUEST")).code).toBe(0);
    expect([await roles(old.key), await roles(secret)]).toEqual([{ id: old.id, roles: ["GUEST"] }, { id: old.id, roles: ["GUEST"] }]);
    expect((await cli("apikey", "--update", "--name", "rolling", "--disable")).code).toBe(0);
    expect([await roles(old.key), await roles(secret)]).toEqual([401, 401]);
    expect((await cli("apikey", "--update", "--name", "rolling", "--enable")).code).toBe(0);
    // A second rotation ends the first one's old secret, and says so, naming it by the end it had.
    const again = await cli("apikey", "--rotate", "--name", "rolling", "--grace", "10m");
    expect(again.code, again.stderr).toBe(0);
    const until = keys[0].retiringUntil as string;
    expect(again.stderr).toContain(`The old secret of its previous rotation, which was to keep working until ${until.replace("T", " ").slice(0, 19)} UTC, stops now`);
    const third = again.stdout.trim();
    for (const s of [old.key, secret, third]) expect(again.stderr).not.toContain(s);
    expect([await roles(old.key), await roles(secret), await roles(third)]).toEqual([401, { id: old.id, roles: ["GUEST"] }, { id: old.id, roles: ["GUEST"] }]);
    expect((await cli("apikey", "--delete", "--name", "rolling")).code).toBe(0);
    expect([await roles(secret), await roles(third)]).toEqual([401, 401]);
  });

  it("--output writes the new secret to a new 0600 file, as create does", async () => {
    const old = await create("--name", "filed", "-r", "GUEST");
    const file = join(dir, "filed.key");
    const result = await cli("apikey", "--rotate", "--name", "filed", "--output", file);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`Wrote it to ${file} (mode 0600).`);
    const secret = readFileSync(file, "utf8").trim();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await me(secret)).body.data.me.id).toBe(old.id);
    expect((await me(old.key)).status).toBe(401);
    // An existing file is refused before anything changes.
    const again = await cli("apikey", "--rotate", "--name", "filed", "--output", file);
    expect(again.code).toBe(2);
    expect((await me(secret)).status).toBe(200);
  });

  it("a new secret stdout cannot take (a full disk): exit 1, the key is kept, and the message says to rotate again", async () => {
    const old = await create("--name", "undelivered", "-r", "GUEST", "-d", "stays");
    const full = openSync("/dev/full", "w");
    const run = spawnSync(process.execPath, [CLI, "apikey", "--rotate", "--name", "undelivered", "--store", storePath], {
      stdio: ["ignore", full, "pipe"], encoding: "utf8", env: { ...process.env, LOG_LEVEL: undefined }, timeout: 20_000,
    });
    closeSync(full);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`Error: Could not write the new key's secret to stdout (ENOSPC). Key 'undelivered' (id ${old.id}) has a new secret, which is lost; its old secret no longer works. Rotate it again: service-api apikey --rotate --id ${old.id}\n`);
    expect((await listed()).find((k) => k.name === "undelivered")).toMatchObject({ id: old.id, description: "stays" });
    const again = await cli("apikey", "--rotate", "--id", old.id);
    expect((await me(again.stdout.trim())).body.data.me.id).toBe(old.id);
  });

  it("of two rotations with --grace at once, exactly one says the original secret stops now", async () => {
    for (const name of ["twice one", "twice two", "twice three"]) {
      await create("--name", name, "-r", "ADMIN");
      const both = await Promise.all([1, 2].map(() => cli("apikey", "--rotate", "--name", name, "--grace", "1h")));
      for (const result of both) expect(result.code, result.stderr).toBe(0);
      // The second (in the key's lock) ends the first one's old secret, the key's original: one notice in all.
      expect(both.map((r) => r.stderr.split("stops now").length - 1).reduce((a, b) => a + b), name).toBe(1);
    }
  }, 60_000);

  it("refuses bad input with the documented exit status, changing nothing", async () => {
    const kept = await create("--name", "kept", "-r", "GUEST");
    const cases: [string[], number, RegExp][] = [
      [["--rotate"], 2, /--rotate needs --name <name> or --id <id> to choose the key/],
      [["--rotate", "--name", "nobody"], 1, /No API key found with name: nobody/],
      [["--rotate", "--id", ""], 2, /--rotate --id needs a key id/],
      [["--rotate", "--id", "00000000-0000-4000-8000-000000000000"], 1, /No API key found with id: 00000000-0000-4000-8000-000000000000/],
      [["--rotate", "--name", "kept", "--grace", "soon"], 2, /--grace/],
      [["--rotate", "--name", "kept", "--grace", "25h"], 2, /--grace is at most 24h/],
      [["--rotate", "--create", "--name", "kept"], 2, /Choose one of .*not --create and --rotate/],
      [["--rotate", "--delete", "--name", "kept"], 2, /Choose one of .*not --delete and --rotate/],
      [["--rotate", "--name", "kept", "-r", "ADMIN"], 2, /--rotate does not take --roles/],
      [["--rotate", "--name", "kept", "--id", kept.id], 2, /Use --name or --id, not both/],
    ];
    for (const [args, code, message] of cases) {
      const result = await cli("apikey", ...args);
      expect([args, result.code], result.stderr).toEqual([args, code]);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe("");
    }
    const missing = await cli("apikey", "--rotate", "--name", "nobody", "--json");
    expect([missing.code, json(missing.stdout)]).toEqual([1, { error: "No API key found with name: nobody", code: "NOT_FOUND" }]);
    expect((await me(kept.key)).status).toBe(200);
    const events = json((await cli("apikey", "--audit", "--json")).stdout).events as { action: string; name: string }[];
    expect(events.filter((e) => e.name === "kept").map((e) => e.action)).toEqual(["create"]);
  });

  it("--overwrite says which settings of the replaced key the new one does not carry over", async () => {
    await create("--name", "weak", "-r", "VIEWER", "-p", "DOCKER:READ_ANY", "-d", "nightly", "--expires-in", "90d");
    const result = await cli("apikey", "--create", "--name", "weak", "-r", "VIEWER", "--overwrite", "--grace", "10m");
    expect(result.code, result.stderr).toBe(0);
    const note = result.stderr.split("\n").find((line) => line.startsWith("Note:"));
    expect(note).toMatch(/^Note: the new key does not carry over the expiry \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\), the description and the permissions \(DOCKER:READ_ANY\) of the key it replaced: --overwrite makes a new key from the flags given\. To change only a key's secret and keep its settings, use --rotate\.$/);
    // With --json too (stdout stays the JSON alone); and no note when nothing is dropped.
    const quiet = await cli("apikey", "--create", "--name", "weak", "-r", "ADMIN", "--overwrite", "--json");
    expect(quiet.code).toBe(0);
    expect(Object.keys(json(quiet.stdout))).toEqual(["key", "name", "id"]);
    expect(quiet.stderr).toBe("");
    const dropped = await cli("apikey", "--create", "--name", "weak", "-r", "ADMIN", "-d", "x", "--overwrite", "--json");
    const last = await cli("apikey", "--create", "--name", "weak", "-r", "ADMIN", "--overwrite", "--json");
    expect(dropped.stderr).toBe("");
    expect(last.stderr).toBe("Note: the new key does not carry over the description of the key it replaced: --overwrite makes a new key from the flags given. To change only a key's secret and keep its settings, use --rotate.\n");
  });
});

describe("apiKey { rotate } over GraphQL, and remote mode", () => {
  const ROTATE = "mutation ($id: PrefixedID!, $grace: Int) { apiKey { rotate(id: $id, graceSeconds: $grace) { id name description roles permissions { resource actions } expiresAt key } } }";
  const rotate = (key: string, id: string, grace?: number) => gql(server.url, ROTATE, { key, variables: { id, grace } });

  it("returns the key with its new secret; the old secret is refused at once", async () => {
    const old = await create("--name", "gql target", "-r", "VIEWER", "-d", "kept", "--expires-in", "30d");
    expect((await me(old.key)).status).toBe(200);
    const answer = await rotate(admin.key, old.id);
    expect(answer.body.errors).toBeUndefined();
    const rotated = answer.body.data.apiKey.rotate;
    expect(rotated).toMatchObject({ id: old.id, name: "gql target", description: "kept", roles: ["VIEWER"], permissions: [], expiresAt: old.expiresAt });
    expect(rotated.key).toMatch(/^sapi_/);
    expect((await me(old.key)).status).toBe(401);
    expect((await me(rotated.key)).body.data.me.id).toBe(old.id);
  });

  it("needs what update needs: API_KEY:UPDATE_ANY (or UPDATE_OWN on the caller's own key), and no escalation", async () => {
    const target = await create("--name", "admin two", "-r", "ADMIN");
    const updater = await create("--name", "updater", "-p", "API_KEY:UPDATE_ANY,API_KEY:READ_ANY");
    const viewer = await create("--name", "viewer", "-r", "VIEWER");
    const own = await create("--name", "self rotator", "-p", "API_KEY:UPDATE_OWN,ME:READ_ANY");
    const denied = await rotate(viewer.key, target.id);
    expect(denied.body.errors[0]).toMatchObject({ message: "Forbidden: this API key lacks the permission API_KEY:UPDATE_ANY", extensions: { code: "FORBIDDEN" } });
    const escalation = await rotate(updater.key, target.id);
    expect(escalation.body.errors[0].extensions.code).toBe("FORBIDDEN");
    expect(escalation.body.errors[0].message).toMatch(/can only grant permissions it holds itself/);
    expect((await me(target.key)).status).toBe(200); // untouched
    const self = await rotate(own.key, own.id);
    expect(self.body.data.apiKey.rotate.id).toBe(own.id);
    expect((await me(own.key)).status).toBe(401);
    const other = await rotate(self.body.data.apiKey.rotate.key, viewer.id);
    expect(other.body.errors[0].extensions.code).toBe("FORBIDDEN");
  });

  it("a temporary key cannot get a never-expiring secret by rotation; graceSeconds is checked", async () => {
    const forever = await create("--name", "forever", "-r", "GUEST");
    const temporary = await create("--name", "temporary", "-r", "ADMIN", "--expires-in", "1h");
    const outliving = await rotate(temporary.key, forever.id);
    expect(outliving.body.errors[0]).toMatchObject({ extensions: { code: "FORBIDDEN" } });
    expect(outliving.body.errors[0].message).toMatch(/must expire no later/);
    for (const grace of [0, 86_401]) {
      const bad = await rotate(admin.key, forever.id, grace);
      expect(bad.body.errors[0]).toMatchObject({ extensions: { code: "INVALID_INPUT" } });
    }
    expect((await me(forever.key)).status).toBe(200);
    const graced = await rotate(admin.key, forever.id, 600);
    expect((await me(forever.key)).status).toBe(200);
    expect((await me(graced.body.data.apiKey.rotate.key)).body.data.me.id).toBe(forever.id);
  });

  it("remote mode: --rotate --url rotates through the service, prints the create shape and records the calling key", async () => {
    const old = await create("--name", "remote one", "-r", "VIEWER", "-p", "DOCKER:READ_ANY", "-d", "far", "--expires-in", "7d");
    const result = await remote(admin.key, "apikey", "--rotate", "--name", "remote one", "--url", server.url, "--json");
    expect(result.code, result.stderr).toBe(0);
    const rotated = json(result.stdout);
    expect(Object.keys(rotated)).toEqual(["key", "name", "id", "expiresAt"]);
    expect(rotated).toMatchObject({ id: old.id, name: "remote one", expiresAt: old.expiresAt });
    expect((await me(old.key)).status).toBe(401);
    expect((await me(rotated.key)).body.data.me.id).toBe(old.id);
    expect((await listed()).find((k) => k.id === old.id)).toMatchObject({ description: "far", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
    const events = json((await cli("apikey", "--audit", "--json")).stdout).events as { action: string; id: string; actor: object }[];
    expect(events.filter((e) => e.action !== "reuse").at(-1)).toMatchObject({ action: "rotate", id: old.id, actor: { kind: "key", id: admin.id, name: "admin" } });
    const missing = await remote(admin.key, "apikey", "--rotate", "--name", "nobody", "--url", server.url);
    expect([missing.code, missing.stderr]).toEqual([1, "Error: No API key found with name: nobody\n"]);
  });
});

describe("KeyStore.rotate: the clock, and a delete racing it", () => {
  it("the old secret stops when the grace period ends; an expired key is not rotated", async () => {
    let offset = 0;
    const store = createKeyStore({ now: () => Date.now() + offset });
    const old = await store.create({ name: "clocked", roles: ["GUEST"], permissions: [], expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    const rotated = await store.rotate(old.id, { graceMs: 60_000 });
    expect((await store.verify(old.key))?.graceUntil).toBeDefined();
    offset = 61_000;
    expect(await store.verify(old.key)).toBeNull();
    expect((await store.refusal(old.key)).reason).toBe("expired");
    expect((await store.verify(rotated.key))?.id).toBe(old.id);
    offset = 3_601_000;
    const error = await store.rotate(old.id).catch((e) => e);
    expect([error.code, error.message]).toEqual(["INVALID_INPUT", expect.stringMatching(/expired at .*Give it a new expiry first/)]);
    expect(await store.verify(rotated.key)).toBeNull();
  });

  it("a delete by name that read the key before a rotation removes the rotated secret's entry too", async () => {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    const log = createMemoryAuditLog();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The deleting instance pauses at its event, after reading the key and before taking its name.
    const deleter = createKeyStore({ storage, atomic, audit: { ...log, append: async (e) => { await gate; await log.append(e); } } });
    const rotator = createKeyStore({ storage, atomic, audit: log });
    const key = await rotator.create({ name: "raced", roles: ["GUEST"], permissions: [] });
    const deleting = deleter.deleteByName("raced");
    const rotated = await rotator.rotate(key.id);
    release();
    expect(await deleting).toMatchObject({ id: key.id });
    expect(await rotator.verify(rotated.key)).toBeNull();
    expect(await storage.getKeys("secrets")).toEqual([]);
    expect(await storage.getKeys("keys")).toEqual([]);
  });
});
