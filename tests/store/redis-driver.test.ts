// The Redis backend beyond the shared contract: namespacing, failing fast when Redis is away, and
// recovering without a restart once it is back (what a long-running server relies on).
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { freePort, redisCommand, type RedisServer, startRedis } from "../helpers/redis.ts";

const input = (name: string) => ({ name, roles: ["VIEWER" as const], permissions: [] });

async function open(url: string): Promise<KeyStore> {
  return createKeyStore(await openRedisBackend(url));
}

async function elapsed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T | undefined; error: unknown }> {
  const started = performance.now();
  try {
    const value = await fn();
    return { ms: performance.now() - started, value, error: undefined };
  } catch (error) {
    return { ms: performance.now() - started, value: undefined, error };
  }
}

describe("redis backend", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  it("keeps every entry under its prefix, so stores with different prefixes do not see each other", async () => {
    const a = await open(`${redis.url}?prefix=team-a`);
    const b = await open(`${redis.url}?prefix=team-b`);
    const key = await a.create(input("shared name"));
    expect(await b.getByName("shared name")).toBeNull();
    expect(await b.verify(key.key)).toBeNull();
    expect(await b.isEmpty()).toBe(true);
    await b.create(input("shared name"));
    await Promise.all([a.close(), b.close()]);
    const keys = await redisCommand(redis.port, "KEYS *");
    const names = keys.split("\r\n").filter((line) => line && !/^[*$]/.test(line));
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((k) => k.startsWith("team-a:") || k.startsWith("team-b:"))).toBe(true);
  });

  it("rejects a prefix with characters that would not name the same Redis keys everywhere", async () => {
    const error = await openRedisBackend(`${redis.url}?prefix=a/b`).catch((e) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe("USAGE");
    expect(error.message).toContain("Invalid Redis key prefix 'a/b'");
  });

  it("uses the service-api prefix by default, through SERVICE_API_STORE", async () => {
    const store = await openKeyStore(parseStoreSpec(undefined, { SERVICE_API_STORE: redis.url }));
    await store.create(input("default prefix"));
    await store.close();
    expect(await redisCommand(redis.port, "KEYS service-api:names:*")).toMatch(/service-api:names:[0-9a-f]{64}/);
  });

  it("fails fast with STORE_UNAVAILABLE when nothing listens, without the URL's password", async () => {
    const port = await freePort();
    const { ms, error } = await elapsed(() => openRedisBackend(`redis://user:hunter2@127.0.0.1:${port}/0`));
    expect(ms).toBeLessThan(2_000);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("STORE_UNAVAILABLE");
    expect((error as ServiceError).message).toContain(`Key store unavailable: cannot connect to Redis`);
    expect((error as ServiceError).message).toContain(`(redis://***@127.0.0.1:${port}/0)`);
    expect((error as ServiceError).message).not.toContain("hunter2");
  });

  it("gives up within the connect timeout when the port accepts but never answers", async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as { port: number };
    try {
      const { ms, error } = await elapsed(() => openRedisBackend(`redis://127.0.0.1:${port}/0`, { connectTimeout: 500 }));
      expect((error as ServiceError).code).toBe("STORE_UNAVAILABLE");
      expect(ms).toBeGreaterThanOrEqual(450);
      expect(ms).toBeLessThan(2_000);
    } finally {
      silent.close();
    }
  });

  it("refuses a Redis older than 6.2 at once, naming the version", async () => {
    // A stand-in that answers every command with the INFO text of an old server.
    const info = "# Server\r\nredis_version:5.0.7\r\nloading:0\r\n";
    const old: Server = createServer((socket) =>
      socket.on("data", (data) => {
        // One reply per pipelined command (each starts with an array header such as `*2`).
        const commands = String(data).split("\r\n").filter((line) => /^\*\d+$/.test(line)).length;
        socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`.repeat(commands));
      })
    );
    await new Promise<void>((resolve) => old.listen(0, "127.0.0.1", resolve));
    const { port } = old.address() as { port: number };
    try {
      const { error } = await elapsed(() => openRedisBackend(`redis://127.0.0.1:${port}/0`));
      expect((error as ServiceError).code).toBe("STORE_UNAVAILABLE");
      expect((error as ServiceError).message).toContain("Redis 5.0.7 is too old, 6.2 or later is needed");
    } finally {
      old.close();
    }
  });

  it("an open store fails fast while Redis is down and recovers by itself when it is back", async () => {
    const store = await open(`${redis.url}?prefix=outage`);
    const before = await store.create(input("before"));
    await redis.stop();
    try {
      for (const call of [() => store.verify(before.key), () => store.create(input("during")), () => store.isEmpty()]) {
        const { ms, error } = await elapsed(call);
        expect(error).toBeInstanceOf(ServiceError);
        expect((error as ServiceError).code).toBe("STORE_UNAVAILABLE");
        expect((error as ServiceError).message).toContain(redis.url);
        expect(ms).toBeLessThan(1_000);
      }
    } finally {
      await redis.start();
    }
    // The server restarted empty (no persistence); the same store object works again within seconds.
    const deadline = Date.now() + 10_000;
    let after;
    while (!after && Date.now() < deadline) {
      after = await store.create(input("after")).catch(() => undefined);
      if (!after) await new Promise((r) => setTimeout(r, 100));
    }
    expect(after).toBeDefined();
    expect((await store.verify(after!.key))?.name).toBe("after");
    await store.close();
  });
});
