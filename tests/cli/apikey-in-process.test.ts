// The apikey command in process, on a memory store: the same flow as tests/cli/apikey.test.ts without a
// child process. run() is called with parsed flags as cac delivers them; a thrown error becomes its
// Output as cli.ts makes it (formatError), and what run writes itself (a new key's secret) is captured.
import { describe, expect, it } from "vitest";
import { command as apikey } from "../../lib/cli/commands/apikey.ts";
import { formatError, type Output } from "../../lib/cli/format.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { NEED_ROLE_OR_PERMISSION } from "../../lib/core/input.ts";
import { ServiceError } from "../../lib/core/errors.ts";

interface Result extends Output {
  /** What run wrote to stdout itself: a new key's secret, delivered while the store was open. */
  written: string;
}

async function run(store: KeyStore, flags: Record<string, unknown>, write?: () => string | undefined): Promise<Result> {
  let written = "";
  const io = {
    env: {},
    log: () => {},
    store,
    interactive: false,
    write: (_fd: 1 | 2, text: string) => write?.() ?? void (written += text),
  };
  try {
    return { ...(await apikey.run(flags, io)), written };
  } catch (error) {
    return { ...formatError(error, Boolean(flags.json)), written };
  }
}

const create = (name: string, more: Record<string, unknown> = {}) => ({ create: true, name, roles: "ADMIN", ...more });

