// Per-key rate limits: the CLI's flags and refusals, what --list, --list --json and GraphQL show, the 429
// and the RateLimit headers of a server on a files store, and the exact count of two servers on one Redis.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, freshStores, runCli } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const created = (stdout: string) => JSON.parse(stdout) as { key: string; id: string; name: string };

describe("apikey --rate-limit", () => {
  const fresh = freshStores();

  it("stores the limits; --list --json, the pipe format and GraphQL show them", async () => {
    const { cli, store } = fresh();
    const made = await cli("apikey", "--create", "--name", "ci", "-r", "ADMIN", "--rate-limit", "1000/1h,10/1s", "--json");
    expect(made.code, made.stderr).toBe(0);
    const listed = JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys[0];
    expect(listed.rateLimits).toEqual([{ limit: 10, durationMs: 1_000 }, { limit: 1000, durationMs: 3_600_000 }]);
    const line = (await cli("apikey", "--list")).stdout.trimEnd().split("\t");
    expect(line.at(-1)).toBe("10/1s,1000/1h");
    expect(line[0]).toBe("ci");

    const server = await startServer({ store });
    try {
      const answer = await gql(server.url, "{ apiKeys { name rateLimits { limit durationMs } } }", { key: created(made.stdout).key });
      expect(answer.body.data.apiKeys).toEqual([{ name: "ci", rateLimits: [{ limit: 10, durationMs: 1000 }, { limit: 1000, durationMs: 3600000 }] }]);
    } finally {
      await server.stop();
    }
  });

  it("--update changes them, --no-rate-limit removes them, --rotate keeps them", async () => {
    const { cli } = fresh();
    await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", "--rate-limit", "5/1m");
    expect((await cli("apikey", "--update", "--name", "ci", "--rate-limit", "7/1d")).code).toBe(0);
    expect(JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys[0].rateLimits).toEqual([{ limit: 7, durationMs: 86_400_000 }]);
    expect((await cli("apikey", "--rotate", "--name", "ci")).code).toBe(0);
    expect(JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys[0].rateLimits).toEqual([{ limit: 7, durationMs: 86_400_000 }]);
    expect((await cli("apikey", "--update", "--name", "ci", "--no-rate-limit")).code).toBe(0);
    expect(JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys[0].rateLimits).toBeUndefined();
  });

  it("refuses a malformed limit, 0 and more than 1,000,000 per window with exit 2, changing nothing", async () => {
    const { cli } = fresh();
    for (const bad of ["10", "ten/1s", "10/1x", "10/1s,", "0/1m", "1000001/1h"]) {
      const result = await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", "--rate-limit", bad);
      expect(result.code, `${bad}: ${result.stderr}`).toBe(2);
      expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
      if (!bad.startsWith("0/") && !bad.startsWith("1000001")) expect(result.stderr).toMatch(/10\/1s/);
      else expect(result.stderr).toMatch(/1 to 1,000,000/);
    }
    expect(JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys).toEqual([]);
    await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", "--rate-limit", "5/1m");
    expect((await cli("apikey", "--update", "--name", "ci", "--rate-limit", "5")).code).toBe(2);
    expect(JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys[0].rateLimits).toEqual([{ limit: 5, durationMs: 60_000 }]);
  });
});

describe("a server on a files store", () => {
  let server: ServerProcess;
  let cleanup: () => void;
  let limited: string;
  let free: string;
  beforeAll(async () => {
    const s = cliWithStore();
    cleanup = s.cleanup;
    limited = created((await s.cli("apikey", "--create", "--name", "limited", "-r", "VIEWER", "--rate-limit", "3/1m,100/1h", "--json")).stdout).key;
    free = created((await s.cli("apikey", "--create", "--name", "free", "-r", "VIEWER", "--json")).stdout).key;
    server = await startServer({ store: s.store });
  });
  afterAll(async () => {
    await server?.stop();
    cleanup?.();
  });

  it("answers 200 with RateLimit headers up to the limit, then 429 with Retry-After", async () => {
    // The same key-only query each time: its answer is remembered after the first, and still counted.
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await gql(server.url, "{ me { name } }", { key: limited }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(answers.slice(0, 3).map((a) => a.headers.get("ratelimit"))).toEqual([
      expect.stringMatching(/^limit=3, remaining=2, reset=(59|60)$/),
      expect.stringMatching(/^limit=3, remaining=1, reset=(59|60)$/),
      expect.stringMatching(/^limit=3, remaining=0, reset=(59|60)$/),
    ]);
    expect(answers[0].headers.get("ratelimit-policy")).toBe("3;w=60, 100;w=3600");
    const refused = answers[3];
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(refused.body.errors[0].extensions.code).toBe("RATE_LIMITED");
    expect(refused.body.errors[0].message).toMatch(/^Rate limit exceeded: /);
  });

  it("sends no RateLimit headers for a key without limits", async () => {
    for (let i = 0; i < 5; i++) {
      const answer = await gql(server.url, "{ me { name } }", { key: free });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("ratelimit")).toBeNull();
      expect(answer.headers.get("ratelimit-policy")).toBeNull();
    }
  });
});

describe("two servers on one Redis", () => {
  let redis: RedisServer;
  const servers: ServerProcess[] = [];
  beforeAll(async () => {
    redis = await startRedis({ persist: true });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.destroy();
  });

  it("answer exactly the limit with 200 over 100 concurrent requests, keep counting across a restart, and refuse (503) when Redis is down", async () => {
    const made = await runCli(["apikey", "--create", "--name", "shared", "-r", "VIEWER", "--rate-limit", "30/1m", "--json", "--store", redis.url]);
    expect(made.code, made.stderr).toBe(0);
    const { key } = created(made.stdout);
    servers.push(...(await Promise.all([0, 1].map(() => startServer({ store: redis.url })))));
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => gql(servers[i % 2].url, "{ me { name } }", { key })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(70);

    // A restarted server finds the count where it was.
    await servers.shift()!.stop();
    servers.unshift(await startServer({ store: redis.url }));
    expect((await gql(servers[0].url, "{ me { name } }", { key })).status).toBe(429);

    await redis.stop();
    const down = await gql(servers[1].url, "{ me { name } }", { key });
    expect(down.status).toBe(503);
  });
});
