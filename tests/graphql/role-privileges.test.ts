// Who may do what, through a real `service-api serve` process over keys made by the real CLI:
// VIEWER reads the system but not keys and changes nothing; a key holding only API_KEY:CREATE_ANY
// mints keys with a subset of its rights and nothing more; GUEST sees `me` and nothing else.
// Every refusal is checked against the store too: a forbidden mutation changes nothing.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const tmp = tempDir();
const store = join(tmp.dir, "keys");
let server: ServerProcess;
type Key = { key: string; id: string; name: string };
const keys: Record<"admin" | "viewer" | "guest" | "creator" | "updater", Key> = {} as never;

async function create(name: string, ...flags: string[]): Promise<Key> {
  const result = await runCli(["apikey", "--create", "--name", name, ...flags, "--json", "--store", store]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

async function storedNames(): Promise<string[]> {
  const result = await runCli(["apikey", "--list", "--json", "--store", store]);
  return (JSON.parse(result.stdout).keys as Key[]).map((k) => k.name).sort();
}

const as = (who: Key, query: string, variables?: Record<string, unknown>) => gql(server.url, query, { key: who.key, variables });

/** The field came back null with a FORBIDDEN error on it (a standard partial result). */
function expectForbidden(answer: { status: number; body: any }, path: string[]) {
  expect(answer.status).toBe(200);
  const error = answer.body.errors?.find((e: { path?: string[] }) => e.path?.join(".") === path.join("."));
  expect(error, JSON.stringify(answer.body).slice(0, 300)).toBeDefined();
  expect(error.extensions.code).toBe("FORBIDDEN");
  expect(error.message).toMatch(/^Forbidden: /);
  let value = answer.body.data;
  for (const step of path) value = value?.[step];
  expect(value ?? null).toBeNull();
}

const CREATE = "mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id name key roles permissions { resource actions } } } }";
const mint = (who: Key, input: Record<string, unknown>) => as(who, CREATE, { input });

beforeAll(async () => {
  [keys.admin, keys.viewer, keys.guest, keys.creator, keys.updater] = await Promise.all([
    create("admin", "--roles", "ADMIN"),
    create("viewer", "--roles", "VIEWER"),
    create("guest", "--roles", "GUEST"),
    create("creator", "--permissions", "API_KEY:CREATE_ANY"),
    create("updater", "--permissions", "API_KEY:UPDATE_OWN,API_KEY:READ_OWN,DOCKER:READ_ANY"),
  ]);
  server = await startServer({ store });
});
afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
  tmp.cleanup();
});

describe("VIEWER", () => {
  it("reads the system (me, online, info) but not keys, not even its own", async () => {
    const answer = await as(keys.viewer, "{ me { name } online info { version } apiKeys { id } own: apiKey(id: $id) { id } }".replace("$id", JSON.stringify(keys.viewer.id)));
    expect(answer.body.data.me).toEqual({ name: "viewer" });
    expect(answer.body.data.online).toBe(true);
    expect(answer.body.data.info.version).toEqual(expect.any(String));
    expectForbidden(answer, ["apiKeys"]);
    expectForbidden(answer, ["own"]);
    const other = await as(keys.viewer, `{ apiKey(id: ${JSON.stringify(keys.admin.id)}) { id name } }`);
    expectForbidden(other, ["apiKey"]);
    expect(JSON.stringify(other.body)).not.toContain("admin");
  });

  it("cannot create, update, delete or re-role any key, its own included, and nothing changes", async () => {
    const before = await storedNames();
    const tries: Array<[string, Record<string, unknown>, string[]]> = [
      [CREATE, { input: { name: "sneaky", roles: ["GUEST"] } }, ["apiKey", "create"]],
      ["mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { id } } }", { input: { id: keys.viewer.id, roles: ["ADMIN"] } }, ["apiKey", "update"]],
      ["mutation ($input: DeleteApiKeyInput!) { apiKey { delete(input: $input) } }", { input: { ids: [keys.admin.id] } }, ["apiKey", "delete"]],
      ["mutation ($input: DeleteApiKeyInput!) { apiKey { delete(input: $input) } }", { input: { ids: [keys.viewer.id] } }, ["apiKey", "delete"]],
      ["mutation ($input: AddRoleForApiKeyInput!) { apiKey { addRole(input: $input) } }", { input: { apiKeyId: keys.viewer.id, role: "ADMIN" } }, ["apiKey", "addRole"]],
      ["mutation ($input: RemoveRoleFromApiKeyInput!) { apiKey { removeRole(input: $input) } }", { input: { apiKeyId: keys.admin.id, role: "ADMIN" } }, ["apiKey", "removeRole"]],
    ];
    for (const [query, variables, path] of tries) expectForbidden(await as(keys.viewer, query, variables), path);
    expect(await storedNames()).toEqual(before);
    expect((await as(keys.viewer, "{ me { roles } }")).body.data.me.roles).toEqual(["VIEWER"]);
    expect((await as(keys.admin, "{ me { roles } }")).body.data.me.roles).toEqual(["ADMIN"]);
  });
});

