// Failed-authentication throttling (lib/http/auth-throttle.ts, client-address.ts): real `serve` processes on
// port 0 (files and a real redis-server), client addresses simulated with --trust-proxy and X-Forwarded-For,
// the library's handler, and the address parsing a hostile header goes through.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, ROOT, runCli } from "../helpers/cli.ts";
import { gql, redisWithServers, type ServerProcess, startServer } from "../helpers/server.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { clientOf, parseTrustedProxies } from "../../lib/http/client-address.ts";

const ME = "{ me { name } }";
const created = (stdout: string) => (JSON.parse(stdout) as { key: string }).key;
/** A bad attempt from `from` (an X-Forwarded-For value, or none): a malformed key, or a well-formed unknown one. */
const bad = (url: string, from?: string, key = "sapi_not-a-key") => gql(url, ME, { key, headers: from ? { "x-forwarded-for": from } : {} });
const metric = async (url: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(await (await fetch(`${url}/metrics`)).text())?.[1]);

describe("a server on a files store, default limit, behind a trusted proxy", () => {
  let server: ServerProcess;
  let cleanup: () => void;
  let valid: string;
  let retired: string;
  beforeAll(async () => {
    const s = cliWithStore();
    cleanup = s.cleanup;
    valid = created((await s.cli("apikey", "--create", "--name", "good", "-r", "VIEWER", "--json")).stdout);
    retired = created((await s.cli("apikey", "--create", "--name", "gone", "-r", "VIEWER", "--json")).stdout);
    expect((await s.cli("apikey", "--delete", "--name", "gone")).code).toBe(0);
    server = await startServer({ store: s.store, args: ["--trust-proxy", "127.0.0.1"] });
  });
  afterAll(async () => {
    await server?.stop();
    cleanup?.();
  });

  it("answers 401 to 60 bad attempts a minute from one address, then 429 with Retry-After; a valid key from it still gets 200", async () => {
    const from = "203.0.113.7";
    const statuses = [];
    for (let i = 0; i < 60; i++) statuses.push((await bad(server.url, from, i % 2 ? generateSecret() : "sapi_x")).status);
    expect(statuses).toEqual(Array(60).fill(401));
    const retiredBefore = await metric(server.url, "service_api_retired_key_uses_total");

    const over = await bad(server.url, from);
    expect(over.status).toBe(429);
    expect(over.body.errors[0].extensions.code).toBe("TOO_MANY_FAILED_AUTHENTICATIONS");
    expect(over.body.errors[0].message).toMatch(/at most 60 per 1m/);
    const retry = Number(over.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    // A well-formed secret is throttled too, and its refusal is not looked up (a retired one is not reported).
    expect((await bad(server.url, from, generateSecret())).status).toBe(429);
    expect((await bad(server.url, from, retired)).status).toBe(429);
    expect(await metric(server.url, "service_api_retired_key_uses_total")).toBe(retiredBefore);
    expect(await metric(server.url, "service_api_auth_throttled_total")).toBe(3);

    const ok = await gql(server.url, ME, { key: valid, headers: { "x-forwarded-for": from } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.me.name).toBe("good");
  });

  it("counts another address apart; addresses written left of the proxy's neither evade nor frame", async () => {
    expect((await bad(server.url, "203.0.113.8")).status).toBe(401);
    // The client wrote "203.0.113.8, 10.1.1.1"; the proxy appended the real address, which is what counts.
    expect((await bad(server.url, "203.0.113.8, 10.1.1.1, 203.0.113.7")).status).toBe(429);
    expect((await bad(server.url, "203.0.113.7, 203.0.113.9")).status).toBe(401);
    // Without the header the proxy itself is the client: not the throttled address.
    expect((await bad(server.url)).status).toBe(401);
  });

  it("counts an IPv6 client by its /64, and survives garbage in X-Forwarded-For", async () => {
    for (let i = 0; i < 60; i++) expect((await bad(server.url, `2001:db8:0:7::${i.toString(16)}`)).status).toBe(401);
    expect((await bad(server.url, "2001:db8:0:7:ffff:1:2:3")).status).toBe(429);
    expect((await bad(server.url, "2001:db8:0:8::1")).status).toBe(401);
    for (const garbage of ["", ",,,", "not an ip", "999.1.1.1", "::::", "[::1", "1.2.3.4.5", "\u00e9", "a".repeat(8_000)]) {
      expect((await bad(server.url, garbage)).status, garbage.slice(0, 20)).toBe(401);
    }
  });
});

describe("without --trust-proxy", () => {
  let server: ServerProcess;
  let cleanup: () => void;
  beforeAll(async () => {
    const s = cliWithStore();
    cleanup = s.cleanup;
    server = await startServer({ store: s.store, args: ["--auth-failure-limit", "5/1m"] });
  });
  afterAll(async () => {
    await server?.stop();
    cleanup?.();
  });

  it("ignores X-Forwarded-For: a new address in it each time does not evade the count", async () => {
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push((await bad(server.url, `198.51.100.${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });
});

describe("--auth-failure-limit", () => {
  it("starts a new window once the last one ended", async () => {
    const s = cliWithStore();
    const server = await startServer({ store: s.store, args: ["--auth-failure-limit", "2/1s"] });
    try {
      const first = [];
      for (let i = 0; i < 3; i++) first.push(await bad(server.url));
      expect(first.map((a) => a.status)).toEqual([401, 401, 429]);
      expect(first[2].headers.get("retry-after")).toBe("1");
      await new Promise((r) => setTimeout(r, 1_100));
      expect((await bad(server.url)).status).toBe(401);
    } finally {
      await server.stop();
      s.cleanup();
    }
  });

  it("off turns the throttle off", async () => {
    const s = cliWithStore();
    const server = await startServer({ store: s.store, args: ["--auth-failure-limit", "off"] });
    try {
      const statuses = await Promise.all(Array.from({ length: 80 }, () => bad(server.url).then((a) => a.status)));
      expect(new Set(statuses)).toEqual(new Set([401]));
    } finally {
      await server.stop();
      s.cleanup();
    }
  });

  it("exits 2 naming the valid form for a bad limit or proxy list, from a flag or the environment", async () => {
    const s = cliWithStore();
    try {
      const cases: [string[], Record<string, string>, RegExp][] = [
        [["--auth-failure-limit", "sixty"], {}, /60\/1m .*or off/],
        [["--auth-failure-limit", "60"], {}, /60\/1m .*or off/],
        [["--auth-failure-limit", "0/1m"], {}, /1 to 1,000,000.*60\/1m/],
        [["--auth-failure-limit", "5/1ms"], {}, /60\/1m/],
        [["--auth-failure-limit", "5/1s,9/1s"], {}, /"5\/1s,9\/1s" \(two limits for the same window \(1s\)\): use <failures>/],
        [["--auth-failure-limit", "1/1s,1/2s,1/3s,1/4s,1/5s,1/6s"], {}, /\(at most 5 limits\): use <failures>/],
        [[], { SERVICE_API_AUTH_FAILURE_LIMIT: "lots" }, /60\/1m .*or off/],
        [["--trust-proxy", "10.0.0.0/33"], {}, /CIDR blocks.*10\.0\.0\.0\/8/],
        [["--trust-proxy", "proxy.internal"], {}, /CIDR blocks/],
        [[], { SERVICE_API_TRUST_PROXY: "127.0.0.1,fd00::/129" }, /Invalid --trust-proxy entry "fd00::\/129"/],
      ];
      for (const [args, env, message] of cases) {
        const result = await runCli(["serve", "--port", "0", "--store", s.store, ...args], { env });
        expect(result.code, `${args.join(" ")} ${JSON.stringify(env)}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toMatch(message);
        expect(result.stderr).not.toMatch(/\n\s+at /);
      }
    } finally {
      s.cleanup();
    }
  });
});

describe("two servers on one redis-server", () => {
  const shared = redisWithServers();
  const servers = shared.servers;

  it("count an address's failures together; with Redis down a malformed key still gets 401", async () => {
    const made = await runCli(["apikey", "--create", "--name", "good", "-r", "VIEWER", "--json", "--store", shared.redis.url]);
    expect(made.code, made.stderr).toBe(0);
    servers.push(...(await Promise.all([0, 1].map(() => startServer({ store: shared.redis.url, args: ["--trust-proxy", "127.0.0.1/8"] })))));
    const from = "192.0.2.44";
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => bad(servers[i % 2].url, from, i % 3 ? "sapi_x" : generateSecret())));
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(401));
    expect((await bad(servers[0].url, from)).status).toBe(429);
    expect((await bad(servers[1].url, from)).status).toBe(429);
    expect((await gql(servers[1].url, ME, { key: created(made.stdout), headers: { "x-forwarded-for": from } })).status).toBe(200);

    await shared.redis.stop();
    // Counting needs Redis; the refusal stands without it, as it would without the throttle.
    expect((await bad(servers[0].url, "192.0.2.45")).status).toBe(401);
    expect((await bad(servers[0].url, "192.0.2.45", generateSecret())).status).toBe(503);
  });
});

