// The CLI over a shared Redis store (SERVICE_API_STORE=redis://...), run as real child processes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunResult, runCli } from "../helpers/cli.ts";
import { freePort, redisCommand, type RedisServer, startRedis } from "../helpers/redis.ts";

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());

/** The CLI bound to the test's Redis, each test in its own key prefix. */
function cliOn(url: string) {
  return (...args: string[]): Promise<RunResult> => runCli(args, { env: { SERVICE_API_STORE: url } });
}

const json = (result: RunResult) => JSON.parse(result.stdout);

describe("CLI on a Redis store", () => {
  it("creates, lists and deletes keys", async () => {
    const cli = cliOn(`${redis.url}?prefix=cli-basic`);
    const created = await cli("apikey", "--create", "--name", "deploy key", "--roles", "ADMIN", "--json");
    expect(created.code).toBe(0);
    const { key, id, name } = json(created);
    expect(name).toBe("deploy key");
    expect(key).toMatch(/^sapi_/);

    const taken = await cli("apikey", "--create", "--name", "deploy key", "--roles", "VIEWER", "--json");
    expect(taken.code).toBe(1);
    expect(json(taken)).toMatchObject({ code: "NAME_TAKEN" });

    const listed = await cli("apikey", "--list", "--json");
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(key);
    expect(JSON.stringify(json(listed))).toContain(id);

    const deleted = await cli("apikey", "--delete", "--name", "deploy key", "--json");
    expect(deleted.code).toBe(0);
    expect(json(deleted)).toEqual({ deleted: 1, keys: [{ id, name: "deploy key" }] });

    const again = await cli("apikey", "--delete", "--name", "deploy key", "--json");
    expect(again.code).toBe(1);
    expect(json(again)).toMatchObject({ deleted: 0, message: "No API keys found to delete" });
    // Nothing of the secret reached Redis.
    expect(await redisCommand(redis.port, "KEYS cli-basic:*")).not.toContain(key);
  });

  it("overwrite from one process revokes the old secret for every other process", async () => {
    const cli = cliOn(`${redis.url}?prefix=cli-overwrite`);
    const first = json(await cli("apikey", "--create", "--name", "ci", "--roles", "VIEWER", "--json"));
    const second = await cli("apikey", "--create", "--name", "ci", "--roles", "ADMIN", "--overwrite", "--json");
    expect(second.code).toBe(0);
    expect(json(second).id).not.toBe(first.id);
    const listed = json(await cli("apikey", "--list", "--json"));
    expect(JSON.stringify(listed)).not.toContain(first.id);
    expect(JSON.stringify(listed)).toContain(json(second).id);
  });

  it("of 16 concurrent CLI processes creating one name exactly one wins", async () => {
    const cli = cliOn(`${redis.url}?prefix=cli-race`);
    const results = await Promise.all(
      Array.from({ length: 16 }, () => cli("apikey", "--create", "--name", "race", "--roles", "ADMIN", "--json")),
    );
    const winners = results.filter((r) => r.code === 0);
    const losers = results.filter((r) => r.code === 1);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(15);
    for (const loser of losers) expect(json(loser)).toMatchObject({ code: "NAME_TAKEN" });
    const listed = json(await cli("apikey", "--list", "--json"));
    expect(JSON.stringify(listed)).toContain(json(winners[0]).id);
    expect(JSON.stringify(listed).match(/"name":"race"/g)).toHaveLength(1);
  }, 60_000);

  it("exits 1 quickly with a clear message when Redis is not running", async () => {
    const port = await freePort();
    const started = performance.now();
    const result = await runCli(["apikey", "--create", "--name", "x", "--roles", "ADMIN"], {
      env: { SERVICE_API_STORE: `redis://:topsecret@127.0.0.1:${port}/0` },
    });
    const ms = performance.now() - started;
    expect(result.code).toBe(3);
    // Refused at once; the budget is for a cold node start on a loaded machine, far below any hang.
    expect(ms).toBeLessThan(5_000);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("Key store unavailable");
    expect(result.stderr).toContain(`redis://***@127.0.0.1:${port}/0`);
    expect(result.stderr).not.toContain("topsecret");
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("exits 1 with a JSON error, no hang, after the shared Redis is stopped", async () => {
    const cli = cliOn(`${redis.url}?prefix=cli-stopped`);
    expect((await cli("apikey", "--create", "--name", "before", "--roles", "ADMIN", "--json")).code).toBe(0);
    await redis.stop();
    try {
      const started = performance.now();
      const results = await Promise.all([
        cli("apikey", "--create", "--name", "during", "--roles", "ADMIN", "--json"),
        cli("apikey", "--delete", "--name", "before", "--json"),
        cli("apikey", "--list", "--json"),
      ]);
      expect(performance.now() - started).toBeLessThan(5_000);
      for (const result of results) {
        expect(result.code).toBe(3);
        expect(json(result)).toMatchObject({ code: "STORE_UNAVAILABLE" });
        expect(json(result).error).toContain(`Key store unavailable: cannot connect to Redis`);
        expect(json(result).error).toContain(redis.url);
        expect(result.stderr).not.toMatch(/^\s+at /m);
      }
    } finally {
      await redis.start();
    }
    expect((await cli("apikey", "--create", "--name", "after", "--roles", "ADMIN", "--json")).code).toBe(0);
  });
});
