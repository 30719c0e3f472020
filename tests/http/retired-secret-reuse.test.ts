// A retired secret presented to a running server (`serve --port 0`, a child process) after the CLI deleted
// its key or replaced it (`--overwrite --grace`, the grace period over): refused as before, and reported
// as a reuse: one warning line naming the key and the client's address (never the secret), a count in
// /metrics, and an audit event `reuse` at most once per key per minute. `apikey --delete --expired
// --retired-retention` forgets the older ones. On files and on a real redis-server.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, startServer } from "../helpers/server.ts";
import { createServiceLog } from "../../lib/http/service-log.ts";
import { createReuseGate } from "../../lib/store/_retired.ts";

const ME = "{ me { id name } }";
const WARNING = /retired API key presented again: key=(\S+) name=("[^"]*") from=("[^"]*")/g;

let redis: RedisServer;
const cleanups: (() => void)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  for (const cleanup of cleanups) cleanup();
});

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
/** Waits until `check` holds (log lines are written in batches), at most 5 s. */
async function until(check: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 100 && !(await check()); i++) await sleep(50);
}

const stores: Record<string, () => string> = {
  fs: () => {
    const { dir, cleanup } = tempDir("service-api-retired-");
    cleanups.push(cleanup);
    return join(dir, "keys");
  },
  redis: () => `${redis.url}?prefix=retired${Date.now()}`,
};

describe.each(Object.keys(stores))("a retired secret presented to the service (%s)", (kind) => {
  it("is refused as before, and warned about, counted and audited as a reuse", async () => {
    const store = stores[kind]();
    const cli = async (...args: string[]) => {
      const result = await runCli([...args, "--store", store]);
      expect(result.code, result.stderr).toBe(0);
      return result;
    };
    const created = async (...args: string[]) => JSON.parse((await cli("apikey", "--create", "-r", "GUEST", "--json", ...args)).stdout);
    const deleted = await created("--name", "deleted key");
    const rotated = await created("--name", "rotated");
    const server = await startServer({ store });
    try {
      expect((await gql(server.url, ME, { key: deleted.key })).status).toBe(200);
      await cli("apikey", "--delete", "--name", "deleted key");
      const successor = await created("--name", "rotated", "--overwrite", "--grace", "1s");
      expect((await gql(server.url, ME, { key: rotated.key })).status).toBe(200); // in its grace period: no reuse
      expect(server.stderr()).not.toMatch(WARNING);
      await sleep(1_100);

      // Refused exactly as before: the same status, challenge and messages.
      for (let i = 0; i < 5; i++) {
        const refused = await gql(server.url, ME, { key: deleted.key });
        expect(refused.status).toBe(401);
        expect(refused.headers.get("www-authenticate")).toBe("Bearer");
        expect(refused.body.errors[0]).toEqual({ message: "Invalid or revoked API key", extensions: { code: "UNAUTHENTICATED" } });
      }
      const late = await gql(server.url, ME, { key: rotated.key });
      expect(late.status).toBe(401);
      expect(late.body.errors[0].message).toMatch(/^Expired API key/);
      expect((await gql(server.url, ME, { key: successor.key })).status).toBe(200);

      // One warning line per refusal, naming the key and the address, never the secret.
      await until(() => [...server.stderr().matchAll(WARNING)].length >= 6);
      const warnings = [...server.stderr().matchAll(WARNING)].map((m) => [m[1], JSON.parse(m[2]), JSON.parse(m[3])]);
      expect(warnings).toEqual([
        ...Array.from({ length: 5 }, () => [deleted.id, "deleted key", "127.0.0.1"]),
        [rotated.id, "rotated", "127.0.0.1"],
      ]);
      expect(server.stderr()).toMatch(/^warn: retired API key presented again/m);
      for (const secret of [deleted.key, rotated.key, successor.key]) expect(server.stderr()).not.toContain(secret);

      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toMatch(/^service_api_retired_key_uses_total 6$/m);

      // One audit event per key within the minute, by the key itself, read by the CLI.
      const audit = JSON.parse((await cli("apikey", "--audit", "--json")).stdout);
      const reuses = audit.events.filter((e: { action: string }) => e.action === "reuse");
      expect(reuses.map((e: { id: string; name: string; actor: unknown }) => [e.id, e.name, e.actor])).toEqual([
        [deleted.id, "deleted key", { kind: "key", id: deleted.id, name: "deleted key" }],
        [rotated.id, "rotated", { kind: "key", id: rotated.id, name: "rotated" }],
      ]);
      const table = (await cli("apikey", "--audit")).stdout;
      expect(table.split("\n").filter((line) => line.includes("\treuse\t"))).toHaveLength(2);

      // Past its retention, `--delete --expired` forgets the deleted key's secret: still refused, no longer a reuse.
      // (The replaced key's record is pruned by that same run, which retires its secret afresh.)
      await sleep(1_100);
      await cli("apikey", "--delete", "--expired", "--retired-retention", "1s");
      const forgotten = await gql(server.url, ME, { key: deleted.key });
      expect(forgotten.status).toBe(401);
      expect(forgotten.body.errors[0].message).toBe("Invalid or revoked API key");
      expect((await gql(server.url, ME, { key: rotated.key })).status).toBe(401);
      await until(() => [...server.stderr().matchAll(WARNING)].length >= 7);
      await sleep(100);
      expect([...server.stderr().matchAll(WARNING)].slice(6).map((m) => m[1])).toEqual([rotated.id]);
      expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^service_api_retired_key_uses_total 7$/m);
    } finally {
      await server.stop();
    }
  });
});

