// Nothing on the request path touches a file on the event loop: with the files store a server opens (not
// the CLI's blocking one), every request, queries and changes alike, makes no synchronous node:fs call.
// Every `*Sync` function of node:fs is replaced by a recorder once the store is open (start-up may use
// them) and put back after; `syncBuiltinESMExports` makes the modules' named imports see the recorders.
// And the sources below the CLI call one only in the few files that serve the CLI or start-up.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { join, relative } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openKeyStore } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { ROOT, tempDir } from "../helpers/cli.ts";

const fs = createRequire(import.meta.url)("node:fs") as Record<string, unknown>;
const tmp = tempDir("service-api-loop-io-");
let store: KeyStore;
let admin: string;

beforeAll(async () => {
  store = await openKeyStore({ kind: "fs", dir: join(tmp.dir, "keys") }, undefined, { create: true });
  admin = (await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
});
afterAll(async () => {
  await store?.close();
  tmp.cleanup();
});

/** Runs `work` with every synchronous node:fs function recording its calls; returns them. */
async function syncCalls(work: () => Promise<void>): Promise<string[]> {
  const calls: string[] = [];
  const originals = Object.entries(fs).filter(([name, value]) => name.endsWith("Sync") && typeof value === "function");
  for (const [name, original] of originals) {
    fs[name] = function (this: unknown, ...args: unknown[]) {
      calls.push(`${name}(${String(args[0])})\n${new Error().stack?.split("\n").slice(2, 6).join("\n")}`);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
  syncBuiltinESMExports();
  try {
    await work();
  } finally {
    for (const [name, original] of originals) fs[name] = original;
    syncBuiltinESMExports();
  }
  return calls;
}

it("answers queries and changes on a files store without a synchronous file call", async () => {
  const handler = createHandler({ store });
  const ask = async (query: string, variables?: Record<string, unknown>, key = admin) => {
    const response = await handler(
      new Request("http://x/graphql", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      }),
    );
    const body = await response.json();
    expect(body.errors, query).toBeUndefined();
    return body.data;
  };
  const calls = await syncCalls(async () => {
    const made = await ask('mutation { apiKey { create(input: { name: "viewer", roles: [VIEWER] }) { id key } } }');
    const { id, key } = made.apiKey.create;
    await ask("{ me { id } }", undefined, key);
    await ask("{ apiKeys { id name lastUsedAt usage { total days { date count } } } auditLog { action } }");
    await ask("query($id: PrefixedID!) { apiKey(id: $id) { id name } }", { id });
    await ask("query($key: String!) { verifyApiKey(key: $key) { valid code } }", { key });
    await ask('mutation($id: PrefixedID!) { apiKey { update(input: { id: $id, description: "d" }) { id } } }', { id });
    await ask("mutation($id: PrefixedID!) { apiKey { rotate(id: $id, graceSeconds: 60) { id } } }", { id });
    await ask("mutation($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }", { ids: [id] });
    await ask("mutation { apiKey { deleteExpired { id } } }");
    await ask("{ apiKeys(first: 10) { id } }");
  });
  expect(calls).toEqual([]);
});

/** The files below lib/cli that may call a synchronous node:fs function, and why none of them is on the request path. */
const SYNC_ALLOWED: Record<string, string> = {
  "lib/store/drivers/_fs-ops.ts": "blockingOps, the file operations of a process that makes one change and exits (the CLI)",
  "lib/store/drivers/_fs-presence.ts": "what a store's directory is before it is opened: doctor, and the CLI listing a store that does not exist",
  "lib/store/drivers/_fs-owner.ts": "root becoming the store's owner, once, when the store is opened",
  "lib/store/drivers/_redis-options.ts": "the TLS files SERVICE_API_REDIS_TLS_* name, read once as --store is read (a wrong path is exit 2 before any work)",
};

it("calls synchronous node:fs functions below the CLI only where the CLI or start-up does", () => {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) {
        const file = relative(ROOT, path);
        const code = readFileSync(path, "utf8").split("\n").filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line));
        if (code.some((line) => /\b\w+Sync\(/.test(line)) && !(file in SYNC_ALLOWED)) found.push(file);
      }
    }
  };
  for (const layer of ["core", "store", "graphql", "http", "client"]) walk(join(ROOT, "lib", layer));
  expect(found).toEqual([]);
});
