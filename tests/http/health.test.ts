// Health and metrics as an orchestrator and a Prometheus server see them: /readyz follows the store
// (a private redis-server stopped and restarted), /metrics moves with the requests and is readable
// without a key only from allowed addresses.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, runCli } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, startServer } from "../helpers/server.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { createMetrics } from "../../lib/http/metrics.ts";
import { addressMatcher } from "../../lib/http/ops-routes.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";

const ME = "{ me { id name } }";

describe("/readyz with Redis", () => {
  let redis: RedisServer;
  beforeAll(async () => void (redis = await startRedis({ persist: true })));
  afterAll(async () => await redis?.destroy());

  it("is 503 within a bounded time while Redis is down and 200 again once it is back; /healthz stays 200", async () => {
    const server = await startServer({ store: `${redis.url}?prefix=readyz` });
    const probe = async (path: string) => {
      const started = Date.now();
      const response = await fetch(`${server.url}${path}`, { signal: AbortSignal.timeout(10_000) });
      return { status: response.status, body: await response.json(), ms: Date.now() - started };
    };
    try {
      expect(await probe("/readyz")).toMatchObject({ status: 200, body: { status: "ok" } });
      // What the store runs on: one Redis, the address in use, no replicas, an append-only file, nothing to warn of.
      expect((await probe("/readyz")).body.store).toEqual({ mode: "single", master: `127.0.0.1:${redis.port}`, replicas: 0, aof: true, warnings: [] });
      await redis.stop();
      const down = await probe("/readyz");
      expect(down).toMatchObject({ status: 503, body: { status: "unavailable" } });
      expect(down.ms).toBeLessThan(3_000);
      expect((await probe("/healthz")).status).toBe(200);
      await redis.start();
      let status = 0;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && status !== 200;) {
        status = (await probe("/readyz")).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 40_000);

  it("on a Redis without an append-only file: serve warns at start-up (a JSON line with LOG_FORMAT=json) and /readyz says so", async () => {
    const bare = await startRedis();
    const server = await startServer({ store: `${bare.url}?prefix=aof`, env: { LOG_FORMAT: "json" } });
    try {
      const lines = server.stderr().trim().split("\n").map((line) => JSON.parse(line));
      const warning = lines.find((line) => line.level === "warn");
      expect(warning?.msg).toMatch(/^AOF is off: a key deleted, disabled or rotated after the last RDB snapshot comes back when Redis restarts/);
      expect(lines.find((line) => /^Redis: one Redis, 127\.0\.0\.1:\d+, 0 replicas$/.test(line.msg))).toBeTruthy();
      const ready = await (await fetch(`${server.url}/readyz`)).json();
      expect(ready).toMatchObject({ status: "ok", store: { mode: "single", aof: false, warnings: [warning.msg] } });
    } finally {
      await server.stop();
      await bare.destroy();
    }
  }, 40_000);
});

describe("/metrics", () => {
  let env: ReturnType<typeof cliWithStore>;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    env = cliWithStore();
    for (const [name, grant] of [["scraper", ["--permissions", "INFO:READ_ANY"]], ["viewer", ["--roles", "GUEST"]]] as const) {
      const created = await env.cli("apikey", "--create", "--name", name, ...grant, "--json");
      expect(created.code, created.stderr).toBe(0);
      keys[name] = JSON.parse(created.stdout).key;
    }
  });
  afterAll(() => env.cleanup());

  const value = (text: string, series: string) => {
    const line = text.split("\n").find((l) => l.startsWith(series + " "));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  };

  it("counts requests by operation and status, failed authentications by reason, durations, keys and the process", async () => {
    const server = await startServer({ store: env.store });
    try {
      const scrape = async () => {
        const response = await fetch(`${server.url}/metrics`);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
        return response.text();
      };
      const before = await scrape();
      expect(value(before, 'service_api_requests_total{operation="query",status="200"}')).toBe(0);
      expect(value(before, "service_api_keys")).toBe(2);
      for (let i = 0; i < 3; i++) expect((await gql(server.url, ME, { key: keys.viewer })).status).toBe(200);
      await gql(server.url, ME);
      await gql(server.url, ME, { key: "sapi_nope" });
      const after = await scrape();
      expect(value(after, 'service_api_requests_total{operation="query",status="200"}')).toBe(3);
      expect(value(after, 'service_api_requests_total{operation="none",status="401"}')).toBe(2);
      expect(value(after, 'service_api_auth_failures_total{reason="missing"}')).toBe(1);
      expect(value(after, 'service_api_auth_failures_total{reason="malformed"}')).toBe(1);
      expect(value(after, 'service_api_auth_failures_total{reason="unknown"}')).toBe(0);
      expect(value(after, 'service_api_request_duration_seconds_count{operation="query"}')).toBe(3);
      expect(after).toContain("# TYPE service_api_store_errors_total counter");
      expect(after).toContain("process_cpu_user_seconds_total");
      expect(after).toContain("nodejs_eventloop_lag_seconds");
      expect(after).not.toContain(keys.viewer);
    } finally {
      await server.stop();
    }
  });

  it("from an address outside --metrics-allow: 403 without a key or with a key lacking INFO:READ_ANY, 200 with one", async () => {
    const server = await startServer({ store: env.store, args: ["--metrics-allow", "10.0.0.0/8"] });
    try {
      const get = (key?: string) => fetch(`${server.url}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
      const bare = await get();
      expect(bare.status).toBe(403);
      expect(await bare.json()).toMatchObject({ errors: [{ extensions: { code: "FORBIDDEN" } }] });
      expect((await get(keys.viewer)).status).toBe(403);
      expect((await get("sapi_nope")).status).toBe(401);
      const allowed = await get(keys.scraper);
      expect(allowed.status).toBe(200);
      expect(await allowed.text()).toContain("service_api_requests_total");
    } finally {
      await server.stop();
    }
  });

  it("the fetch handler takes the client address as Deno.serve gives it", async () => {
    const store = createKeyStore();
    const { key } = await store.create({ name: "scraper", roles: [], permissions: [{ resource: "INFO", actions: ["READ_ANY"] }] });
    const metrics = createMetrics({ store, processMetrics: false });
    const handler = createHandler({ store, observer: metrics, metrics });
    const get = (hostname: string, secret?: string) =>
      handler(new Request("http://x/metrics", { headers: secret ? { authorization: `Bearer ${secret}` } : {} }), { remoteAddr: { hostname } });
    expect((await get("127.0.0.1")).status).toBe(200);
    expect((await get("::1")).status).toBe(200);
    expect((await get("192.0.2.7")).status).toBe(403);
    expect((await get("192.0.2.7", key)).status).toBe(200);
    const mutation = await handler(new Request("http://x/graphql", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: 'mutation { apiKey { delete(input: { ids: [] }) } }' }),
    }));
    expect(mutation.status).toBe(200);
    const text = await (await get("127.0.0.1")).text();
    expect(text).toMatch(/service_api_requests_total\{operation="mutation",status="200"\} 1\n/);
    expect((await handler(new Request("http://x/metrics"))).status).toBe(403); // address unknown: not allowed
    // Without a metrics option there is no /metrics at all.
    expect((await createHandler({ store })(new Request("http://x/metrics"), { remoteAddr: { hostname: "127.0.0.1" } })).status).toBe(404);
    await store.close();
  });

  it("a key's scrapes from outside the allow-list spend its credits and count against its rate limits, like its /graphql requests", async () => {
    const store = createKeyStore();
    const info = [{ resource: "INFO" as const, actions: ["READ_ANY" as const] }];
    const capped = await store.create({ name: "capped", roles: [], permissions: info, credits: { remaining: 2 } });
    const limited = await store.create({ name: "limited", roles: [], permissions: info, rateLimits: [{ limit: 2, durationMs: 3_600_000 }] });
    const metrics = createMetrics({ store, processMetrics: false });
    const handler = createHandler({ store, observer: metrics, metrics });
    const remote = { remoteAddr: { hostname: "192.0.2.7" } };
    const scrape = (secret: string) => handler(new Request("http://x/metrics", { headers: { authorization: `Bearer ${secret}` } }), remote);
    const query = (secret: string) =>
      handler(new Request("http://x/graphql", {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "{ me { name } }" }),
      }), remote);
    const code = async (response: Response) => (await response.json()).errors[0].extensions.code;

    // One budget for both routes: a request and a scrape spend the 2 credits, then both are refused.
    expect((await query(capped.key)).status).toBe(200);
    expect((await scrape(capped.key)).status).toBe(200);
    const spent = await scrape(capped.key);
    expect(spent.status).toBe(429);
    expect(await code(spent)).toBe("USAGE_EXCEEDED");
    expect((await query(capped.key)).status).toBe(429);

    const first = await scrape(limited.key);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe("2;w=3600");
    expect(first.headers.get("ratelimit")).toMatch(/^limit=2, remaining=1, reset=\d+$/);
    expect((await query(limited.key)).status).toBe(200);
    const refused = await scrape(limited.key);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("ratelimit")).toMatch(/^limit=2, remaining=0, reset=\d+$/);
    expect(await code(refused)).toBe("RATE_LIMITED");
    await store.close();
  });

  it("a key lacking INFO:READ_ANY gets 403 on /metrics without spending its credits or rate limit", async () => {
    const store = createKeyStore();
    const guest = await store.create({ name: "guest", roles: ["GUEST"], credits: { remaining: 3 }, rateLimits: [{ limit: 3, durationMs: 3_600_000 }] });
    const metrics = createMetrics({ store, processMetrics: false });
    const handler = createHandler({ store, observer: metrics, metrics });
    const remote = { remoteAddr: { hostname: "192.0.2.7" } };
    const bearer = { authorization: `Bearer ${guest.key}` };
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await handler(new Request("http://x/metrics", { headers: bearer }), remote)).status);
    expect(statuses).toEqual([403, 403, 403, 403]);
    const me = await handler(new Request("http://x/graphql", {
      method: "POST",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ me { name } }" }),
    }), remote);
    expect(me.status).toBe(200);
    expect(me.headers.get("ratelimit")).toMatch(/^limit=3, remaining=2, reset=\d+$/);
    await store.close();
  });

  it("the allow-list matches exact addresses, IPv4-mapped ones and IPv4 CIDR blocks, and refuses typos", async () => {
    const allowed = addressMatcher(["127.0.0.1", "::1", "10.1.0.0/16"]);
    expect(["127.0.0.1", "::ffff:127.0.0.1", "::1", "10.1.200.3"].map(allowed)).toEqual([true, true, true, true]);
    expect(["127.0.0.2", "10.2.0.1", "fe80::1", undefined].map(allowed)).toEqual([false, false, false, false]);
    expect(() => addressMatcher(["localhost"])).toThrow(/Invalid --metrics-allow entry 'localhost'/);
    const bad = await runCli(["serve", "--port", "0", "--store", "memory:", "--metrics-allow", "10.0.0.0/40"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("Invalid --metrics-allow entry '10.0.0.0/40'");
  });
});