describe("apikey in process (memory store)", () => {
  it("create --json writes {key, name, id} itself and leaves nothing else to print", async () => {
    const store = createKeyStore();
    const result = await run(store, create("ci", { json: true }));
    expect([result.exitCode, result.stdout, result.notice]).toEqual([0, undefined, undefined]);
    const body = JSON.parse(result.written);
    expect(Object.keys(body)).toEqual(["key", "name", "id"]);
    expect(body.name).toBe("ci");
    expect((await store.verify(body.key))?.id).toBe(body.id);
  });

  it("create writes the secret alone and returns a summary for people", async () => {
    const store = createKeyStore();
    const result = await run(store, create("deploy key"));
    expect(result.written).toMatch(/^sapi_\S+\n$/);
    const [{ id }] = await store.list();
    expect(result.notice).toBe(`Created API key 'deploy key' (id ${id}). Store the key now: it is not shown again.`);
    expect(result.exitCode).toBe(0);
  });

  it("a secret that cannot be written undoes the create and exits 1", async () => {
    const store = createKeyStore();
    const result = await run(store, create("lost"), () => "EPIPE");
    expect(result.exitCode).toBe(1);
    expect(result.notice).toMatch(/^Error: Could not write the new key's secret to stdout \(EPIPE\)\. The key was deleted again/);
    expect(await store.list()).toEqual([]);
  });

  it("refuses a duplicate name (exit 1) and keeps the first key", async () => {
    const store = createKeyStore();
    await run(store, create("ci"));
    const [first] = await store.list();
    const result = await run(store, create("ci", { json: true }));
    expect(result).toEqual({
      stdout: JSON.stringify({ error: "API key with name 'ci' already exists. Use --overwrite to replace it.", code: "NAME_TAKEN" }) + "\n",
      exitCode: 1,
      written: "",
    });
    expect(await store.list()).toEqual([first]);
  });

  it("replaces a key with --overwrite: new id and secret", async () => {
    const store = createKeyStore();
    const old = JSON.parse((await run(store, create("ci", { json: true }))).written);
    const result = await run(store, create("ci", { json: true, overwrite: true }));
    const renewed = JSON.parse(result.written);
    expect(result.exitCode).toBe(0);
    expect(renewed.id).not.toBe(old.id);
    expect(await store.verify(old.key)).toBeNull();
    expect((await store.list()).map((k) => k.id)).toEqual([renewed.id]);
  });

  it("deletes a key by name", async () => {
    const store = createKeyStore();
    const { id } = JSON.parse((await run(store, create("ci", { json: true }))).written);
    expect(await run(store, { delete: true, name: "ci", json: true })).toEqual({
      stdout: JSON.stringify({ deleted: 1, keys: [{ id, name: "ci" }] }) + "\n",
      exitCode: 0,
      written: "",
    });
    expect(await store.list()).toEqual([]);
  });

  it("delete of an absent name: NOT_FOUND when other keys exist, NO_KEYS when the store is empty", async () => {
    const store = createKeyStore();
    expect(await run(store, { delete: true, name: "ghost", json: true })).toEqual({
      stdout: JSON.stringify({ deleted: 0, message: "No API keys found to delete", code: "NO_KEYS" }) + "\n",
      exitCode: 1,
      written: "",
    });
    await run(store, create("ci"));
    expect(await run(store, { delete: true, name: "ghost" })).toEqual({
      notice: "No API key found with name: ghost",
      exitCode: 1,
      written: "",
    });
    expect(await store.list()).toHaveLength(1);
  });

  it("lists keys without their secrets", async () => {
    const store = createKeyStore();
    expect(await run(store, { list: true })).toEqual({ notice: "No API keys stored", exitCode: 0, readerMayLeave: true, written: "" });
    const { key } = JSON.parse((await run(store, create("ci", { json: true, description: "for CI" }))).written);
    // A store that pages is listed as it is read: the list is written through io.write, not returned.
    const result = await run(store, { list: true, json: true });
    const listed = JSON.parse(result.written);
    expect(listed.keys).toMatchObject([{ name: "ci", roles: ["ADMIN"], description: "for CI" }]);
    expect(result.written).not.toContain(key);
  });

  it("rejects an invalid name (exit 2) and creates nothing", async () => {
    const store = createKeyStore();
    const result = await run(store, create("bad/name"));
    expect(result.exitCode).toBe(2);
    expect(result.notice).toMatch(/^Error: .*letters, numbers, and spaces/);
    expect(await store.list()).toEqual([]);
  });

  it("asks for a role or permission (exit 2) and creates nothing", async () => {
    const store = createKeyStore();
    const result = await run(store, { create: true, name: "ci", json: true });
    expect(JSON.parse(result.stdout!)).toEqual({ error: NEED_ROLE_OR_PERMISSION, code: "INVALID_INPUT" });
    expect(result.exitCode).toBe(2);
    expect(await store.list()).toEqual([]);
  });

  it("without --name and without a terminal, says which flags to pass", async () => {
    const result = await run(createKeyStore(), { create: true });
    expect(result.notice).toBe(
      "Error: Missing --name: stdin is not a terminal, so the command cannot ask for it. Pass --name <name> and --roles <roles> or --permissions <RESOURCE:ACTION,...>.",
    );
    expect(result.exitCode).toBe(2);
  });

  it("needs exactly one of --create, --delete and --list", async () => {
    expect((await run(createKeyStore(), { create: true, list: true })).notice).toBe(
      "Error: Choose one of --create, --delete, --update, --rotate, --list, --audit, --usage, --export, --import, --scan; not --create and --list",
    );
  });
});

describe("apikey for scripts, in process (issue 15)", () => {
  it("--if-not-exists: a taken name is success with {name, id, created:false}, and nothing changes", async () => {
    const store = createKeyStore();
    const first = JSON.parse((await run(store, create("ci", { json: true, ifNotExists: true }))).written);
    expect(first).toMatchObject({ name: "ci", created: true });
    const again = await run(store, create("ci", { json: true, ifNotExists: true, roles: "GUEST" }));
    expect([again.exitCode, again.written]).toEqual([0, ""]);
    expect(JSON.parse(again.stdout!)).toEqual({ name: "ci", id: first.id, created: false });
    expect((await store.list()).map((k) => [k.id, k.roles])).toEqual([[first.id, ["ADMIN"]]]);
    // Without the flag the specified shape is unchanged and a taken name fails.
    expect(Object.keys(JSON.parse((await run(store, create("cd", { json: true }))).written))).toEqual(["key", "name", "id"]);
    expect((await run(store, create("ci"))).exitCode).toBe(1);
  });

  it("--if-exists: nothing to delete is success; an unreachable store is not (exit 3)", async () => {
    const store = createKeyStore();
    const none = await run(store, { delete: true, name: "gone", ifExists: true, json: true });
    expect([none.exitCode, JSON.parse(none.stdout!).deleted]).toEqual([0, 0]);
    const broken = { ...store, isEmpty: () => Promise.reject(new ServiceError("STORE_UNAVAILABLE", "down")), deleteByName: () => Promise.reject(new ServiceError("STORE_UNAVAILABLE", "down")) };
    const down = await run(broken as KeyStore, { delete: true, name: "gone", ifExists: true, json: true });
    expect([down.exitCode, JSON.parse(down.stdout!).code]).toEqual([3, "STORE_UNAVAILABLE"]);
  });

  it("--update changes roles, permissions, description and name and keeps the secret", async () => {
    const store = createKeyStore();
    const { key, id } = JSON.parse((await run(store, create("ci", { json: true, description: "old" }))).written);
    const result = await run(store, { update: true, name: "ci", roles: "viewer", permissions: "docker:read_any", description: "", rename: "ci two" });
    // What changed, as --dry-run shows it: -r and -p replace the key's, so what they dropped shows too.
    expect(result.stdout).toBe(
      `Updated API key 'ci two' (renamed from 'ci') (id ${id})\n` +
        "  name         ci -> ci two\n  description  old -> none\n  roles        ADMIN -> VIEWER\n  permissions  none -> DOCKER:READ_ANY\n",
    );
    const verified = await store.verify(key);
    expect(verified).toMatchObject({ id, name: "ci two", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
    expect(verified?.description).toBeUndefined();
    const bad = await run(store, { update: true, id, roles: "root" });
    expect(bad.exitCode).toBe(2);
    expect(bad.notice).toContain("ROOT");
    expect((await run(store, { update: true, name: "missing", roles: "guest" })).exitCode).toBe(1);
  });

  it("--delete --id deletes that key only", async () => {
    const store = createKeyStore();
    const { id } = JSON.parse((await run(store, create("a", { json: true }))).written);
    await run(store, create("b"));
    const result = await run(store, { delete: true, id, json: true });
    expect(JSON.parse(result.stdout!)).toEqual({ deleted: 1, keys: [{ id, name: "a" }] });
    expect((await store.list()).map((k) => k.name)).toEqual(["b"]);
  });

  it("flags that do not apply to the mode are usage errors, before the store is touched", async () => {
    const store = createKeyStore();
    await run(store, create("a"));
    for (const [flags, message] of [
      [{ list: true, name: "a" }, "--list does not take --name"],
      [{ delete: true, name: "a", overwrite: true }, "--delete does not take --overwrite"],
      [{ create: true, name: "x", roles: "ADMIN", force: true }, "--force only replaces the file --output names"],
      [{ create: true, name: "x", roles: "ADMIN", format: "yaml" }, "Unknown --format 'yaml'"],
      [{ delete: true, name: "a", id: "x" }, "Use --name or --id, not both"],
    ] as const) {
      const result = await run(store, flags);
      expect(result.exitCode, message).toBe(2);
      expect(result.notice).toContain(message);
    }
    expect((await store.list()).map((k) => k.name)).toEqual(["a"]);
  });

  it("--format env gives dotenv lines; the secret goes out once, through delivery", async () => {
    const store = createKeyStore();
    const result = await run(store, create("env", { format: "env" }));
    expect(result.written).toMatch(/^SERVICE_API_KEY_SECRET=sapi_\w+\nSERVICE_API_KEY_ID=[0-9a-f-]{36}\nSERVICE_API_KEY_NAME=env\n$/);
    expect(result.stdout).toBeUndefined();
    const lost = await run(store, create("env two", { format: "env" }), () => "EPIPE");
    expect(lost.exitCode).toBe(1);
    expect((await store.list()).map((k) => k.name)).toEqual(["env"]);
  });

  it("a list marks its output as one a reader may leave early; a delete does not", async () => {
    const store = createKeyStore();
    await run(store, create("a"));
    expect((await run(store, { list: true })).readerMayLeave).toBe(true);
    expect((await run(store, { delete: true, name: "a" })).readerMayLeave).toBeUndefined();
  });
});
