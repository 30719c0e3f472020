// With replicas, a change is reported done only once a replica holds it (WAIT 1), so a failover cannot bring
// back a key that was deleted, disabled or rotated. A replica that does not confirm in time (here: asleep,
// DEBUG SLEEP) turns every change into NOT_REPLICATED: exit 3 in the CLI, a GraphQL error in the service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { type RedisServer, redisCommand, startRedis, startReplica } from "../helpers/redis.ts";
import { gql, startServer } from "../helpers/server.ts";

const NOT_CONFIRMED = /no replica confirmed it within 2000 ms: a failover now could undo it/;

describe("a Redis master with a replica", () => {
  let master: RedisServer;
  let replica: RedisServer;
  beforeAll(async () => {
    master = await startRedis({ persist: true });
    replica = await startReplica(master, { args: ["--enable-debug-command", "local"] });
  }, 60_000);
  afterAll(async () => {
    await replica?.destroy();
    await master?.destroy();
  });

  it("a change returns once the replica holds it; with the replica not answering, each change says so: exit 3, a GraphQL error", async () => {
    const cli = (...args: string[]) => runCli([...args, "--store", master.url], { timeoutMs: 40_000 });
    const admin = (await cli("apikey", "--create", "--name", "admin", "-r", "ADMIN")).stdout.trim();
    for (const name of ["to delete", "to disable", "to rotate", "via graphql"]) expect((await cli("apikey", "--create", "--name", name, "-r", "GUEST")).code).toBe(0);
    expect(await redisCommand(replica.port, "SCARD service-api:members:names")).toBe(":5\r\n"); // there when the CLI returned
    const doctor = await runCli(["doctor", "--store", master.url]);
    expect(doctor.stdout).toMatch(/^pass  replicas +1 connected; changes wait for one to confirm$/m);
    const onReplica = await runCli(["doctor", "--store", replica.url]);
    expect(onReplica.stdout).toMatch(/^warn  redis +.* this Redis is a replica: every change fails \(READONLY\); point the store at the master$/m);
    const server = await startServer({ store: master.url });
    const { body: listed } = await gql(server.url, "{ apiKeys { id name } }", { key: admin });
    const graphqlId = listed.data.apiKeys.find((k: { name: string }) => k.name === "via graphql").id;

    const exported = (await cli("apikey", "--export")).stdout;
    // The replica sleeps 30 s: long enough for every change below to start and wait its 2 s in vain, also on a loaded machine.
    const asleep = redisCommand(replica.port, "DEBUG SLEEP 30", 45_000);
    try {
      const [deleted, disabled, rotated, answer, dryRun] = await Promise.all([
        cli("apikey", "--delete", "--name", "to delete"),
        cli("apikey", "--update", "--name", "to disable", "--disable"),
        cli("apikey", "--rotate", "--name", "to rotate"),
        gql(server.url, `mutation { apiKey { delete(input: { ids: ["${graphqlId}"] }) } }`, { key: admin }),
        runCli(["apikey", "--import", "-", "--dry-run", "--on-conflict", "skip", "--store", master.url], { input: exported, timeoutMs: 40_000 }),
      ]);
      expect(dryRun.code, dryRun.stderr).toBe(0); // a dry run changes nothing: no replica has anything to confirm
      for (const result of [deleted, disabled, rotated]) {
        expect(result.code, result.stderr).toBe(3);
        expect(result.stderr).toMatch(NOT_CONFIRMED);
      }
      expect(rotated.stdout).toBe(""); // no secret shown for a change that is not sure
      expect(answer.status).toBe(200); // a field error, as every refused change
      expect(answer.body.errors[0]).toMatchObject({ message: expect.stringMatching(NOT_CONFIRMED), extensions: { code: "NOT_REPLICATED" } });
    } finally {
      await asleep;
      await server.stop();
    }
  }, 90_000);
});
