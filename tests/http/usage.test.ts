// Usage control in the service: a disabled key refused (401, KEY_DISABLED) by two servers sharing one
// redis-server from the request after the CLI's disable; use counts coalesced off the request path and
// shown by GraphQL, the CLI and remote mode; verifyApiKey for services that are not ours.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Role } from "../../lib/core/model.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import type { KeyUse } from "../../lib/store/types.ts";
import { createRemoteBackend } from "../../lib/client/remote.ts";
import { execFile } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, type ServerProcess, inProcessServers, startServer } from "../helpers/server.ts";

const today = () => new Date().toISOString().slice(0, 10);
const make = (store: KeyStore, name: string, roles: Role[] = ["ADMIN"]) => store.create({ name, roles, permissions: [] });

const start = inProcessServers();

describe("use counts in the service", () => {
  it("counts each request per key per day with a few coalesced writes, and shows them in ApiKey.usage", async () => {
    const store = createKeyStore();
    const calls: Map<string, number | KeyUse>[] = [];
    const counted: KeyStore = { ...store, recordUse: async (uses) => (calls.push(new Map(uses)), store.recordUse(uses)) };
    const server = await start({ store: counted, recordLastUse: { tickMs: 20, intervalMs: 60_000 } });
    const a = await make(store, "busy a");
    const b = await make(store, "quiet b", ["GUEST"]);
    await Promise.all(Array.from({ length: 30 }, (_, i) => gql(server.url, i % 2 ? "{ me { id } }" : "{ apiKeys { id } }", { key: a.key })));
    await Promise.all(Array.from({ length: 5 }, () => gql(server.url, "{ me { id } }", { key: b.key })));
    await server.close(); // writes what is pending
    expect(calls.length).toBeLessThanOrEqual(4); // not a write per request
    expect(await store.usage(a.id)).toEqual({ total: 30, days: [{ date: today(), count: 30 }] });
    expect(await store.usage(b.id)).toEqual({ total: 5, days: [{ date: today(), count: 5 }] });

    const again = await start({ store, recordLastUse: false });
    const shown = await gql(again.url, "{ apiKeys { name usage { total days { date count } } } }", { key: a.key });
    expect(shown.body.data.apiKeys).toEqual([
      { name: "busy a", usage: { total: 30, days: [{ date: today(), count: 30 }] } },
      { name: "quiet b", usage: { total: 5, days: [{ date: today(), count: 5 }] } },
    ]);
  });
});

describe("verifyApiKey", () => {
  it("answers each code, counts the verified key's use and not the caller's, and needs API_KEY:READ_ANY", async () => {
    const store = createKeyStore({ useRecorder: { tickMs: 20 } });
    const server = await start({ store, recordLastUse: { tickMs: 20 } });
    const caller = await make(store, "gateway");
    const target = await store.create({ name: "partner", roles: [], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
    const guest = await make(store, "guest", ["GUEST"]);
    const expired = await store.create({ name: "short", roles: ["GUEST"], permissions: [], expiresAt: new Date(Date.now() + 300).toISOString() });
    const FIELDS = "valid code id name roles permissions { resource actions } expiresAt credits ratelimits { name }";
    const query = `query ($k: String!, $p: [AddPermissionInput!]) { ok: verifyApiKey(key: $k, permissions: $p) { ${FIELDS} }
      more: verifyApiKey(key: $k, permissions: [{ resource: DOCKER, actions: [DELETE_ANY] }]) { valid code } }`;
    const verified = await gql(server.url, query, { key: caller.key, variables: { k: target.key, p: [{ resource: "DOCKER", actions: ["READ_ANY"] }] } });
    expect(verified.status).toBe(200);
    expect(verified.body.data).toEqual({
      ok: {
        valid: true, code: "VALID", id: target.id, name: "partner", roles: [], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }],
        expiresAt: null, credits: null, ratelimits: null,
      },
      more: { valid: false, code: "INSUFFICIENT_PERMISSIONS" },
    });
    expect(JSON.stringify(verified.body)).not.toContain(target.key);

    const one = async (key: string) => (await gql(server.url, `query ($k: String!) { verifyApiKey(key: $k) { valid code id } }`, { key: caller.key, variables: { k: key } })).body;
    expect((await one(`${target.key.slice(0, -1)}x`)).data.verifyApiKey).toEqual({ valid: false, code: "NOT_FOUND", id: null });
    await store.update(guest.id, { disabled: true });
    expect((await one(guest.key)).data.verifyApiKey).toEqual({ valid: false, code: "DISABLED", id: guest.id });
    await new Promise((r) => setTimeout(r, 350));
    expect((await one(expired.key)).data.verifyApiKey).toEqual({ valid: false, code: "EXPIRED", id: expired.id });

    const forbidden = await gql(server.url, `query ($k: String!) { verifyApiKey(key: $k) { valid } }`, { key: target.key, variables: { k: caller.key } });
    expect(forbidden.body.errors[0].extensions.code).toBe("FORBIDDEN");

    await server.close(); // writes what its recorder holds: verifications included
    // Two verifications of the partner key, in the caller's one request, and the forbidden attempt it
    // authenticated itself. The caller: its 4 requests, none of its verifications counted as its own.
    expect((await store.usage(target.id))?.total).toBe(3);
    expect((await store.usage(caller.id))?.total).toBe(4);
    expect((await store.usage(guest.id))?.total).toBe(0);
    await store.close();
  });

  it("a server that records no use (recordLastUse: false) counts no verification either", async () => {
    const store = createKeyStore({ useRecorder: { tickMs: 10 } });
    const server = await start({ store, recordLastUse: false });
    const caller = await make(store, "gateway");
    const target = await make(store, "partner", ["GUEST"]);
    const answer = await gql(server.url, `query ($k: String!) { verifyApiKey(key: $k) { code } }`, { key: caller.key, variables: { k: target.key } });
    expect(answer.body.data.verifyApiKey.code).toBe("VALID");
    await server.close();
    await new Promise((r) => setTimeout(r, 100)); // ten ticks of the store's own recorder, were it used
    expect(await store.get(target.id)).not.toHaveProperty("lastUsedAt");
    expect((await store.usage(target.id))?.total).toBe(0);
  });
});

