// POST /v2/keys.verifyKey (lib/http/unkey-verify.ts): Unkey's own SDK (@unkey/api) pointed at a served handler
// on a memory store, as a service written for Unkey would call it; then hostile bodies over plain fetch.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Unkey } from "@unkey/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { input } from "../helpers/keys.ts";
import { ROOT } from "../helpers/cli.ts";

let clock = Date.now();
const store = createKeyStore({ now: () => clock });
let server: RunningServer;
let admin: string;
let viewerCaller: string;
let unkey: Unkey;

beforeAll(async () => {
  admin = (await store.create(input("verifier", { roles: ["ADMIN"] }))).key;
  viewerCaller = (await store.create(input("viewer"))).key;
  server = await serve({ store, port: 0, recordLastUse: false, authFailureLimit: "off", onError: () => {} });
  unkey = new Unkey({ rootKey: admin, serverURL: server.url, retryConfig: { strategy: "none" } });
});
afterAll(async () => {
  await server?.close();
});

const post = async (body: unknown, key: string | null = admin, method = "POST") => {
  const response = await fetch(`${server.url}/v2/keys.verifyKey`, {
    method,
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: method === "POST" ? (typeof body === "string" ? body : JSON.stringify(body)) : undefined,
  });
  return { status: response.status, json: await response.json() };
};

