// The store under a Redis user with least privilege: the ACL docs/operations.md lists is enough for every
// operation of the CLI and the service (Redis denies nothing: its ACL LOG stays empty), and a user without
// INFO runs quietly, with no warning of ioredis's own on stderr.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Redis from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, runCli } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, startServer } from "../helpers/server.ts";

/** The `ACL SETUSER service-api …` line of docs/operations.md, as its words. */
const documentedAcl = (): string[] => {
  const line = readFileSync(join(ROOT, "docs/operations.md"), "utf8").split("\n").find((l) => l.startsWith("ACL SETUSER service-api "));
  if (!line) throw new Error("docs/operations.md lists no `ACL SETUSER service-api` line");
  return line.split(" ").slice(3); // after ACL SETUSER service-api
};

describe("a Redis user with least privilege", () => {
  let redis: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    await admin.call("ACL", "SETUSER", "service-api", ...documentedAcl().map((word) => (word === ">PASSWORD" ? ">l3ast-priv" : word)));
    await admin.call("ACL", "SETUSER", "noinfo", "on", ">n0-info", "~*", "+@all", "-info");
  });
  afterAll(async () => {
    admin?.disconnect();
    await redis?.destroy();
  });

  it("the documented ACL covers every operation of the CLI and the service", async () => {
    const store = `redis://service-api:l3ast-priv@127.0.0.1:${redis.port}/0`;
    const cli = async (...args: string[]) => {
      const result = await runCli([...args, "--store", store]);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      expect(result.stderr).not.toMatch(/NOPERM|no permissions/i);
      return result.stdout;
    };
    const key = (await cli("apikey", "--create", "--name", "ops", "-r", "ADMIN", "--rate-limit", "100/1m", "--credits", "50")).trim();
    await cli("apikey", "--create", "--name", "other", "-r", "VIEWER");
    await cli("apikey", "--create", "--name", "other", "-r", "GUEST", "--overwrite", "--grace", "1m");
    await cli("apikey", "--update", "--name", "other", "--disable");
    await cli("apikey", "--update", "--name", "other", "--enable", "--label", "env=ci");
    await cli("apikey", "--rotate", "--name", "other", "--grace", "1m");
    await cli("apikey", "--list", "--filter", "role:ADMIN");
    await cli("apikey", "--audit");
    await cli("apikey", "--usage", "--name", "ops");
    const exported = await cli("apikey", "--export");
    await cli("apikey", "--delete", "--name", "other");
    const imported = await runCli(["apikey", "--import", "-", "--on-conflict", "skip", "--store", store], { input: exported });
    expect(imported.code, imported.stderr).toBe(0);
    await cli("apikey", "--delete", "--expired");
    expect(await cli("doctor")).toMatch(/^pass  replicas +0 connected$/m);

    const server = await startServer({ store });
    try {
      const answer = await gql(server.url, "{ me { name } apiKeys { name } }", { key });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ data: { me: { name: "ops" } } });
      const made = await gql(server.url, 'mutation { apiKey { create(input: { name: "via graphql", roles: [GUEST], credits: { remaining: 1 }, rateLimits: [{ limit: 1, durationMs: 60000 }] }) { id } } }', { key }); // within the metered maker's own credits and limit
      expect(made.body.errors).toBeUndefined();
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
    expect(server.stderr()).not.toMatch(/NOPERM|no permissions/i);
    expect(await admin.call("ACL", "LOG")).toEqual([]); // Redis refused nothing
  }, 90_000);

  it("a user without INFO works without a warning on stderr; doctor says what it cannot know", async () => {
    const store = `redis://noinfo:n0-info@127.0.0.1:${redis.port}/0?prefix=noinfo`;
    const created = await runCli(["apikey", "--create", "--name", "quiet", "-r", "GUEST", "--json", "--store", store], { env: { LOG_FORMAT: "json" } });
    expect(created.code, created.stderr).toBe(0);
    const listed = await runCli(["apikey", "--list", "--store", store]);
    expect(listed.code).toBe(0);
    for (const output of [created.stderr, listed.stderr]) expect(output).not.toMatch(/ready check|INFO/);
    const doctor = await runCli(["doctor", "--store", store]);
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(/^pass  replicas +unknown: INFO is not permitted$/m);
    expect(doctor.stderr).not.toMatch(/ready check/);
  }, 60_000);
});