describe("disable across two servers, the CLI and remote mode", () => {
  let redis: RedisServer;
  let storeUrl: string;
  let servers: ServerProcess[] = [];
  const cli = (...args: string[]) => runCli(args, { env: { SERVICE_API_STORE: storeUrl } });
  const ME = "{ me { id } }";

  beforeAll(async () => {
    redis = await startRedis();
    storeUrl = `${redis.url}?prefix=usage-control`;
    servers = await Promise.all([0, 1].map(() => startServer({ store: storeUrl })));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.destroy();
  });

  it("a key disabled by the CLI gets 401 KEY_DISABLED on both servers at the next request; enabled, 200 again", async () => {
    const made = JSON.parse((await cli("apikey", "--create", "--name", "paused", "-r", "ADMIN", "--json")).stdout);
    const admin = JSON.parse((await cli("apikey", "--create", "--name", "lister", "-r", "ADMIN", "--json")).stdout);
    for (const s of servers) expect((await gql(s.url, ME, { key: made.key })).status).toBe(200);
    const disabled = await cli("apikey", "--update", "--name", "paused", "--disable", "--reason", "rotating credentials");
    expect(disabled.code, disabled.stderr).toBe(0);
    for (const s of servers) {
      const refused = await gql(s.url, ME, { key: made.key });
      expect(refused.status).toBe(401);
      expect(refused.body.errors[0].extensions.code).toBe("KEY_DISABLED");
      expect(refused.body.errors[0].message).toMatch(/^Disabled API key/);
    }
    // Counted by reason; no label names a key (cardinality stays bounded).
    const metrics = await (await fetch(`${servers[0].url}/metrics`)).text();
    expect(metrics).toContain('service_api_auth_failures_total{reason="disabled"} 1');
    for (const needle of [made.id, "paused"]) expect(metrics).not.toContain(needle);
    const listed = JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys;
    expect(listed[0]).toMatchObject({ name: "paused", disabled: true, disabledReason: "rotating credentials" });
    expect((await cli("apikey", "--list")).stdout.trim().split("\t")[9]).toBe("disabled");
    expect((await cli("apikey", "--list", "--filter", "state:disabled")).stdout.split("\t")[0]).toBe("paused");
    expect((await cli("apikey", "--list", "--filter", "state:active")).stdout).not.toContain("paused");
    const viaGraphql = await gql(servers[1].url, '{ apiKeys(filter: "state:disabled") { name disabled disabledReason } }', { key: admin.key });
    expect(viaGraphql.body.data.apiKeys).toEqual([{ name: "paused", disabled: true, disabledReason: "rotating credentials" }]);
    expect((await cli("apikey", "--audit", "--json")).stdout).toContain('"action":"disable"');
    expect((await cli("apikey", "--update", "--name", "paused", "--enable")).code).toBe(0);
    for (const s of servers) expect((await gql(s.url, ME, { key: made.key })).status).toBe(200);
  });

  it("bad input: --disable on a missing key is NOT_FOUND (1), --disable with --enable or --reason alone exit 2", async () => {
    const missing = await cli("apikey", "--update", "--name", "nobody", "--disable", "--json");
    expect(missing.code).toBe(1);
    expect(missing.stdout + missing.stderr).toMatch(/NOT_FOUND|No API key found/);
    expect((await cli("apikey", "--update", "--name", "paused", "--disable", "--enable")).code).toBe(2);
    expect((await cli("apikey", "--update", "--name", "paused", "--reason", "why")).code).toBe(2);
    const control = await cli("apikey", "--update", "--name", "paused", "--disable", "--reason", "bell\u0007");
    expect(control.code).toBe(2);
    expect(control.stderr).toMatch(/Reason must not contain control/);
    expect((await cli("apikey", "--usage", "--name", "nobody")).code).toBe(1);
    expect((await cli("apikey", "--usage")).code).toBe(2);
  });

  it("remote mode disables, lists, counts and verifies through the service", async () => {
    const admin = JSON.parse((await cli("apikey", "--create", "--name", "remote admin", "-r", "ADMIN", "--json")).stdout);
    const worker = JSON.parse((await cli("apikey", "--create", "--name", "worker", "-r", "VIEWER", "--json")).stdout);
    const remote = (...args: string[]) => runCli(["apikey", "--url", servers[0].url, ...args], { env: { SERVICE_API_KEY: admin.key } });
    const leaked = await remote("--update", "--name", "worker", "--disable", "--reason", `leaked ${worker.key}`);
    expect(leaked.code).toBe(2);
    expect(leaked.stderr).not.toContain(worker.key);
    expect((await remote("--update", "--name", "worker", "--disable", "--json")).code).toBe(0);
    expect(JSON.parse((await remote("--list", "--json")).stdout).keys.find((k: { name: string }) => k.name === "worker")).toMatchObject({ disabled: true });
    const backend = createRemoteBackend({ baseUrl: servers[1].url, apiKey: admin.key });
    expect(await backend.verifyDetailed(worker.key)).toMatchObject({ valid: false, code: "DISABLED", id: worker.id });
    expect((await remote("--update", "--id", worker.id, "--enable")).code).toBe(0);
    expect(await backend.verifyDetailed(worker.key, { permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] })).toMatchObject({ valid: true, code: "VALID" });
    const usage = await remote("--usage", "--name", "worker", "--json");
    expect(usage.code, usage.stderr).toBe(0);
    expect(JSON.parse(usage.stdout)).toEqual({ total: expect.any(Number), days: expect.any(Array) });
  });

  it("the check-key.sh example of docs/service.md lets a valid key through and refuses the others with their code", async () => {
    const script = /```sh\n(#!\/bin\/sh\n# check-key\.sh[\s\S]*?)```/.exec(readFileSync(join(ROOT, "docs/service.md"), "utf8"))![1];
    expect(script.trim().split("\n").length).toBeLessThanOrEqual(20);
    const { dir, cleanup } = tempDir("service-api-check-key-");
    try {
      const path = join(dir, "check-key.sh");
      writeFileSync(path, script);
      chmodSync(path, 0o755);
      const gate = JSON.parse((await cli("apikey", "--create", "--name", "gate", "-p", "API_KEY:READ_ANY", "--json")).stdout);
      const client = JSON.parse((await cli("apikey", "--create", "--name", "docker reader", "-p", "DOCKER:READ_ANY", "--json")).stdout);
      const check = (...args: string[]) =>
        new Promise<{ code: number; stderr: string }>((resolve) =>
          execFile(path, args, { env: { ...process.env, SERVICE_API_URL: servers[1].url, SERVICE_API_KEY: gate.key } }, (error, _out, stderr) =>
            resolve({ code: error ? Number(error.code) : 0, stderr })
          )
        );
      expect(await check(client.key, "DOCKER:READ_ANY")).toEqual({ code: 0, stderr: "" });
      expect(await check(client.key)).toEqual({ code: 0, stderr: "" });
      expect(await check(client.key, "DOCKER:DELETE_ANY")).toEqual({ code: 1, stderr: "refused: INSUFFICIENT_PERMISSIONS\n" });
      expect(await check(`${client.key}","p":null,"x":"`, "DOCKER:DELETE_ANY")).toEqual({ code: 1, stderr: "refused: NOT_FOUND\n" });
      expect(await check(`${client.key.slice(0, -2)}AA`)).toEqual({ code: 1, stderr: "refused: NOT_FOUND\n" });
      await cli("apikey", "--update", "--name", "docker reader", "--disable");
      expect(await check(client.key, "DOCKER:READ_ANY")).toEqual({ code: 1, stderr: "refused: DISABLED\n" });
      const noRights = await new Promise<number>((resolve) =>
        execFile(path, [client.key], { env: { ...process.env, SERVICE_API_URL: servers[1].url, SERVICE_API_KEY: client.key } }, (error) => resolve(Number(error?.code ?? 0)))
      );
      expect(noRights).toBe(2); // the gatekeeper's own key refused: a key service error, not a verdict on the client
    } finally {
      cleanup();
    }
  });
});