describe("Unkey's SDK against /v2/keys.verifyKey", () => {
  it("says VALID with the key's id, name, roles, credits and rate limits, and spends one credit", async () => {
    const { key, id } = await store.create(input("svc", { roles: ["VIEWER"], credits: { remaining: 5 }, rateLimits: [{ limit: 10, durationMs: 60_000 }] }));
    const { meta, data } = await unkey.keys.verifyKey({ key, permissions: "DOCKER:READ_ANY" });
    expect(meta.requestId).toMatch(/^req_/);
    expect(data).toMatchObject({ valid: true, code: "VALID", keyId: id, name: "svc", enabled: true, credits: 4, roles: ["VIEWER"] });
    expect(data.permissions).toContain("DOCKER:READ_ANY");
    expect(data.ratelimits).toEqual([expect.objectContaining({ name: "10/1m", limit: 10, duration: 60_000, remaining: 9, exceeded: false, autoApply: true })]);
    expect(data.ratelimits![0].reset).toBeGreaterThan(Date.now());
    expect((await unkey.keys.verifyKey({ key })).data.credits).toBe(3);
  });

  it("evaluates the permission query (AND, OR, parentheses, roles counting); a key failing it is INSUFFICIENT_PERMISSIONS at no cost", async () => {
    const { key } = await store.create(input("reader", { roles: ["VIEWER"], credits: { remaining: 10 } }));
    const code = async (permissions: string) => (await unkey.keys.verifyKey({ key, permissions })).data.code;
    expect(await code("docker:read_any and vms:read_any")).toBe("VALID");
    expect(await code("API_KEY:READ_ANY OR VMS:READ_ANY")).toBe("VALID");
    expect(await code("DOCKER:READ_ANY AND (API_KEY:READ_ANY OR VMS:UPDATE_ANY)")).toBe("INSUFFICIENT_PERMISSIONS");
    expect(await code("API_KEY:READ_ANY")).toBe("INSUFFICIENT_PERMISSIONS");
    const after = (await unkey.keys.verifyKey({ key, permissions: "API_KEY:CREATE_ANY" })).data;
    expect(after).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS", credits: 8, name: "reader" });
  });

  it("says NOT_FOUND, DISABLED, EXPIRED, RATE_LIMITED and USAGE_EXCEEDED", async () => {
    const data = async (key: string) => (await unkey.keys.verifyKey({ key })).data;
    expect(await data(generateSecret())).toEqual({ valid: false, code: "NOT_FOUND" });
    expect(await data("not even a key")).toEqual({ valid: false, code: "NOT_FOUND" });
    const off = await store.create(input("off"));
    await store.update(off.id, { disabled: true });
    expect(await data(off.key)).toMatchObject({ valid: false, code: "DISABLED", enabled: false, keyId: off.id });
    const brief = await store.create(input("brief", { expiresAt: new Date(clock + 60_000).toISOString() }));
    const limited = await store.create(input("limited", { rateLimits: [{ limit: 1, durationMs: 3_600_000 }] }));
    const capped = await store.create(input("capped", { credits: { remaining: 1 } }));
    expect(await data(limited.key)).toMatchObject({ code: "VALID" });
    expect(await data(limited.key)).toMatchObject({ valid: false, code: "RATE_LIMITED", ratelimits: [expect.objectContaining({ remaining: 0, exceeded: true })] });
    expect(await data(capped.key)).toMatchObject({ code: "VALID", credits: 0 });
    expect(await data(capped.key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
    clock += 120_000;
    try {
      expect(await data(brief.key)).toMatchObject({ valid: false, code: "EXPIRED", keyId: brief.id, expires: Date.parse(new Date(clock - 60_000).toISOString()) });
    } finally {
      clock -= 120_000;
    }
  });

  it("says FORBIDDEN for a key with an IP allow-list: the route is not told the client's address, so it fails closed", async () => {
    const fenced = await store.create(input("fenced", { allowFrom: ["203.0.113.0/24"] }));
    expect((await unkey.keys.verifyKey({ key: fenced.key })).data).toMatchObject({ valid: false, code: "FORBIDDEN", keyId: fenced.id });
  });

  it("gives expires for a secret that stops at a known time: a rotation's old one, an overwrite's key in grace, the earliest end", async () => {
    const data = async (key: string) => (await unkey.keys.verifyKey({ key })).data;
    const expiresAt = new Date(clock + 3_600_000).toISOString();
    const rotated = await store.create(input("rotated", { expiresAt }));
    const renewed = await store.rotate(rotated.id, { graceMs: 60_000 });
    expect(await data(rotated.key)).toMatchObject({ code: "VALID", expires: Date.parse(renewed.retiringUntil!) });
    expect(await data(renewed.key)).toMatchObject({ code: "VALID", expires: Date.parse(expiresAt) });
    const replaced = await store.create(input("replaced"));
    await store.create(input("replaced"), { overwrite: true, graceMs: 120_000 });
    const graceUntil = (await store.get(replaced.id))!.graceUntil!;
    expect(await data(replaced.key)).toMatchObject({ code: "VALID", expires: Date.parse(graceUntil) });
    // A key that expires before its grace period ends: its expiry.
    const brief = await store.create(input("brief grace", { expiresAt: new Date(clock + 30_000).toISOString() }));
    await store.rotate(brief.id, { graceMs: 120_000 });
    expect((await data(brief.key)).expires).toBe(Date.parse(new Date(clock + 30_000).toISOString()));
  });

  it("refuses a caller without a valid key (401) or without API_KEY:READ_ANY (403), in Unkey's error shape", async () => {
    const { key } = await store.create(input("anyone"));
    const anonymous = new Unkey({ rootKey: generateSecret(), serverURL: server.url, retryConfig: { strategy: "none" } });
    await expect(anonymous.keys.verifyKey({ key })).rejects.toMatchObject({ statusCode: 401 });
    const viewer = new Unkey({ rootKey: viewerCaller, serverURL: server.url, retryConfig: { strategy: "none" } });
    await expect(viewer.keys.verifyKey({ key })).rejects.toMatchObject({ statusCode: 403 });
    const refused = await post({ key }, null);
    expect(refused.status).toBe(401);
    expect(refused.json).toMatchObject({ meta: { requestId: expect.stringMatching(/^req_/) }, error: { status: 401, title: "Unauthorized", detail: expect.stringMatching(/Missing API key/) } });
  });
});

describe("hostile requests to /v2/keys.verifyKey", () => {
  it("answers 400 naming the form for a bad query, an unknown resource, deep nesting or a bad body, never echoing a secret", async () => {
    const { key } = await store.create(input("target"));
    const detail = async (body: unknown) => {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      return answer.json.error.detail as string;
    };
    expect(await detail({ key, permissions: "DOCKER:READ_ANY AND" })).toMatch(/Invalid permission query: .*use RESOURCE:ACTION names joined by AND and OR/);
    expect(await detail({ key, permissions: "(DOCKER:READ_ANY" })).toMatch(/a '\(' is not closed/);
    expect(await detail({ key, permissions: "DOCKER:READ_ANY VMS:READ_ANY" })).toMatch(/join with AND or OR/);
    expect(await detail({ key, permissions: "SPACESHIP:LAUNCH" })).toMatch(/Unknown permission resource "SPACESHIP"/);
    expect(await detail({ key, permissions: "(".repeat(5_000) + "ME:READ_ANY" + ")".repeat(5_000) })).toMatch(/longer than 1000 characters/);
    expect(await detail({ key, permissions: "(".repeat(100) + "ME:READ_ANY" + ")".repeat(100) })).toMatch(/nest deeper than 16/);
    expect(await detail({ key, permissions: `${key}` })).not.toContain(key.slice(5));
    expect(await detail({ key: 42 })).toMatch(/"key"/);
    expect(await detail("{not json")).toMatch(/not valid JSON/);
    expect(await detail({ key, credits: { cost: 5 } })).toMatch(/credits.cost/);
    expect(await detail({ key, ratelimits: [{ name: "requests" }] })).toMatch(/ratelimits/);
    expect((await post({ key }, admin, "GET")).status).toBe(405);
    const huge = await fetch(`${server.url}/v2/keys.verifyKey`, { method: "POST", headers: { authorization: `Bearer ${admin}` }, body: "x".repeat(2 << 20) });
    expect(huge.status).toBe(413);
  });
});

describe("the OpenAPI document", () => {
  it("is served at /openapi.json, is docs/openapi.json (the version aside), and lists every status the routes answer", async () => {
    const response = await fetch(`${server.url}/openapi.json`);
    expect(response.status).toBe(200);
    const served = await response.json();
    const kept = JSON.parse(readFileSync(join(ROOT, "docs/openapi.json"), "utf8"));
    expect({ ...served, info: { ...served.info, version: "" } }, "docs/openapi.json is stale: write the served document into it").toEqual({ ...kept, info: { ...kept.info, version: "" } });
    expect(served.openapi).toBe("3.1.0");
    expect(Object.keys(served.paths["/auth"].get.responses)).toEqual(["200", "400", "401", "403", "429", "503"]);
    expect(Object.keys(served.paths["/v2/keys.verifyKey"].post.responses)).toEqual(["200", "400", "401", "403", "405", "413", "429", "503"]);
    expect(served.components.schemas.VerifyKeyResponse.properties.data.properties.code.enum).toEqual(
      ["VALID", "NOT_FOUND", "FORBIDDEN", "INSUFFICIENT_PERMISSIONS", "USAGE_EXCEEDED", "RATE_LIMITED", "DISABLED", "EXPIRED"],
    );
  });
});
