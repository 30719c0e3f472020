// Several hosts: two `service-api serve` processes and the CLI sharing one redis-server. A key made
// anywhere works everywhere, a delete or overwrite revokes everywhere on the next request, a name
// race across servers has one winner, and a Redis outage is a 503 that heals by itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const ME = "{ me { id name } }";
const CREATE = "mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id name key } } }";

let redis: RedisServer;
let store: string;
let servers: ServerProcess[] = [];

const cli = (...args: string[]) => runCli(args, { env: { SERVICE_API_STORE: store } });
async function createKey(name: string, ...extra: string[]): Promise<{ key: string; id: string }> {
  const result = await cli("apikey", "--create", "--name", name, "--roles", "ADMIN", "--json", ...extra);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}
const statuses = (key: string) => Promise.all(servers.map(async (s) => (await gql(s.url, ME, { key })).status));

beforeAll(async () => {
  redis = await startRedis({ persist: true });
  store = `${redis.url}?prefix=several-hosts`;
  servers = await Promise.all([0, 1].map(() => startServer({ store })));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await redis?.destroy();
});

describe("two servers and the CLI sharing Redis", () => {
  it("a key created by the CLI authenticates on both servers", async () => {
    const { key, id } = await createKey("shared");
    for (const server of servers) {
      const { status, body } = await gql(server.url, ME, { key });
      expect(status).toBe(200);
      expect(body.data.me).toEqual({ id, name: "shared" });
    }
  });

  it("after the CLI deletes a key, both servers answer 401 on the next request", async () => {
    const { key } = await createKey("short lived");
    expect(await statuses(key)).toEqual([200, 200]);
    expect((await cli("apikey", "--delete", "--name", "short lived")).code).toBe(0);
    expect(await statuses(key)).toEqual([401, 401]);
  });

  it("after the CLI overwrites a key, the old secret is 401 and the new one 200 on both servers", async () => {
    const old = await createKey("rotated");
    const fresh = await createKey("rotated", "--overwrite");
    expect(await statuses(old.key)).toEqual([401, 401]);
    expect(await statuses(fresh.key)).toEqual([200, 200]);
  });

  it("of 16 creates of one name split across both servers exactly one wins", async () => {
    const { key } = await createKey("race admin");
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        gql(servers[i % 2].url, CREATE, { key, variables: { input: { name: "cross host race", roles: ["VIEWER"] } } })
      ),
    );
    const winners = results.filter((r) => r.body.data?.apiKey?.create?.id);
    expect(winners).toHaveLength(1);
    const losers = results.filter((r) => !r.body.data?.apiKey?.create?.id);
    for (const loser of losers) expect(loser.body.errors?.[0]?.extensions?.code).toBe("NAME_TAKEN");
    // The winner's secret works on both servers.
    expect(await statuses(winners[0].body.data.apiKey.create.key)).toEqual([200, 200]);
  });

  it("answers 503 while Redis is down, never 200, and recovers by itself when Redis is back", async () => {
    const { key } = await createKey("through outage");
    expect(await statuses(key)).toEqual([200, 200]);
    await redis.stop();
    try {
      for (const server of servers) {
        const started = performance.now();
        const { status, headers, body } = await gql(server.url, ME, { key });
        expect(status).toBe(503);
        expect(headers.get("retry-after")).toBeTruthy();
        expect(body.errors[0].extensions.code).toBe("STORE_UNAVAILABLE");
        expect(JSON.stringify(body)).not.toContain(String(redis.port));
        expect(performance.now() - started).toBeLessThan(2_000);
      }
      expect((await cli("apikey", "--list", "--json")).code).toBe(3);
    } finally {
      await redis.start();
    }
    // No restart of the servers: both reconnect on their own and accept the same key again.
    const deadline = Date.now() + 15_000;
    let last: number[] = [];
    while (Date.now() < deadline) {
      last = await statuses(key);
      if (last.every((s) => s === 200)) break;
      expect(last.every((s) => s === 200 || s === 503)).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(last).toEqual([200, 200]);
    for (const server of servers) expect(server.child.exitCode).toBeNull();
  });
});