describe("the library's handler", () => {
  it("takes authFailureLimit and trustProxy, and refuses bad ones when created", async () => {
    const store = createKeyStore();
    const secret = (await store.create({ name: "good", roles: ["VIEWER"], permissions: [] })).key;
    const handler = createHandler({ store, authFailureLimit: "2/1m", trustProxy: ["10.0.0.0/8"], onError: () => {} });
    const ask = (key: string, forwardedFor: string) =>
      handler(
        new Request("http://x/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "x-forwarded-for": forwardedFor },
          body: JSON.stringify({ query: ME }),
        }),
        { remoteAddr: { hostname: "10.0.0.1" } },
      );
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await ask("sapi_x", "192.0.2.1")).status);
    expect(statuses).toEqual([401, 401, 429]);
    expect((await ask(secret, "192.0.2.1")).status).toBe(200);
    expect((await ask("sapi_x", "192.0.2.2")).status).toBe(401);
    // A header far larger than Node would let through is walked only from its right end.
    const started = performance.now();
    expect((await ask("sapi_x", `${"9.9.9.9, ".repeat(20_000)}192.0.2.1`)).status).toBe(429);
    expect(performance.now() - started).toBeLessThan(500);
    await handler.close?.();

    expect(() => createHandler({ store, authFailureLimit: "often" })).toThrow(/60\/1m/);
    expect(() => createHandler({ store, trustProxy: "10.0.0.0/8, nonsense" })).toThrow(/Invalid --trust-proxy entry "nonsense"/);
  });
});