describe("a key holding only API_KEY:CREATE_ANY", () => {
  it.each<[string, Record<string, unknown>]>([
    ["an ADMIN key", { name: "escalated", roles: ["ADMIN"] }],
    ["a VIEWER key (rights it lacks)", { name: "escalated", roles: ["VIEWER"] }],
    ["a GUEST key (ME:READ_ANY it lacks)", { name: "escalated", roles: ["GUEST"] }],
    ["a key that may also delete keys", { name: "escalated", permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY", "DELETE_ANY"] }] }],
    ["a key with one more resource", { name: "escalated", permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY"] }, { resource: "DOCKER", actions: ["READ_ANY"] }] }],
    ["a replacement of the ADMIN key (overwrite)", { name: "admin", permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY"] }], overwrite: true }],
  ])("cannot mint %s, and nothing is created", async (_label, input) => {
    const before = await storedNames();
    const answer = await mint(keys.creator, input);
    expectForbidden(answer, ["apiKey", "create"]);
    expect(JSON.stringify(answer.body)).not.toMatch(/sapi_/);
    expect(await storedNames()).toEqual(before);
    expect((await as(keys.admin, "{ me { name } }")).body.data.me.name).toBe("admin"); // the ADMIN key survived
  });

  it("can mint keys with the same rights or a subset, and they work but cannot escalate either", async () => {
    const same = await mint(keys.creator, { name: "minted same", permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY"] }] });
    expect(same.body.errors).toBeUndefined();
    const child = same.body.data.apiKey.create;
    expect(child.key).toMatch(/^sapi_/);
    const subset = await mint(keys.creator, { name: "minted own", permissions: [{ resource: "API_KEY", actions: ["CREATE_OWN"] }] });
    expect(subset.body.errors).toBeUndefined();
    expect(subset.body.data.apiKey.create.permissions).toEqual([{ resource: "API_KEY", actions: ["CREATE_OWN"] }]);

    // The minted key authenticates, and holds no more than its parent.
    const grandchild = await mint({ key: child.key } as Key, { name: "grand admin", roles: ["ADMIN"] });
    expectForbidden(grandchild, ["apiKey", "create"]);
    expect(await storedNames()).toEqual(expect.arrayContaining(["minted own", "minted same"]));
    expect(await storedNames()).not.toContain("grand admin");
  });

  it("cannot read keys either", async () => {
    expectForbidden(await as(keys.creator, "{ apiKeys { id } }"), ["apiKeys"]);
  });
});

describe("a key that may update only itself", () => {
  it("cannot grant itself ADMIN or rights it lacks, nor touch another key", async () => {
    const update = "mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { id roles } } }";
    expectForbidden(await as(keys.updater, update, { input: { id: keys.updater.id, roles: ["ADMIN"] } }), ["apiKey", "update"]);
    expectForbidden(
      await as(keys.updater, update, { input: { id: keys.updater.id, permissions: [{ resource: "API_KEY", actions: ["UPDATE_ANY"] }] } }),
      ["apiKey", "update"],
    );
    expectForbidden(
      await as(keys.updater, "mutation ($input: AddRoleForApiKeyInput!) { apiKey { addRole(input: $input) } }", { input: { apiKeyId: keys.updater.id, role: "VIEWER" } }),
      ["apiKey", "addRole"],
    );
    expectForbidden(await as(keys.updater, update, { input: { id: keys.guest.id, description: "mine now" } }), ["apiKey", "update"]);
    const me = await as(keys.updater, `{ apiKey(id: ${JSON.stringify(keys.updater.id)}) { roles permissions { resource actions } } }`);
    expect(me.body.data.apiKey.roles).toEqual([]);
    // It may still do what it holds: change its own description.
    const ok = await as(keys.updater, update, { input: { id: keys.updater.id, description: "rotated weekly" } });
    expect(ok.body.errors).toBeUndefined();
  });

  it("rotating itself with a grace period leaves the ADMIN key its overwrite replaced working (a delete is not its to make)", async () => {
    const admin = await create("pair", "--roles", "ADMIN");
    const self = await create("pair", "--permissions", "API_KEY:UPDATE_OWN,ME:READ_ANY", "--overwrite", "--grace", "1h");
    const rotated = await as(self, `mutation { apiKey { rotate(id: ${JSON.stringify(self.id)}, graceSeconds: 60) { id } } }`);
    expect(rotated.body.errors).toBeUndefined();
    const still = await as(admin, "{ me { name } }");
    expect(still.status).toBe(200);
    expect(still.body.data.me.name).toBe("pair");
  });
});

describe("a key with credits and rate limits", () => {
  const UPDATE = "mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { credits { remaining } rateLimits { limit durationMs } } } }";
  const ROTATE = "mutation ($id: PrefixedID!) { apiKey { rotate(id: $id) { key } } }";
  const HOUR = 3_600_000;
  /** The FORBIDDEN message of a refused mutation at `path`. */
  const refusal = (answer: { status: number; body: any }, path: string[]) => {
    expectForbidden(answer, path);
    return answer.body.errors[0].message as string;
  };

  it("that may update itself cannot lift its own credits or limits, but may lower them and rotate itself", async () => {
    const metered = await create("metered self", "--permissions", "API_KEY:UPDATE_OWN,API_KEY:READ_OWN", "--credits", "10", "--rate-limit", "8/1h");
    const update = (who: Key, input: Record<string, unknown>) => as(who, UPDATE, { input: { id: metered.id, ...input } });
    const lifted = refusal(await update(metered, { credits: { remaining: 1_000_000_000 }, rateLimits: [] }), ["apiKey", "update"]);
    expect(lifted).toMatch(/at most the 9 this key has left/);
    expect(lifted).toMatch(/as strict as its own 8\/1h over the same window/);
    refusal(await update(metered, { rateLimits: [{ limit: 8, durationMs: 60_000 }] }), ["apiKey", "update"]); // the same count, a shorter window
    refusal(await update(metered, { credits: { remaining: 5, refill: { amount: 5, interval: "day" } } }), ["apiKey", "update"]); // a refill it has not
    // Rotating itself gives it nothing more: its secret changes, its counts stay.
    const rotated = await as(metered, ROTATE, { id: metered.id });
    expect(rotated.body.errors).toBeUndefined();
    const renewed = { ...metered, key: rotated.body.data.apiKey.rotate.key };
    // Over a longer window its count would start afresh: refused; over the same window, lower, allowed.
    refusal(await update(renewed, { rateLimits: [{ limit: 4, durationMs: 2 * HOUR }] }), ["apiKey", "update"]);
    const lowered = await update(renewed, { credits: { remaining: 3 }, rateLimits: [{ limit: 2, durationMs: 60_000 }, { limit: 4, durationMs: HOUR }] });
    expect(lowered.body.errors).toBeUndefined();
    expect(lowered.body.data.apiKey.update).toEqual({ credits: { remaining: 3 }, rateLimits: [{ limit: 2, durationMs: 60_000 }, { limit: 4, durationMs: HOUR }] });
  });

  it("that is rate limited cannot start its count afresh by setting its limit over a window 1 s longer", async () => {
    const limited = await create("limited self", "--permissions", "API_KEY:UPDATE_OWN,ME:READ_ANY", "--rate-limit", "3/1h");
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 2; i++) statuses.push((await as(limited, "{ me { name } }")).status);
      const reset = await as(limited, UPDATE, { input: { id: limited.id, rateLimits: [{ limit: 3, durationMs: HOUR + (round + 1) * 1000 }] } });
      statuses.push(reset.status);
      if (round === 0) expect(refusal(reset, ["apiKey", "update"])).toMatch(/over another one its count would start afresh/);
    }
    // 3 requests an hour: the 4th and every later one is refused, whatever the key tried.
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429, 429, 429, 429]);
  });

  it("that may create and update keys gives none more use than it has: created, updated or rotated", async () => {
    const grants = ["--permissions", "API_KEY:CREATE_ANY,API_KEY:UPDATE_ANY"];
    const [metered, plain] = await Promise.all([create("metered maker", ...grants, "--credits", "10", "--rate-limit", "8/1h"), create("plain maker", ...grants)]);
    const input = { name: "made by metered", permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY"] }] };
    expect(refusal(await mint(metered, input), ["apiKey", "create"])).toMatch(/the key needs credits, at most the 9 this key has left; a rate limit/);
    refusal(await mint(metered, { ...input, credits: { remaining: 1000 }, rateLimits: [{ limit: 8, durationMs: HOUR }] }), ["apiKey", "create"]);
    const made = await as(metered, "mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id credits { remaining } rateLimits { limit durationMs } } } }", {
      input: { ...input, credits: { remaining: 5 }, rateLimits: [{ limit: 2, durationMs: HOUR }] },
    });
    expect(made.body.errors).toBeUndefined();
    expect(made.body.data.apiKey.create).toMatchObject({ credits: { remaining: 5 }, rateLimits: [{ limit: 2, durationMs: HOUR }] });
    const id = made.body.data.apiKey.create.id;
    refusal(await as(metered, UPDATE, { input: { id, credits: null } }), ["apiKey", "update"]);
    refusal(await as(metered, UPDATE, { input: { id, rateLimits: [] } }), ["apiKey", "update"]);
    refusal(await as(metered, ROTATE, { id: plain.id }), ["apiKey", "rotate"]); // a new secret of an unmetered key
    // An unmetered key with the same permissions may do all of that.
    expect((await as(plain, UPDATE, { input: { id, credits: null, rateLimits: [] } })).body.errors).toBeUndefined();
  });
});

describe("GUEST", () => {
  const QUERIES: Record<string, string> = {
    apiKeys: "{ apiKeys { id } }",
    apiKey: "{ apiKey(id: \"$ID\") { id } }",
    apiKeyPossibleRoles: "{ apiKeyPossibleRoles }",
    apiKeyPossiblePermissions: "{ apiKeyPossiblePermissions { resource } }",
    apiKeyPresets: "{ apiKeyPresets { name } }",
    getPermissionsForRoles: "{ getPermissionsForRoles(roles: [GUEST]) { resource } }",
    previewEffectivePermissions: "{ previewEffectivePermissions(roles: [GUEST]) { resource } }",
    getAvailableAuthActions: "{ getAvailableAuthActions }",
    me: "{ me { id name roles } }",
    online: "{ online }",
    info: "{ info { hostname } }",
    auditLog: "{ auditLog { id action } }",
    auditTrail: "{ auditTrail { cursor } }",
    verifyApiKey: "{ verifyApiKey(key: \"sapi_none\") { valid } }",
    webhooks: "{ webhooks { id url } }",
    webhookDeliveries: "{ webhookDeliveries(id: \"wh_00000000000000000000000000000000\") { id } }",
  };

  it("covers every Query field (a new field fails this test until its GUEST rule is checked)", async () => {
    const answer = await as(keys.admin, "{ __schema { queryType { fields { name } } } }");
    const fields = answer.body.data.__schema.queryType.fields.map((f: { name: string }) => f.name).sort();
    expect(fields).toEqual(Object.keys(QUERIES).sort());
  });

  it("sees `me` and is refused every other query field, its own key included", async () => {
    for (const [field, query] of Object.entries(QUERIES)) {
      const answer = await as(keys.guest, query.replace("$ID", keys.guest.id));
      if (field === "me") {
        expect(answer.body).toEqual({ data: { me: { id: keys.guest.id, name: "guest", roles: ["GUEST"] } } });
      } else {
        expectForbidden(answer, [field]);
      }
    }
  });

  it("cannot mint, delete or re-role keys", async () => {
    const before = await storedNames();
    expectForbidden(await as(keys.guest, "mutation { webhook { add(input: { url: \"https://hooks.example.com/\" }) { secret } } }"), ["webhook", "add"]);
    expectForbidden(await mint(keys.guest, { name: "guest child", roles: ["GUEST"] }), ["apiKey", "create"]);
    expectForbidden(
      await as(keys.guest, "mutation ($input: DeleteApiKeyInput!) { apiKey { delete(input: $input) } }", { input: { ids: [keys.guest.id] } }),
      ["apiKey", "delete"],
    );
    expectForbidden(await as(keys.guest, "mutation { apiKey { deleteExpired { id } } }"), ["apiKey", "deleteExpired"]);
    expectForbidden(
      await as(keys.guest, "mutation ($input: AddRoleForApiKeyInput!) { apiKey { addRole(input: $input) } }", { input: { apiKeyId: keys.guest.id, role: "VIEWER" } }),
      ["apiKey", "addRole"],
    );
    expect(await storedNames()).toEqual(before);
  });
});
