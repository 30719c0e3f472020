// A store on a Sentinel group follows a failover by itself: a master, a replica and three redis-sentinel
// processes that require a password of their own (SERVICE_API_REDIS_SENTINEL_PASSWORD); a `serve` child on
// redis+sentinel://; `SENTINEL FAILOVER`; the same process, never restarted,
// takes changes again on the new master, and a key made before the failover still works.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli as run } from "../helpers/cli.ts";
import { findRedisSentinel, pollUntil, redisCommand, type SentinelGroup, startSentinelGroup } from "../helpers/redis.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

// Runs wherever redis-sentinel is installed, and always in CI (which installs it): there its absence fails.
const missing = !findRedisSentinel() && !process.env.CI;
const SENTINELS_ENV = { SERVICE_API_REDIS_SENTINEL_PASSWORD: "s3ntinel-pw" };
const runCli = (args: string[]) => run(args, { env: SENTINELS_ENV });

describe.skipIf(missing)("a store on a Sentinel group (needs redis-sentinel)", () => {
  let group: SentinelGroup;
  let server: ServerProcess | undefined;
  beforeAll(async () => void (group = await startSentinelGroup("main", SENTINELS_ENV.SERVICE_API_REDIS_SENTINEL_PASSWORD)), 90_000);
  afterAll(async () => {
    await server?.stop();
    await group?.destroy();
  });

  it("the CLI and doctor use the master the sentinels name, and a change waits for the replica", async () => {
    const created = await runCli(["apikey", "--create", "--name", "before failover", "-r", "ADMIN", "--store", group.url]);
    expect(created.code, created.stderr).toBe(0);
    // On the replica as soon as the command returned: WAIT 1 confirmed it.
    expect(await redisCommand(group.replica.port, "SCARD service-api:members:names")).toBe(":1\r\n");
    const doctor = await runCli(["doctor", "--store", group.url, "--json"]);
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(JSON.parse(doctor.stdout).redis).toEqual({ mode: "sentinel", master: `main at 127.0.0.1:${group.master.port}`, replicas: 1, aof: true });
    // Without the sentinels' password they answer nothing, and the store cannot be reached.
    const refused = await run(["apikey", "--list", "--store", group.url]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("Key store unavailable");
  }, 60_000);

  it("serve follows a failover without a restart: changes work on the new master, old keys still authenticate", async () => {
    const key = (await runCli(["apikey", "--create", "--name", "old key", "-r", "ADMIN", "--store", group.url])).stdout.trim();
    server = await startServer({ store: group.url, env: SENTINELS_ENV });
    expect((await gql(server.url, "{ me { name } }", { key })).body).toEqual({ data: { me: { name: "old key" } } });

    // The sentinels promote the replica; retried while they still gather what they need to choose it.
    await pollUntil("SENTINEL FAILOVER accepted", async () => (await group.sentinel(`SENTINEL FAILOVER ${group.name}`)).startsWith("+OK"));
    await pollUntil("the sentinels name the replica as master", async () => (await group.masterPort()) === group.replica.port);

    let made = 0;
    await pollUntil("a key created through the same service", async () => {
      const answer = await gql(server!.url, `mutation { apiKey { create(input: { name: "after failover ${++made}", roles: [GUEST] }) { id } } }`, { key });
      return answer.status === 200 && !answer.body.errors;
    });
    expect(server.child.exitCode).toBeNull(); // the same process throughout
    // The change is on the new master, and the key made before the failover still works. The client may
    // be switching connections once more as the sentinels announce the new master (a 503 for a moment).
    expect(await redisCommand(group.replica.port, "ROLE")).toMatch(/master/);
    const listed = await runCli(["apikey", "--list", "--json", "--store", group.replica.url]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).keys.map((k: { name: string }) => k.name)).toContain(`after failover ${made}`);
    let me: { status: number; body: unknown } = { status: 0, body: null };
    await pollUntil("the key made before the failover answers", async () => (me = await gql(server!.url, "{ me { name } }", { key })).status === 200);
    expect(me.body).toEqual({ data: { me: { name: "old key" } } });
  }, 120_000);
});
