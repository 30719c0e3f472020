// `apikey --export` and `--import` as a user runs them: the CLI as a child process, a file of mode 0600 that
// holds no secret, and a store of 1,000 keys moved from files to a real redis-server, where a server on the
// new store accepts every secret.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
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
