// `apikey --export` and `--import` as a user runs them: the CLI as a child process, a file of mode 0600 that
// holds no secret, and a store of 1,000 keys moved from files to a real redis-server, where a server on the
// new store accepts every secret; an import stopped by any signal at any moment leaves all its keys or none.
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, redisCommand, startRedis } from "../helpers/redis.ts";
import { startServer } from "../helpers/server.ts";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";

const tmp = tempDir("service-api-transfer-");
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  tmp.cleanup();
});

const cli = (store: string, ...args: string[]) => runCli(["apikey", ...args, "--store", store], { timeoutMs: 60_000 });

describe("apikey --export / --import", () => {
  it("writes a 0600 file without secrets, and --import loads it into another store (dry run first)", async () => {
    const from = join(tmp.dir, "from"), to = join(tmp.dir, "to"), file = join(tmp.dir, "keys.jsonl");
    const created = JSON.parse((await cli(from, "--create", "--name", "deploy key", "-r", "ADMIN", "-d", "deployer", "--expires-in", "30d", "--json")).stdout);
    const exported = await cli(from, "--export", "--output", file, "--with-audit");
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain(`Exported 1 key and 1 audit event to ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8")).not.toContain(created.key);
    expect(readFileSync(file, "utf8")).not.toContain(created.key.slice(5));

    const dry = await cli(to, "--import", file, "--dry-run", "--json");
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ imported: 1, dryRun: true });
    expect(JSON.parse((await cli(to, "--list", "--json")).stdout).keys).toEqual([]);

    const loaded = await cli(to, "--import", file);
    expect(loaded.code, loaded.stderr).toBe(0);
    expect(loaded.stderr).toContain("Imported 1 key.");
    const [key] = JSON.parse((await cli(to, "--list", "--json")).stdout).keys;
    expect(key).toMatchObject({ id: created.id, name: "deploy key", description: "deployer", roles: ["ADMIN"] });

    const piped = await runCli(["apikey", "--import", "-", "--store", join(tmp.dir, "piped")], { input: readFileSync(file, "utf8") });
    expect(piped.code, piped.stderr).toBe(0); // `-` is standard input, also as the value of --import
    expect(piped.stderr).toContain("Imported 1 key. The file's 1 audit event stays in the file");

    const again = await cli(to, "--import", file);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/Line 2 of the import: key .* is already in the store\. Nothing was imported/);
  });

  it("refuses a tampered file with exit 2 naming the line, and imports nothing", async () => {
    const from = join(tmp.dir, "tamper-from"), to = join(tmp.dir, "tamper-to"), file = join(tmp.dir, "tampered.jsonl");
    for (const name of ["a", "b", "c"]) await cli(from, "--create", "--name", name, "-r", "VIEWER");
    const lines = (await cli(from, "--export")).stdout.trimEnd().split("\n");
    lines[3] = lines[3].replace(/"hash":"[0-9a-f]{64}"/, '"hash":"0000"');
    writeFileSync(file, `${lines.join("\n")}\n`);
    const result = await cli(to, "--import", file, "--json");
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ code: "INVALID_INPUT", error: expect.stringMatching(/^Line 4 of the import: the hash is not a SHA-256/) });
    expect(JSON.parse((await cli(to, "--list", "--json")).stdout).keys).toEqual([]);
  });

  it("refuses a file that gives a rotated key's old secret the secret of another key: exit 2 naming the line, nothing imported", async () => {
    const from = join(tmp.dir, "retiring-from"), to = join(tmp.dir, "retiring-to"), file = join(tmp.dir, "retiring.jsonl");
    const alpha = JSON.parse((await cli(from, "--create", "--name", "alpha", "-r", "VIEWER", "--json")).stdout);
    await cli(from, "--create", "--name", "beta", "-r", "ADMIN");
    expect((await cli(from, "--rotate", "--name", "beta", "--grace", "1h")).code).toBe(0);
    const lines = (await cli(from, "--export")).stdout.trimEnd().split("\n");
    const at = lines.findIndex((line) => line.includes('"name":"beta"'));
    const beta = JSON.parse(lines[at]);
    beta.retiring.hash = createHash("sha256").update(alpha.key).digest("hex");
    lines[at] = JSON.stringify(beta);
    writeFileSync(file, `${lines.join("\n")}\n`);
    const result = await cli(to, "--import", file);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`Line ${Math.max(at, lines.findIndex((l) => l.includes(alpha.id))) + 1} of the import: the same secret \\(hash\\) as line`));
    expect(JSON.parse((await cli(to, "--list", "--json")).stdout).keys).toEqual([]);
  });

  it("refuses a stream without a newline (a device, a pipe) as it reads it, exit 2 naming line 1, as it refuses such a file", async () => {
    /** `--import source`, stdin from `cat /dev/zero` when piped; killed (and failing the test) after 30 s. */
    const endless = (source: string, piped: boolean) =>
      new Promise<{ code: number | null; stderr: string }>((done, fail) => {
        const cat = piped ? spawn("cat", ["/dev/zero"], { stdio: ["ignore", "pipe", "ignore"] }) : undefined;
        const child = spawn(process.execPath, [CLI, "apikey", "--import", source, "--store", join(tmp.dir, "endless")], {
          env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1" },
          stdio: [cat ? cat.stdout! : "ignore", "ignore", "pipe"],
          timeout: 30_000,
        });
        let stderr = "";
        child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
        child.on("error", fail);
        child.on("close", (code) => {
          cat?.kill();
          done({ code, stderr });
        });
      });
    const file = join(tmp.dir, "one-line.jsonl");
    writeFileSync(file, "x".repeat(2 * 1024 * 1024));
    const refused = await cli(join(tmp.dir, "endless"), "--import", file);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/Line 1 of the import: longer than 1 MiB/);
    for (const [source, piped] of [["/dev/zero", false], ["-", true]] as const) {
      const result = await endless(source, piped);
      expect(result.code, `${source}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/Line 1 of the import: longer than 1 MiB/);
    }
    expect(JSON.parse((await cli(join(tmp.dir, "endless"), "--list", "--json")).stdout).keys).toEqual([]);
  }, 90_000);

  it("is refused over --url: the service never hands out hashes", async () => {
    const result = await runCli(["apikey", "--export", "--url", "http://127.0.0.1:9"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--export works on a store .* not over --url/);
  });

  it("moves 1,000 keys from files to Redis, and a server on Redis accepts every secret", async () => {
    const from = join(tmp.dir, "many");
    const source = await openKeyStore(parseStoreSpec(from), () => {});
    const secrets: string[] = [];
    for (let i = 0; i < 1000; i++) secrets.push((await source.create({ name: `key ${i}`, roles: ["GUEST"], permissions: [] })).key);
    await source.close();

    const file = join(tmp.dir, "many.jsonl");
    expect((await cli(from, "--export", "--output", file)).code).toBe(0);
    const target = `${redis.url}?prefix=migrated`;
    const imported = await cli(target, "--import", file, "--json");
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout).imported).toBe(1000);

    const server = await startServer({ store: target });
    try {
      const refused: number[] = [];
      for (let at = 0; at < secrets.length; at += 50) {
        const answers = await Promise.all(secrets.slice(at, at + 50).map(async (secret, i) => {
          const response = await fetch(`${server.url}/graphql`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
            body: JSON.stringify({ query: "{ me { name } }" }),
          });
          const body = await response.json() as { data?: { me: { name: string } } };
          return body.data?.me.name === `key ${at + i}` ? -1 : at + i;
        }));
        refused.push(...answers.filter((i) => i >= 0));
      }
      expect(refused).toEqual([]);
    } finally {
      await server.stop();
    }
  }, 180_000);
});

