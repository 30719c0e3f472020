// Keys' IP allow-lists (lib/core/allow-from.ts, checked in authenticate.ts's key gate): real `serve` processes
// on port 0, one taking the socket's address and one behind a trusted proxy (--trust-proxy, X-Forwarded-For),
// on /graphql and /metrics, and verifyApiKey judging the address its caller passes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, runCli } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const ME = "{ me { name } }";
const created = (stdout: string) => (JSON.parse(stdout) as { key: string }).key;
const from = (forwardedFor?: string) => (forwardedFor ? { "x-forwarded-for": forwardedFor } : {});

describe("allow-lists on a running server", () => {
  const servers: ServerProcess[] = [];
  let direct: ServerProcess;
  let proxied: ServerProcess;
  let cleanup: () => void;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    const s = cliWithStore();
    cleanup = s.cleanup;
    const make = async (name: string, ...args: string[]) => {
      const made = await s.cli("apikey", "--create", "--name", name, "--json", ...args);
      expect(made.code, made.stderr).toBe(0);
      keys[name] = created(made.stdout);
    };
    await make("loopback", "-r", "VIEWER", "--allow-from", "127.0.0.1");
    await make("mapped", "-r", "VIEWER", "--allow-from", "::ffff:127.0.0.0/120");
    await make("office", "-r", "VIEWER", "--allow-from", "203.0.113.0/24,2001:db8::/32");
    await make("everywhere", "-r", "VIEWER", "--allow-from", "0.0.0.0/0");
    await make("verifier", "-r", "ADMIN");
    direct = await startServer({ store: s.store, args: ["--metrics-allow", "192.0.2.250"] });
    servers.push(direct);
    proxied = await startServer({ store: s.store, args: ["--trust-proxy", "127.0.0.1", "--metrics-allow", "192.0.2.250"] });
    servers.push(proxied);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    cleanup?.();
  });

  it("admits a key from inside its list (IPv4-mapped entries and /0 too) and answers 403 IP_NOT_ALLOWED from outside", async () => {
    for (const name of ["loopback", "mapped", "everywhere"]) expect((await gql(direct.url, ME, { key: keys[name] })).status, name).toBe(200);
    const refused = await gql(direct.url, ME, { key: keys.office });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errors: [{ message: expect.stringMatching(/^This API key is not allowed from 127\.0\.0\.1: the address is outside its IP allow-list/), extensions: { code: "IP_NOT_ALLOWED" } }],
    });
    expect(refused.headers.get("www-authenticate")).toBeNull();
  });

  it("ignores X-Forwarded-For without --trust-proxy", async () => {
    expect((await gql(direct.url, ME, { key: keys.office, headers: from("203.0.113.5") })).status).toBe(403);
    expect((await gql(direct.url, ME, { key: keys.loopback, headers: from("198.51.100.1") })).status).toBe(200);
  });

  it("judges the forwarded client behind a trusted proxy: the right-most address the proxy did not write is it", async () => {
    expect((await gql(proxied.url, ME, { key: keys.office, headers: from("203.0.113.5") })).status).toBe(200);
    expect((await gql(proxied.url, ME, { key: keys.office, headers: from("2001:db8::9") })).status).toBe(200);
    // The client can write anything left of what the proxy appended: only the right-most entry counts.
    const spoofed = await gql(proxied.url, ME, { key: keys.office, headers: from("203.0.113.5, 198.51.100.1") });
    expect([spoofed.status, spoofed.body.errors[0].message]).toEqual([403, expect.stringContaining("not allowed from 198.51.100.1:")]);
    expect((await gql(proxied.url, ME, { key: keys.loopback, headers: from("198.51.100.1") })).status).toBe(403);
    expect((await gql(proxied.url, ME, { key: keys.loopback })).status).toBe(200); // the proxy's own request
  });

  it("holds on /metrics, which takes keys through the same gate", async () => {
    const scrape = (url: string, key: string, headers: Record<string, string> = {}) =>
      fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${key}`, ...headers }, signal: AbortSignal.timeout(10_000) });
    expect((await scrape(direct.url, keys.loopback)).status).toBe(200);
    const refused = await scrape(direct.url, keys.office);
    expect(refused.status).toBe(403);
    expect((await refused.json()).errors[0].extensions.code).toBe("IP_NOT_ALLOWED");
    expect((await scrape(proxied.url, keys.office, from("203.0.113.5"))).status).toBe(200);
  });

  it("verifyApiKey judges the address it is given, and refuses a key with a list when none is given", async () => {
    const query = "query ($key: String!, $address: String) { verifyApiKey(key: $key, address: $address) { valid code name } }";
    const verify = async (key: string, address?: string) => {
      const answer = await gql(direct.url, query, { key: keys.verifier, variables: { key, address } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.data.verifyApiKey;
    };
    expect(await verify(keys.office, "203.0.113.77")).toEqual({ valid: true, code: "VALID", name: "office" });
    expect(await verify(keys.office, "::ffff:203.0.113.77")).toEqual({ valid: true, code: "VALID", name: "office" });
    expect(await verify(keys.office, "198.51.100.1")).toEqual({ valid: false, code: "IP_NOT_ALLOWED", name: "office" });
    expect(await verify(keys.office)).toEqual({ valid: false, code: "IP_NOT_ALLOWED", name: "office" });
    expect(await verify(keys.office, "not an address")).toEqual({ valid: false, code: "IP_NOT_ALLOWED", name: "office" });
    expect(await verify(keys.verifier)).toEqual({ valid: true, code: "VALID", name: "verifier" }); // no list: no address needed
  });

  it("GraphQL sets, shows and removes allowFrom, through the remote client (--url) too, and refuses a bad entry", async () => {
    const run = (...args: string[]) => runCli(["apikey", ...args, "--url", direct.url], { env: { SERVICE_API_KEY: keys.verifier, SERVICE_API_STORE: undefined } });
    const listed = async () => JSON.parse((await run("--list", "--json")).stdout).keys.find((k: { name: string }) => k.name === "remote");
    const made = await run("--create", "--name", "remote", "-r", "GUEST", "--allow-from", "192.0.2.1,2001:DB8::1", "--json");
    expect(made.code, made.stderr).toBe(0);
    expect((await listed()).allowFrom).toEqual(["192.0.2.1/32", "2001:db8::1/128"]);
    expect((await gql(direct.url, ME, { key: created(made.stdout) })).status).toBe(403);
    expect((await run("--update", "--name", "remote", "--allow-from", "any")).code).toBe(0);
    expect((await listed()).allowFrom).toBeUndefined();
    expect((await gql(direct.url, ME, { key: created(made.stdout) })).status).toBe(200);
    const { id } = await listed();
    const update = "mutation ($id: PrefixedID!, $list: [String!]) { apiKey { update(input: { id: $id, allowFrom: $list }) { allowFrom } } }";
    const set = await gql(direct.url, update, { key: keys.verifier, variables: { id, list: ["10.0.0.0/8"] } });
    expect(set.body.data.apiKey.update.allowFrom).toEqual(["10.0.0.0/8"]);
    const bad = await gql(direct.url, update, { key: keys.verifier, variables: { id, list: ["10.0.0.0/8", "10.0.0.0/40"] } });
    expect(bad.body.errors[0]).toMatchObject({ message: expect.stringContaining('"10.0.0.0/40" has a prefix length outside 0 to 32'), extensions: { code: "INVALID_INPUT" } });
  });

  it("counts refusals by address in the metrics, as reason address", async () => {
    const counted = async () => {
      const text = await (await fetch(`${direct.url}/metrics`, { headers: { authorization: `Bearer ${keys.loopback}` } })).text();
      return Number(/^service_api_auth_failures_total\{reason="address"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await counted();
    for (let i = 0; i < 3; i++) expect((await gql(direct.url, ME, { key: keys.office })).status).toBe(403);
    expect(await counted()).toBeGreaterThanOrEqual(before + 3);
  });
});
