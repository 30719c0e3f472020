// Credits through a real `serve`: 429 USAGE_EXCEEDED at 0 until an update, GraphQL's ApiKey.credits and
// verifyApiKey's codes and counts, the count written back on a files store, and two servers on one
// redis-server spending exactly a key's credits over 100 concurrent requests.
import { afterEach, describe, expect, it } from "vitest";
import { cliWithStore, runCli } from "../helpers/cli.ts";
import { redisCommand } from "../helpers/redis.ts";
import { gql, redisWithServers, type ServerProcess, startServer } from "../helpers/server.ts";
import { createRemoteBackend } from "../../lib/client/remote.ts";

const created = (stdout: string) => JSON.parse(stdout) as { key: string; id: string; name: string };
const ME = "{ me { name } }";

describe("a server on a files store", () => {
  const servers: ServerProcess[] = [];
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    cleanups.splice(0).forEach((c) => c());
  });

  it("answers 200 while credits last, then 429 USAGE_EXCEEDED until an update; the count is written back", async () => {
    const s = cliWithStore();
    cleanups.push(s.cleanup);
    const { key } = created((await s.cli("apikey", "--create", "--name", "capped", "-r", "VIEWER", "--credits", "2", "--json")).stdout);
    const server = await startServer({ store: s.store });
    servers.push(server);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await gql(server.url, ME, { key }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429, 429]);
    expect(answers[2].body.errors[0].extensions.code).toBe("USAGE_EXCEEDED");
    expect(answers[2].body.errors[0].message).toMatch(/no credits left until an update gives it more/);

    expect((await s.cli("apikey", "--update", "--name", "capped", "--credits", "1")).code).toBe(0);
    expect((await gql(server.url, ME, { key })).status).toBe(200);
    expect((await gql(server.url, ME, { key })).status).toBe(429);

    // A server that stops writes what it counted: the list then says 0.
    expect((await servers.pop()!.stop()).code).toBe(0);
    const listed = JSON.parse((await s.cli("apikey", "--list", "--json")).stdout).keys[0];
    expect(listed.credits).toEqual({ remaining: 0 });
  });

  it("a key rotated with a grace period spends one count of credits, whichever secret a request comes with", async () => {
    const s = cliWithStore();
    cleanups.push(s.cleanup);
    const old = created((await s.cli("apikey", "--create", "--name", "rolled", "-r", "VIEWER", "--credits", "3", "--json")).stdout);
    const rotated = await s.cli("apikey", "--rotate", "--name", "rolled", "--grace", "1h");
    expect(rotated.code, rotated.stderr).toBe(0);
    const server = await startServer({ store: s.store });
    servers.push(server);
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await gql(server.url, ME, { key: i % 2 ? rotated.stdout.trim() : old.key })).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429, 429, 429]);
  });

  it("GraphQL shows credits and sets them; verifyApiKey spends the verified key's credits and says RATE_LIMITED and USAGE_EXCEEDED", async () => {
    const s = cliWithStore();
    cleanups.push(s.cleanup);
    const admin = created((await s.cli("apikey", "--create", "--name", "admin", "-r", "ADMIN", "--json")).stdout).key;
    const server = await startServer({ store: s.store });
    servers.push(server);
    const made = await gql(server.url, `mutation { apiKey { create(input: { name: "svc", roles: [VIEWER], credits: { remaining: 2, refill: { amount: 50, interval: month } }, rateLimits: [{ limit: 5, durationMs: 60000 }] }) { id key credits { remaining refill { amount interval } } } } }`, { key: admin });
    expect(made.body.errors).toBeUndefined();
    const { id, key, credits } = made.body.data.apiKey.create;
    expect(credits).toEqual({ remaining: 2, refill: { amount: 50, interval: "month" } });

    const verify = async () =>
      (await gql(server.url, `query ($k: String!) { verifyApiKey(key: $k) { valid code credits ratelimits { name limit remaining reset exceeded } } }`, { key: admin, variables: { k: key } })).body.data.verifyApiKey;
    const first = await verify();
    expect(first).toMatchObject({ valid: true, code: "VALID", credits: 1, ratelimits: [{ name: "5/1m", limit: 5, remaining: 4, exceeded: false }] });
    expect(Date.parse(first.ratelimits[0].reset)).toBeGreaterThan(Date.now());
    expect(await verify()).toMatchObject({ code: "VALID", credits: 0 });
    expect(await verify()).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
    // The caller's own key spent nothing: it has no credits and no limits, and still works.
    expect((await gql(server.url, ME, { key: admin })).status).toBe(200);
    // The verified key itself is refused now.
    expect((await gql(server.url, ME, { key })).body.errors[0].extensions.code).toBe("USAGE_EXCEEDED");

    const updated = await gql(server.url, `mutation ($id: PrefixedID!) { apiKey { update(input: { id: $id, credits: { remaining: 100 } }) { credits { remaining refill { amount } } } } }`, { key: admin, variables: { id } });
    expect(updated.body.data.apiKey.update.credits).toEqual({ remaining: 100, refill: null });
    // Its rate limit counted 4 of 5 so far: a use the limit allowed counts there even when no credit was left.
    expect(await verify()).toMatchObject({ code: "VALID", credits: 99 });
    const limited = await verify();
    expect(limited).toMatchObject({ valid: false, code: "RATE_LIMITED", ratelimits: [{ remaining: 0, exceeded: true }] });
    expect(limited.credits).toBe(99); // a rate-limited verification takes no credit

    const removed = await gql(server.url, `mutation ($id: PrefixedID!) { apiKey { update(input: { id: $id, credits: null }) { credits { remaining } } } }`, { key: admin, variables: { id } });
    expect(removed.body.data.apiKey.update.credits).toBeNull();
    const audit = await gql(server.url, "{ auditLog { action changed } }", { key: admin });
    expect(audit.body.data.auditLog.filter((e: { action: string }) => e.action === "update").map((e: { changed: string[] }) => e.changed)).toEqual([["credits"], ["credits"]]);
    const bad = await gql(server.url, `mutation ($id: PrefixedID!) { apiKey { update(input: { id: $id, credits: { remaining: -1 } }) { id } } }`, { key: admin, variables: { id } });
    expect(bad.body.errors[0].extensions.code).toBe("INVALID_INPUT");
  });

  it("service-api-keys/client: create with credits, ApiKey.credits, and verifyDetailed's credits, ratelimits and codes", async () => {
    const s = cliWithStore();
    cleanups.push(s.cleanup);
    const admin = created((await s.cli("apikey", "--create", "--name", "admin", "-r", "ADMIN", "--json")).stdout).key;
    const server = await startServer({ store: s.store });
    servers.push(server);
    const backend = createRemoteBackend({ baseUrl: server.url, apiKey: admin });
    const made = await backend.create({ name: "svc", roles: ["VIEWER"], permissions: [], credits: { remaining: 1, refill: { amount: 5, interval: "day" } }, rateLimits: [{ limit: 10, durationMs: 60_000 }] });
    expect(made.credits).toEqual({ remaining: 1, refill: { amount: 5, interval: "day" } });
    const first = await backend.verifyDetailed(made.key);
    expect(first).toMatchObject({ valid: true, code: "VALID", credits: 0, ratelimits: [{ name: "10/1m", limit: 10, remaining: 9, exceeded: false }] });
    expect(await backend.verifyDetailed(made.key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
    expect((await backend.update(made.id, { credits: null })).credits).toBeUndefined();
    expect(await backend.verifyDetailed(made.key)).toMatchObject({ code: "VALID", credits: null });
  });
});