/** An export of `count` keys, written straight away (no store needed: the file is what an export writes). */
function exportFile(path: string, count: number): string {
  const at = new Date().toISOString();
  const lines = [JSON.stringify({ format: "service-api-keys", version: 1, exportedAt: at, keys: count, auditEvents: 0 })];
  for (let i = 0; i < count; i++) {
    const hash = createHash("sha256").update(`${path} ${i}`).digest("hex");
    lines.push(JSON.stringify({ type: "key", id: randomUUID(), name: `key ${i}`, roles: ["GUEST"], permissions: [], createdAt: at, hash }));
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

/** Runs `--import file` into `store` and sends `signal` once `ready` says so (polled); resolves when the CLI exits. */
function importUntil(store: string, file: string, signal: NodeJS.Signals, ready: () => Promise<boolean>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, "apikey", "--import", file, "--json", "--store", store], { env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1" } });
    let stdout = "", stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    let done = false;
    child.on("close", (code) => {
      done = true;
      resolve({ code, stdout, stderr });
    });
    void (async () => {
      while (!done && !(await ready().catch(() => false))) await new Promise((r) => setTimeout(r, 5));
      if (!done) child.kill(signal);
    })();
  });
}

const entries = (dir: string) => {
  try {
    return readdirSync(dir).filter((name) => !name.endsWith(".tmp")).length;
  } catch {
    return 0;
  }
};
const count = async (port: number, command: string) => Number((await redisCommand(port, command)).replace(/^:/, "").trim());

