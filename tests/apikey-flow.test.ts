// The apikey command in process, on a memory store: the same flow as tests/cli.test.ts without a
// child process. run() is called with parsed flags as cac delivers them; a thrown error becomes its
// Output as cli.ts makes it (formatError), and what run writes itself (a new key's secret) is captured.
import { describe, expect, it } from "vitest";
import { command as apikey } from "../lib/cli/commands/apikey.ts";
import { formatError, type Output } from "../lib/cli/format.ts";
import { createKeyStore, type KeyStore } from "../lib/store/key-store.ts";
import { NEED_ROLE_OR_PERMISSION } from "../lib/core/input.ts";

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
    const result = await run(store, { list: true, json: true });
    const listed = JSON.parse(result.stdout!);
    expect(listed.keys).toMatchObject([{ name: "ci", roles: ["ADMIN"], description: "for CI" }]);
    expect(result.stdout).not.toContain(key);
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
      "Error: Choose one of --create, --delete, --update and --list, not --create and --list",
    );
  });
});
