// Store URLs as a user types them: one Redis, a Sentinel group, TLS; anything else (an unknown query
// parameter, redis+cluster://, a cluster node behind a plain URL) is refused as bad usage, exit 2.
import { describe, expect, it } from "vitest";
import { describeStore, parseStoreSpec } from "../../lib/store/config.ts";
import { parseRedisUrl } from "../../lib/store/drivers/_redis-url.ts";
import { runCli } from "../helpers/cli.ts";
import { startRedis } from "../helpers/redis.ts";

describe("parseRedisUrl", () => {
  it("reads one Redis, with TLS, credentials, a db and a prefix", () => {
    expect(parseRedisUrl("rediss://us%40r:p%2Fw@db.example:6380/3?prefix=app")).toEqual({
      mode: "single", hosts: [{ host: "db.example", port: 6380 }], name: undefined, db: 3, tls: true, username: "us@r", password: "p/w", prefix: "app",
    });
    expect(parseRedisUrl("redis://127.0.0.1")).toMatchObject({ hosts: [{ host: "127.0.0.1", port: 6379 }], db: 0, tls: false, prefix: "service-api" });
  });

  it("reads a Sentinel group: its hosts (26379 by default), the master's name and a db", () => {
    expect(parseRedisUrl("redis+sentinel://:pw@s1:26380,s2,[::1]:26381/main/2")).toEqual({
      mode: "sentinel",
      hosts: [{ host: "s1", port: 26380 }, { host: "s2", port: 26379 }, { host: "::1", port: 26381 }],
      name: "main", db: 2, tls: false, username: undefined, password: "pw", prefix: "service-api",
    });
    expect(parseRedisUrl("rediss+sentinel://s1:26379/main")).toMatchObject({ mode: "sentinel", tls: true, name: "main", db: 0 });
  });

  it.each([
    ["redis://h:6379/0?family=6", "Unknown Redis URL parameter 'family'"],
    ["redis://h:6379/0?prefix=a&enableOfflineQueue=true", "Unknown Redis URL parameter 'enableOfflineQueue'"],
    ["redis+cluster://h:7000", "Redis Cluster (redis+cluster://) is not supported yet"],
    ["redis+sentinel://s1:26379", "Invalid Redis URL"],
    ["redis+sentinel://s1:26379/main/0/x", "Invalid Redis URL"],
    ["redis://h1:6379,h2:6379/0", "Invalid Redis URL"],
    ["redis://h:6379/zero", "Invalid Redis URL"],
    ["redis://h:99999/0", "Invalid Redis URL"],
  ])("refuses %s as bad usage", (url, message) => {
    expect(() => parseStoreSpec(url)).toThrow(expect.objectContaining({ code: "USAGE", message: expect.stringContaining(message) }));
  });
});

describe("a Sentinel URL's credentials", () => {
  it("never appear in a message or a debug line, nor the sentinels' own password", async () => {
    const url = "redis+sentinel://us3rnm:p%40ss3cr3t@127.0.0.1:1,127.0.0.1:2/main/0";
    expect(describeStore(parseStoreSpec(url))).toBe("redis+sentinel://***@127.0.0.1:1,127.0.0.1:2/main/0");
    const result = await runCli(["apikey", "--list", "--store", url], { env: { LOG_LEVEL: "trace", SERVICE_API_REDIS_SENTINEL_PASSWORD: "s3nt1nel-pw" } });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("redis+sentinel://***@127.0.0.1:1,127.0.0.1:2/main/0");
    expect(result.stdout + result.stderr).not.toMatch(/3cr3t|s3rnm|s3nt1nel|p%40ss/);
  });
});

describe("the CLI on a store URL it cannot use", () => {
  it("exits 2 naming an unknown parameter, which it never hands to ioredis as an option", async () => {
    // enableOfflineQueue=true would queue commands while Redis is away instead of failing them.
    const result = await runCli(["apikey", "--list", "--store", "redis://127.0.0.1:1/0?enableOfflineQueue=true"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      "Error: Unknown Redis URL parameter 'enableOfflineQueue' in 'redis://127.0.0.1:1/0?enableOfflineQueue=true': use prefix=<name>, username or password (TLS files and the sentinels' password come from SERVICE_API_REDIS_* variables)",
    );
  });

  it("refuses a plain redis:// URL to a Redis Cluster node, exit 2, naming redis+cluster://", async () => {
    const node = await startRedis({ args: ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${process.pid}-${Date.now()}.conf`] });
    try {
      const result = await runCli(["apikey", "--list", "--store", node.url]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`Cannot use ${node.url} as a key store: this Redis is a Redis Cluster node; a plain redis:// URL would reach one shard only. A cluster store is redis+cluster://`);
    } finally {
      await node.destroy();
    }
  });
});