describe("two servers on one Redis", () => {
  const shared = redisWithServers();
  const servers = shared.servers;

  it("a key of 30 credits gets exactly 30 answers of 200 over 100 concurrent requests; with a limit of 20 a minute, 20 and 10 credits left", async () => {
    const made = await runCli(["apikey", "--create", "--name", "shared", "-r", "VIEWER", "--credits", "30", "--json", "--store", shared.redis.url]);
    expect(made.code, made.stderr).toBe(0);
    const { key } = created(made.stdout);
    servers.push(...(await Promise.all([0, 1].map(() => startServer({ store: shared.redis.url })))));
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => gql(servers[i % 2].url, ME, { key })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(70);
    expect(answers.find((a) => a.status === 429)!.body.errors[0].extensions.code).toBe("USAGE_EXCEEDED");
    // A key with a rate limit too: both are counted in one script, and a request the limit refuses costs no credit.
    const both = created((await runCli(["apikey", "--create", "--name", "both", "-r", "VIEWER", "--credits", "30", "--rate-limit", "20/1m", "--json", "--store", shared.redis.url])).stdout);
    const evals = async () => Number(/cmdstat_eval:calls=(\d+)/.exec(await redisCommand(shared.redis.port, "INFO commandstats"))?.[1] ?? 0);
    const before = await evals();
    const mixed = await Promise.all(Array.from({ length: 100 }, (_, i) => gql(servers[i % 2].url, ME, { key: both.key })));
    expect((await evals()) - before).toBe(100); // one script per request for both
    expect(mixed.filter((a) => a.status === 200)).toHaveLength(20);
    expect(new Set(mixed.filter((a) => a.status === 429).map((a) => a.body.errors[0].extensions.code))).toEqual(new Set(["RATE_LIMITED"]));
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    const listed = JSON.parse((await runCli(["apikey", "--list", "--json", "--store", shared.redis.url])).stdout).keys;
    expect(listed.find((k: { name: string }) => k.name === "shared").credits).toEqual({ remaining: 0 });
    expect(listed.find((k: { name: string }) => k.name === "both").credits).toEqual({ remaining: 10 });
  });

  it("a key rotated with a grace period keeps one count of credits and one of its rate limit on Redis, for both secrets", async () => {
    const store = ["--store", shared.redis.url];
    const make = async (name: string, ...flags: string[]) => {
      const old = created((await runCli(["apikey", "--create", "--name", name, "-r", "VIEWER", ...flags, "--json", ...store])).stdout).key;
      const rotated = await runCli(["apikey", "--rotate", "--name", name, "--grace", "1h", ...store]);
      expect(rotated.code, rotated.stderr).toBe(0);
      return [old, rotated.stdout.trim()];
    };
    const capped = await make("rolled capped", "--credits", "10");
    const limited = await make("rolled limited", "--rate-limit", "5/1h");
    servers.push(...(await Promise.all([0, 1].map(() => startServer({ store: shared.redis.url })))));
    for (const [secrets, allowed] of [[capped, 10], [limited, 5]] as const) {
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => gql(servers[i % 2].url, ME, { key: secrets[(i >> 1) % 2] })));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(allowed);
      expect(answers.filter((a) => a.status === 429)).toHaveLength(40 - allowed);
    }
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });
});
