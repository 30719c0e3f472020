// `service-api doctor` run as a user would: which store, whose, how many keys, Redis reachable, audit
// writable; and the store questions around it: an empty or missing store named in --list, and `serve`
// creating its store as the user it runs as (a later root create keeps that owner).
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT, runCli, type RunResult } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { AS_NOBODY, isRoot, lacksRoot, NOBODY, NOT_ROOT, sharedScratch } from "../helpers/users.ts";

const scratch = sharedScratch("doctor-");
const nobody = (args: string[]) => runAs(AS_NOBODY, args);
/** The CLI as another user (setpriv), with the result shaped like runCli's. */
function runAs(prefix: string[], args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(prefix[0], [...prefix.slice(1), process.execPath, CLI, ...args], {
      env: { ...process.env, LOG_LEVEL: undefined, HOME: "/nonexistent", ...env }, timeout: 20_000,
    });
    let stdout = "", stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
/** A folder of uid 65534's own, and a store path inside it. */
function nobodysFolder(): string {
  const dir = scratch.fresh();
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, NOBODY, NOBODY);
  return join(dir, "keys");
}
const checksOf = (result: RunResult) => Object.fromEntries(JSON.parse(result.stdout).checks.map((c: { name: string; ok: boolean; detail: string }) => [c.name, c]));