describe("the in-process count's memory", () => {
  /**
   * Fills the throttle of a child process (files store: counted in process) with `addresses` clients failing
   * `each` times, and measures what its heap and typed arrays grew by, after full collections. (The vitest
   * worker's own heap moves by hundreds of KB on its own; a child doing nothing else does not.)
   */
  const fill = (limit: string, addresses: number, each: number, v6: boolean) => {
    const module = pathToFileURL(join(ROOT, "dist/lib/http/auth-throttle.js")).href;
    const script = `const { createAuthThrottle, MAX_CLIENTS } = await import(${JSON.stringify(module)});
      const used = () => { for (let i = 0; i < 4; i++) gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const throttle = createAuthThrottle({ store: {}, authFailureLimit: ${JSON.stringify(limit)} });
      const headers = new Headers(), refused = { status: 401 }, statuses = {};
      const address = (i) => ${v6} ? \`2001:db8:\${(i >>> 16).toString(16)}:\${(i & 0xffff).toString(16)}::1\` : \`10.\${(i >> 16) & 255}.\${(i >> 8) & 255}.\${i & 255}\`;
      const ask = (i) => throttle({ remoteAddress: address(i), headers }, () => refused).status;
      const before = used();
      for (let i = 0; i < ${addresses}; i++) for (let k = 0; k < ${each}; k++) { const s = ask(i); statuses[s] = (statuses[s] ?? 0) + 1; }
      const grew = used() - before;
      // The latest address is still counted; the first ones were forgotten to stay within MAX_CLIENTS.
      process.stdout.write(JSON.stringify({ max: MAX_CLIENTS, grew, statuses, latest: ask(${addresses - 1}), first: ask(0) }));`;
    const child = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
    expect(child.stderr).toBe("");
    return JSON.parse(child.stdout) as { max: number; grew: number; statuses: Record<string, number>; latest: number; first: number };
  };

  it("holds 110,000 failing addresses in under 20 MB (docs/service.md), forgetting the oldest past 100,000", () => {
    const one = fill("60/1m", 110_000, 2, false);
    expect(one.max).toBe(100_000);
    expect(one.statuses).toEqual({ 401: 220_000 });
    expect(one.grew).toBeLessThan(20e6);
    // Throttled IPv6 clients under five windows: the most a server keeps per address.
    const five = fill("1/1s,2/2s,3/3s,4/4s,1/1m", 110_000, 1, true);
    expect(five.statuses).toEqual({ 401: 110_000 });
    expect([five.latest, five.first]).toEqual([429, 401]);
    expect(five.grew).toBeLessThan(20e6);
  }, 120_000);
});

describe("clientOf", () => {
  const trusted = parseTrustedProxies("10.0.0.0/8, fd00::/8, 127.0.0.1");
  it("takes the right-most untrusted address, only from a trusted socket", () => {
    expect(clientOf("10.0.0.1", "1.1.1.1, 2.2.2.2, 10.9.9.9", trusted)).toBe("2.2.2.2");
    expect(clientOf("192.0.2.1", "2.2.2.2", trusted)).toBe("192.0.2.1");
    expect(clientOf("::ffff:127.0.0.1", "::ffff:203.0.113.1", trusted)).toBe("203.0.113.1");
    expect(clientOf("fd00::1", "[2001:db8::1]:443, 10.0.0.2", trusted)).toBe("2001:db8:0:0::/64");
    expect(clientOf("10.0.0.1", "10.0.0.3, 10.0.0.2", trusted)).toBe("10.0.0.3"); // all trusted: the left-most
    expect(clientOf("10.0.0.1", "1.1.1.1, junk, 10.0.0.2", trusted)).toBe("10.0.0.2"); // junk: the proxy that passed it
    expect(clientOf("10.0.0.1", "1.2.3.4:5678", trusted)).toBe("1.2.3.4");
    expect(clientOf("fe80::1%eth0", null, null)).toBe("fe80:0:0:0::/64");
    expect(clientOf(undefined, "1.1.1.1", trusted)).toBe("unknown");
    expect(clientOf("10.0.0.1", `1.1.1.1,${" 10.0.0.5,".repeat(100)} 10.0.0.6`, trusted)).toMatch(/^10\.0\.0\.[56]$/); // stops after 32 hops
  });
});