describe("--retired-retention", () => {
  it("takes a duration, on serve and on apikey --delete, and is refused over --url", async () => {
    const { dir, cleanup } = tempDir("service-api-retired-flags-");
    cleanups.push(cleanup);
    const store = join(dir, "keys");
    const bad = await runCli(["apikey", "--delete", "--expired", "--retired-retention", "soon", "--store", store]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--retired-retention needs a duration like 45s, 30m, 12h or 7d (got 'soon')");
    const badEnv = await runCli(["apikey", "--delete", "--expired", "--store", store], { env: { SERVICE_API_RETIRED_RETENTION: "0d" } });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain("SERVICE_API_RETIRED_RETENTION needs a duration");
    const serve = await runCli(["serve", "--port", "0", "--store", store, "--retired-retention", "forever"]);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain("--retired-retention needs a duration");
    const remote = await runCli(["apikey", "--delete", "--expired", "--retired-retention", "7d", "--url", "http://127.0.0.1:9"]);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain("--retired-retention works on a store");
    const list = await runCli(["apikey", "--list", "--retired-retention", "7d", "--store", store]);
    expect(list.code).toBe(2);
    expect(list.stderr).toContain("--list does not take --retired-retention");
  });
});

describe("the warning line", () => {
  const written = (env: Record<string, string>) => {
    let text = "";
    const log = createServiceLog({ env, write: (t) => (text += t) });
    const id = crypto.randomUUID();
    // A name cannot hold a quote or a newline, but the line must not trust that.
    log.retiredKeyUsed!({ id, name: 'a" from="forged\nwarn: x', address: "::1" });
    log.retiredKeyUsed!({ id, name: "b" });
    log.flush();
    return { id, lines: text.trimEnd().split("\n") };
  };

  it("is one text line per use whatever the name holds, and says when the address is unknown", () => {
    const { id, lines } = written({ LOG_LEVEL: "info" });
    expect(lines).toEqual([
      `warn: retired API key presented again: key=${id} name="a\\" from=\\"forged\\nwarn: x" from="::1"`,
      `warn: retired API key presented again: key=${id} name="b" from="unknown"`,
    ]);
  });

  it("is a JSON object with the key's id and name and the address under LOG_FORMAT=json, and kept at LOG_LEVEL=warn", () => {
    const { id, lines } = written({ LOG_LEVEL: "warn", LOG_FORMAT: "json" });
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { level: "warn", keyId: id, keyName: 'a" from="forged\nwarn: x', address: "::1" },
      { level: "warn", keyId: id, keyName: "b", address: "unknown" },
    ]);
    expect(written({ LOG_LEVEL: "error" }).lines).toEqual([""]);
  });
});

describe("the reuse audit gate", () => {
  it("lets one reuse per key per minute through, and remembers a bounded number of keys", () => {
    let now = 0;
    const gate = createReuseGate({ now: () => now, capacity: 3 });
    expect(["a", "a", "b", "a"].map((id) => gate.due(id))).toEqual([true, false, true, false]);
    now = 59_999;
    expect(gate.due("a")).toBe(false);
    now = 60_000;
    expect(gate.due("a")).toBe(true);
    // Past 3 keys the least recently seen (b) is forgotten, so its next reuse is written again; d is still known.
    expect(["c", "d", "b", "d"].map((id) => gate.due(id))).toEqual([true, true, true, false]);
    now = -1; // a clock set back never silences a key for good
    expect(gate.due("d")).toBe(true);
  });
});
