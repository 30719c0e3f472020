// Many CLI processes on one fs store at the same moment, the way parallel CI jobs or deploy scripts
// hit it: nothing is lost, names stay unique, an overwrite race leaves exactly one working key, and
// creates racing deletes never leave the store unreadable. (The 16-way same-name create race without
// --overwrite lives in cli.test.ts.)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { cliWithStore, type RunResult } from "../helpers/cli.ts";

const N = 16;
let env: ReturnType<typeof cliWithStore>;
let store: KeyStore | undefined;
beforeEach(() => (env = cliWithStore()));
afterEach(async () => {
  await store?.close();
  store = undefined;
  env.cleanup();
});

const openStore = async () => (store ??= await openKeyStore(parseStoreSpec(env.store)));
const json = (result: RunResult) => JSON.parse(result.stdout) as Record<string, unknown>;
const all = <T>(count: number, fn: (i: number) => Promise<T>) => Promise.all(Array.from({ length: count }, (_, i) => fn(i)));

async function listed(): Promise<Array<Record<string, unknown>>> {
  const result = await env.cli("apikey", "--list", "--json");
  expect(result.code, result.stderr).toBe(0);
  return json(result).keys as Array<Record<string, unknown>>;
}

/** Every file the store holds that is not a temporary file: records parse, index entries are ids. */
function storeFiles(): { records: Array<Record<string, unknown>>; indexEntries: string[] } {
  const records: Array<Record<string, unknown>> = [];
  const indexEntries: string[] = [];
  for (const dir of ["keys", "names", "secrets"]) {
    let names: string[] = [];
    try {
      names = readdirSync(join(env.store, dir));
    } catch {
      continue;
    }
    for (const name of names.filter((n) => !n.endsWith(".tmp"))) {
      const text = readFileSync(join(env.store, dir, name), "utf8");
      if (dir === "keys") records.push(JSON.parse(text));
      else indexEntries.push(text);
    }
  }
  return { records, indexEntries };
}

describe("concurrent CLI processes on one store", () => {
  it(`of ${N} processes creating distinct names at once, all ${N} keys are stored and authenticate`, async () => {
    const results = await all(N, (i) => env.cli("apikey", "--create", "--name", `key ${i}`, "--roles", "VIEWER", "--json"));
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const created = results.map(json);

    const keys = await listed();
    expect(keys.map((k) => k.name).sort()).toEqual(created.map((c) => c.name).sort());
    const s = await openStore();
    for (const { key, id, name } of created) {
      const owner = await s.verify(key as string);
      expect(owner, `secret of ${name} must authenticate`).not.toBeNull();
      expect(owner?.id).toBe(id);
    }
  });

  it(`of ${N} processes overwriting one name at once, exactly one key remains and only its secret works`, async () => {
    const original = json(await env.cli("apikey", "--create", "--name", "shared", "--roles", "ADMIN", "--json"));
    const results = await all(N, () =>
      env.cli("apikey", "--create", "--name", "shared", "--roles", "GUEST", "--overwrite", "--json"));
    // Last writer wins: every overwrite succeeds, but only one of them is the key that remains.
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const printed = results.map(json);
    expect(new Set(printed.map((p) => p.key)).size).toBe(N);

    const keys = await listed();
    expect(keys).toHaveLength(1);
    const s = await openStore();
    const working = [];
    for (const p of printed) if (await s.verify(p.key as string)) working.push(p);
    expect(working).toHaveLength(1);
    expect(working[0].id).toBe(keys[0].id);
    expect(keys[0].roles).toEqual(["GUEST"]);
    expect(await s.verify(original.key as string)).toBeNull();

    // Every replaced key is cleaned up: no loser's record or secret entry lingers on disk.
    expect((await s.getByName("shared"))?.id).toBe(keys[0].id);
    const { records, indexEntries } = storeFiles();
    expect(records.map((r) => r.id)).toEqual([keys[0].id]);
    expect(indexEntries).toEqual([keys[0].id, keys[0].id]); // its name entry and its secret entry
  });

  it("creates racing deletes of the same names never corrupt the store", async () => {
    const names = Array.from({ length: 4 }, (_, i) => `churn ${i}`);
    for (const name of names) await env.cli("apikey", "--create", "--name", name, "--roles", "GUEST");
    // 16 processes: on each of 4 names, 2 creates (one with --overwrite) and 2 deletes, all at once.
    const ops = names.flatMap((name) => [
      ["--create", "--name", name, "--roles", "VIEWER", "--json"],
      ["--create", "--name", name, "--roles", "VIEWER", "--overwrite", "--json"],
      ["--delete", "--name", name, "--json"],
      ["--delete", "--name", name, "--json"],
    ]);
    const results = await all(ops.length, (i) => env.cli("apikey", ...ops[i]));
    for (const result of results) {
      expect([0, 1], result.stderr).toContain(result.code);
      expect(() => json(result), `stdout must be one JSON object: ${result.stdout}`).not.toThrow();
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }

    const keys = await listed();
    expect(new Set(keys.map((k) => k.name)).size).toBe(keys.length); // names stay unique
    const s = await openStore();
    for (const key of keys) {
      expect(key).toMatchObject({ id: expect.any(String), name: expect.any(String), roles: expect.any(Array) });
      expect(Date.parse(key.createdAt as string)).not.toBeNaN();
      expect((await s.get(key.id as string))?.name).toBe(key.name);
    }
    // Each listed key's printed secret (if its create printed one) authenticates; nothing else does.
    const liveIds = new Set(keys.map((k) => k.id));
    for (const result of results) {
      const body = json(result);
      if (typeof body.key !== "string") continue;
      const owner = await s.verify(body.key);
      expect(owner?.id ?? null).toBe(liveIds.has(body.id as string) ? body.id : null);
    }
    // Every index entry is a whole id and the records parse (storeFiles throws otherwise).
    for (const entry of storeFiles().indexEntries) expect(entry).toMatch(/^[0-9a-f-]{36}$/);

    // The store still works afterwards.
    const after = await env.cli("apikey", "--create", "--name", "after churn", "--roles", "GUEST", "--json");
    expect(after.code).toBe(0);
    expect(await s.verify(json(after).key as string)).not.toBeNull();
  });
});