describe("doctor on a directory store", () => {
  it("names the store, where the choice came from, its owner and mode, the key count, the audit trail, runtime and version", async () => {
    const store = scratch.fresh();
    expect((await runCli(["apikey", "--create", "--name", "ci", "-r", "ADMIN", "--store", store])).code).toBe(0);
    const text = await runCli(["doctor", "--store", store]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^pass  store +fs:${store} \\(from --store\\)$`, "m"));
    expect(text.stdout).toMatch(/^pass  owner +uid 0, gid 0, mode 0700$/m);
    expect(text.stdout).toMatch(/^pass  keys +1 key$/m);
    expect(text.stdout).toMatch(/^pass  audit +.*audit\.log is writable$/m);
    expect(text.stdout).toMatch(new RegExp(`^pass  runtime +node ${process.versions.node}$`, "m"));
    expect(text.stdout).toMatch(/^pass  version +\d+\.\d+\.\d+/m);

    const fromEnv = await runCli(["doctor", "--json"], { env: { SERVICE_API_STORE: `fs:${store}` } });
    expect(fromEnv.code).toBe(0);
    const json = JSON.parse(fromEnv.stdout);
    expect(json).toMatchObject({ ok: true, store: `fs:${store}`, source: "environment" });
    expect(json.checks.map((c: { name: string }) => c.name)).toEqual(["store", "owner", "keys", "audit", "runtime", "version"]);
    expect(checksOf(fromEnv).keys).toEqual({ name: "keys", ok: true, detail: "1 key" });

    const byDefault = await runCli(["doctor", "--json"], { env: { SERVICE_API_STORE: undefined, XDG_CONFIG_HOME: scratch.fresh() } });
    expect(JSON.parse(byDefault.stdout)).toMatchObject({ source: "default" });
    expect(checksOf(byDefault).store.detail).toMatch(/from the default, from XDG_CONFIG_HOME=/);
  });

  it.skipIf(lacksRoot)(`fails, exit 1, on a store owned by another user (${NOT_ROOT})`, async () => {
    const store = scratch.fresh();
    expect((await runCli(["apikey", "--create", "--name", "ci", "-r", "ADMIN", "--store", store])).code).toBe(0);
    const result = await nobody(["doctor", "--store", store]);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^FAIL  owner +uid 0, gid 0, mode 0700: not yours \(uid 65534\)$/m);
    expect(result.stdout).toMatch(/^FAIL  keys +Key store unavailable: .* belongs to uid 0/m);
    expect(result.stdout).toMatch(/^pass  version/m); // every check still gets its line
  });

  it.skipIf(lacksRoot)(`fails, exit 1, when the audit trail cannot be written (${NOT_ROOT})`, async () => {
    const store = nobodysFolder();
    expect((await nobody(["apikey", "--create", "--name", "ci", "-r", "ADMIN", "--store", store])).code).toBe(0);
    chmodSync(join(store, "audit", "audit.log"), 0o400);
    const result = await nobody(["doctor", "--store", store, "--json"]);
    expect(result.code, result.stderr).toBe(1);
    expect(JSON.parse(result.stdout).ok).toBe(false);
    expect(checksOf(result).audit).toMatchObject({ ok: false, detail: expect.stringMatching(/audit\.log cannot be written \(EACCES\)/) });
    expect(checksOf(result).keys).toMatchObject({ ok: true, detail: "1 key" });
    // Root on that store acts as its owner, so the trail is no more writable for root.
    const asRoot = await runCli(["doctor", "--store", store, "--json"]);
    expect(checksOf(asRoot).audit.ok).toBe(false);
    expect(checksOf(asRoot).owner.ok).toBe(true);
  });

  it("passes on a store not made yet where it could be made, and fails where it could not", async () => {
    const missing = join(scratch.fresh(), "deeper", "keys");
    const ok = await runCli(["doctor", "--store", missing]);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toMatch(/^pass  owner +.* does not exist yet; uid \d+ may create it in /m);
    if (lacksRoot) return;
    const refused = await nobody(["doctor", "--store", "/nonexistent/dir"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^FAIL  owner +\/nonexistent\/dir does not exist yet; it cannot be created: uid 65534 may not create it in \/ \(EACCES\)$/m);
  });
});

describe("doctor on memory: and Redis", () => {
  let redis: RedisServer;
  beforeAll(async () => (redis = await startRedis()));
  afterAll(async () => await redis?.destroy());

  it("memory: has no owner or Redis line, and passes", async () => {
    const result = await runCli(["doctor", "--store", "memory:", "--json"]);
    expect(result.code).toBe(0);
    expect(Object.keys(checksOf(result))).toEqual(["store", "keys", "audit", "runtime", "version"]);
  });

  it("a reachable Redis passes with its key count, and says what it runs on: one Redis, its address, no replicas", async () => {
    expect((await runCli(["apikey", "--create", "--name", "ci", "-r", "ADMIN", "--store", redis.url])).code).toBe(0);
    const result = await runCli(["doctor", "--store", redis.url]);
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^pass  redis +redis://127\\.0\\.0\\.1:${redis.port}/0 answers: one Redis, 127\\.0\\.0\\.1:${redis.port}$`, "m"));
    expect(result.stdout).toMatch(/^pass  replicas +0 connected$/m);
    expect(result.stdout).toMatch(/^pass  keys +1 key$/m);
    const json = JSON.parse((await runCli(["doctor", "--store", redis.url, "--json"])).stdout);
    expect(json.redis).toEqual({ mode: "single", master: `127.0.0.1:${redis.port}`, replicas: 0, aof: false });
  });

  it("warns, exit 0, when Redis keeps no append-only file (a delete since the last snapshot would come back), and passes with one", async () => {
    const text = await runCli(["doctor", "--store", redis.url]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^warn  persistence +AOF is off: a key deleted, disabled or rotated after the last RDB snapshot comes back when Redis restarts\. Turn it on \(appendonly yes\)/m);
    const json = await runCli(["doctor", "--store", redis.url, "--json"]);
    expect(checksOf(json).persistence).toMatchObject({ ok: true, warning: true });

    const durable = await startRedis({ persist: true });
    try {
      const result = await runCli(["doctor", "--store", durable.url]);
      expect(result.stdout).toMatch(/^pass  persistence +AOF on \(appendonly yes\)$/m);
      expect(JSON.parse((await runCli(["doctor", "--store", durable.url, "--json"])).stdout).redis.aof).toBe(true);
    } finally {
      await durable.destroy();
    }
  });

  it("refuses an unknown URL parameter, exit 2, naming it, before connecting", async () => {
    const result = await runCli(["doctor", "--store", `${redis.url}?prefix=x&enableAutoPipelining=true`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Unknown Redis URL parameter 'enableAutoPipelining'");
  });

  it("an unreachable Redis is a failing check and exit 1, quickly", async () => {
    const started = Date.now();
    const result = await runCli(["doctor", "--store", "redis://127.0.0.1:1/0", "--json"]);
    expect(result.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(checksOf(result).redis).toMatchObject({ ok: false, detail: expect.stringMatching(/cannot connect to Redis/) });
    expect(checksOf(result).version.ok).toBe(true);
  });
});

describe("an empty or missing store names itself in --list", () => {
  it("an empty store", async () => {
    const store = scratch.fresh();
    mkdirSync(store, { mode: 0o700 });
    const result = await runCli(["apikey", "--list", "--store", store]);
    expect(result).toMatchObject({ code: 0, stdout: "" });
    expect(result.stderr.trim()).toBe(`No API keys stored in fs:${store}`);
  });

  it("a missing store lists as empty, exit 0, where it could be created, and says so", async () => {
    const result = await runCli(["apikey", "--list", "--store", "/nonexistent/dir"]);
    if (!isRoot) return expect(result.code).toBe(3);
    expect(result.code).toBe(0);
    expect(result.stderr.trim()).toBe("No API keys stored in fs:/nonexistent/dir (it does not exist yet; uid 0 may create it in /)");
  });

  it.skipIf(lacksRoot)(`a missing store that could not be created is unavailable, exit 3 (${NOT_ROOT})`, async () => {
    const result = await nobody(["apikey", "--list", "--store", "/nonexistent/dir"]);
    expect(result.code).toBe(3);
    expect(result.stderr.trim()).toBe("Error: Key store unavailable: fs:/nonexistent/dir does not exist, and it cannot be created: uid 65534 may not create it in / (EACCES)");
  });
});

describe("serve creates its store as the user it runs as", () => {
  it.skipIf(lacksRoot)(`serve as uid 65534 makes its store; root's later create keeps that owner (${NOT_ROOT})`, async () => {
    const store = nobodysFolder();
    const child = spawn(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, CLI, "serve", "--port", "0", "--store", store], {
      cwd: ROOT, env: { ...process.env, LOG_LEVEL: undefined, HOME: "/nonexistent" },
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 20_000);
        child.stderr.on("data", () => /listening on/.test(stderr) && (clearTimeout(timer), resolve()));
        child.on("exit", () => (clearTimeout(timer), reject(new Error(`serve exited: ${stderr}`))));
      });
      expect(statSync(store).uid).toBe(NOBODY);
      expect(statSync(store).mode & 0o777).toBe(0o700);
      expect(stderr).toContain(`serving store fs:${store} (from --store)`);
    } finally {
      child.kill("SIGTERM");
    }
    const created = await runCli(["apikey", "--create", "--name", "later", "-r", "ADMIN", "--store", store]);
    expect(created.code, created.stderr).toBe(0);
    for (const dir of ["keys", "names", "audit"]) {
      expect(statSync(join(store, dir)).uid, dir).toBe(NOBODY);
      for (const file of readdirSync(join(store, dir))) expect(statSync(join(store, dir, file)).uid, file).toBe(NOBODY);
    }
    // The owner can read what root made.
    const listed = execFileSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, CLI, "apikey", "--list", "--store", store], { encoding: "utf8" });
    expect(listed).toMatch(/^later\t/m);
  });
});