describe("an interrupted --import", () => {
  // Each backend: where the keys go, when the import has staged records, when it has committed names.
  const backends = (label: string) => {
    if (label === "files") {
      return (n: number) => {
        const store = join(tmp.dir, `cut-${n}`);
        return { store, staged: async () => entries(join(store, "keys")) > 0, committed: async () => entries(join(store, "names")) > 0 };
      };
    }
    return (n: number) => {
      const prefix = `cut${n}`;
      return {
        store: `${redis.url}?prefix=${prefix}`,
        staged: async () => (await count(redis.port, `ZCARD ${prefix}:order`)) > 0,
        committed: async () => (await count(redis.port, `SCARD ${prefix}:members:names`)) > 0,
      };
    };
  };

  for (const [label, keys] of [["files", 1000], ["Redis", 2000]] as const) {
    it(`leaves all ${keys} keys or none on ${label}, whatever signal stops it and when, and a rerun then imports them`, async () => {
      const file = exportFile(join(tmp.dir, `cut-${label}.jsonl`), keys);
      const backend = backends(label);
      let n = label === "files" ? 0 : 10;
      const moments = [["SIGKILL", "committed"], ["SIGKILL", "staged"], ["SIGINT", "committed"], ["SIGTERM", "staged"]] as const;
      let reran = false; // once, after the first SIGKILL that left nothing: the same import, run again, works
      for (const [signal, moment] of moments) {
        const { store, ...when } = backend(n++);
        const result = await importUntil(store, file, signal, when[moment]);
        const listed = await cli(store, "--list", "--json");
        expect(listed.code, listed.stderr).toBe(0);
        const seen = JSON.parse(listed.stdout).keys.length;
        // Redis commits every name in one step: a signal may land just after it, and then all of them stay.
        if (result.code === 0 || seen === keys) {
          expect([0, null], `${signal} came after the import was done`).toContain(result.code);
          expect(seen).toBe(keys);
          continue;
        }
        expect(seen, `${signal} once ${moment}: ${result.stderr}`).toBe(0);
        if (signal !== "SIGKILL") {
          expect(result.code).toBe(130);
          expect(JSON.parse(result.stdout)).toEqual({ error: "Cancelled; nothing was changed", code: "CANCELLED" });
        }
        if (signal === "SIGKILL" && !reran) {
          reran = true;
          const rerun = await cli(store, "--import", file, "--json");
          expect(rerun.code, rerun.stderr).toBe(0);
          expect(JSON.parse(rerun.stdout).imported).toBe(keys);
          expect(JSON.parse((await cli(store, "--list", "--json")).stdout).keys).toHaveLength(keys);
        }
      }
      expect(reran).toBe(true);
    }, 300_000);
  }
});
