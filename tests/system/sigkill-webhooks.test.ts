// At least once, never lost: a `serve` killed with SIGKILL in the middle of a delivery leaves its queued
// events to the next server, which delivers every one of them with the webhook-id the first one sent.
// And several servers on one Redis share the work: a healthy receiver gets each event once.
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { startServer } from "../helpers/server.ts";
import { startReceiver } from "../helpers/webhook-receiver.ts";

let cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const clean of cleanups.reverse()) await clean();
  cleanups = [];
});

async function endpointOn(store: string) {
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const cli = (...args: string[]) => runCli([...args, "--store", store]);
  const added = await cli("webhook", "--add", "--url", receiver.url, "--json");
  expect(added.code, added.stderr).toBe(0);
  receiver.secret = JSON.parse(added.stdout).secret;
  const serve = async () => {
    const server = await startServer({ store });
    cleanups.push(() => server.stop("SIGKILL").catch(() => {}));
    return server;
  };
  const create = async (name: string) => expect((await cli("apikey", "--create", "--name", name, "--roles", "VIEWER")).code).toBe(0);
  return { receiver, serve, create };
}

describe("webhook delivery survives", () => {
  it("a SIGKILL of serve mid-delivery: after a restart every queued event arrives, the interrupted one with the same webhook-id", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { receiver, serve, create } = await endpointOn(join(tmp.dir, "keys"));
    receiver.mode = "hang";
    const first = await serve();
    for (const name of ["alpha", "beta", "gamma"]) await create(name);
    await receiver.waitFor(() => receiver.requests.length >= 1, "the first delivery to start");
    const interrupted = receiver.requests[0];
    expect((await first.stop("SIGKILL")).signal).toBe("SIGKILL");

    receiver.mode = 204;
    await serve();
    await receiver.waitFor(() => receiver.delivered().length >= 3, "every queued event after the restart", 60_000);
    const got = receiver.delivered();
    expect(got.map((r) => r.data.name)).toEqual(["alpha", "beta", "gamma"]);
    expect(got[0].id).toBe(interrupted.id);
    expect(got.every((r) => r.verified)).toBe(true);
  }, 90_000);
});

describe("several servers on one Redis", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("share the deliveries: each event reaches a healthy receiver exactly once", async () => {
    const { receiver, serve, create } = await endpointOn(`${redis.url}?prefix=webhooks`);
    await Promise.all([serve(), serve()]);
    const names = ["one", "two", "three", "four", "five"];
    for (const name of names) await create(name);
    await receiver.waitFor(() => receiver.delivered().length >= names.length, "every event");
    // A little longer: a second delivery of any of them would show up now.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.delivered().map((r) => r.data.name)).toEqual(names);
    expect(receiver.requests).toHaveLength(names.length);
  }, 60_000);
});
