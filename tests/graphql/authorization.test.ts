// The schema and its authorization, through the real fetch handler over an in-memory store.
import { beforeEach, describe, expect, it } from "vitest";
import { ACTIONS, type Permission, RESOURCES, ROLES, type Role } from "../../lib/core/model.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { dependsOnKeyOnly, DOCUMENT_LIMITS, FIELD_PERMISSIONS, parseDocument } from "../../lib/graphql/schema.ts";
import { prepare } from "../../lib/graphql/prepared.ts";
import { getOperationAST } from "graphql";

let store: KeyStore;
let handler: (request: Request) => Promise<Response>;

beforeEach(() => {
  store = createKeyStore();
  handler = createHandler({ store, onError: () => {} });
});

async function makeKey(name: string, roles: Role[], permissions: Permission[] = []) {
  return store.create({ name, roles, permissions });
}

async function gql(key: string, query: string, variables?: Record<string, unknown>, accept?: string) {
  const response = await handler(
    new Request("http://service/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...(accept ? { accept } : {}) },
      body: JSON.stringify({ query, variables }),
    }),
  );
  return { status: response.status, body: await response.json() };
}

const codes = (body: { errors?: { extensions?: { code?: string } }[] }) => (body.errors ?? []).map((e) => e.extensions?.code);

const QUERIES: Record<string, string> = {
  apiKeys: "apiKeys { id }",
  apiKeyPossibleRoles: "apiKeyPossibleRoles",
  apiKeyPossiblePermissions: "apiKeyPossiblePermissions { resource }",
  getPermissionsForRoles: "getPermissionsForRoles(roles: [GUEST]) { resource actions }",
  previewEffectivePermissions: "previewEffectivePermissions(roles: [GUEST]) { resource }",
  getAvailableAuthActions: "getAvailableAuthActions",
  me: "me { id name }",
  online: "online",
  info: "info { hostname platform cpus runtime version memory { total } }",
};

describe("GraphQL authorization", () => {
  // What each role may read among the queries: the rest must be null with FORBIDDEN.
  const allowed: Record<Role, string[]> = {
    ADMIN: Object.keys(QUERIES),
    VIEWER: Object.keys(QUERIES).filter((f) => f !== "apiKeys"),
    CONNECT: Object.keys(QUERIES).filter((f) => f !== "apiKeys"),
    GUEST: ["me"],
  };

  it.each(ROLES.map((role) => [role]))("%s reads exactly the fields its role allows", async (role) => {
    const { key, id } = await makeKey(`${role} key`, [role]);
    const { status, body } = await gql(key, `{ ${Object.values(QUERIES).join(" ")} }`);
    expect(status).toBe(200);
    for (const field of Object.keys(QUERIES)) {
      if (allowed[role].includes(field)) expect(body.data[field], field).not.toBeNull();
      else expect(body.data[field], field).toBeNull();
    }
    expect(body.data.me).toEqual({ id, name: `${role} key` });
    const forbidden = body.errors ?? [];
    expect(forbidden.map((e: { path: string[] }) => e.path[0]).sort()).toEqual(
      Object.keys(QUERIES).filter((f) => !allowed[role].includes(f)).sort(),
    );
    expect(new Set(codes(body))).toEqual(new Set(forbidden.length ? ["FORBIDDEN"] : []));
  });

  it("a key with only DOCKER:READ_ANY reads none of these fields, not even me", async () => {
    const { key } = await makeKey("docker reader", [], [{ resource: "DOCKER", actions: ["READ_ANY"] }]);
    const { body } = await gql(key, "{ me { id } online }");
    expect(body.data).toEqual({ me: null, online: null });
    expect(codes(body)).toEqual(["FORBIDDEN", "FORBIDDEN"]);
    expect(body.errors[0].message).toContain("ME:READ_OWN");
  });

  it("a key with a permission pair reads the field that pair guards", async () => {
    const { key } = await makeKey("info reader", [], [{ resource: "INFO", actions: ["READ_ANY"] }]);
    const { body } = await gql(key, "{ info { version } online }");
    expect(body.data.info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(body.data.online).toBeNull();
  });

  it("lists keys for ADMIN without ever showing a secret", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    await makeKey("other", ["VIEWER"], [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }]);
    const { body } = await gql(admin.key, "{ apiKeys { name roles permissions { resource actions } key } }");
    expect(body.data.apiKeys).toEqual([
      { name: "admin", roles: ["ADMIN"], permissions: [], key: null },
      { name: "other", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }], key: null },
    ]);
  });

  it("apiKey(id) reads the caller's own key with API_KEY:READ_OWN but not another's", async () => {
    const own = await makeKey("self reader", [], [{ resource: "API_KEY", actions: ["READ_OWN"] }]);
    const other = await makeKey("other", ["GUEST"]);
    const mine = await gql(own.key, "query ($id: PrefixedID!) { apiKey(id: $id) { name } }", { id: own.id });
    expect(mine.body.data.apiKey).toEqual({ name: "self reader" });
    const theirs = await gql(own.key, "query ($id: PrefixedID!) { apiKey(id: $id) { name } }", { id: other.id });
    expect(theirs.body.data.apiKey).toBeNull();
    expect(codes(theirs.body)).toEqual(["FORBIDDEN"]);
  });

  it("computes role permissions and previews effective permissions", async () => {
    const { key } = await makeKey("viewer", ["VIEWER"]);
    const { body } = await gql(
      key,
      `{ getPermissionsForRoles(roles: [GUEST]) { resource actions }
         previewEffectivePermissions(roles: [GUEST], permissions: [{ resource: DOCKER, actions: [UPDATE_ANY] }]) { resource actions }
         apiKeyPossiblePermissions { resource actions } getAvailableAuthActions apiKeyPossibleRoles }`,
    );
    expect(body.data.getPermissionsForRoles).toEqual([{ resource: "ME", actions: ["READ_ANY", "READ_OWN"] }]);
    expect(body.data.previewEffectivePermissions).toEqual([
      { resource: "DOCKER", actions: ["UPDATE_ANY", "UPDATE_OWN"] },
      { resource: "ME", actions: ["READ_ANY", "READ_OWN"] },
    ]);
    expect(body.data.apiKeyPossiblePermissions).toHaveLength(RESOURCES.length);
    expect(body.data.getAvailableAuthActions).toEqual([...ACTIONS]);
    expect(body.data.apiKeyPossibleRoles).toEqual([...ROLES]);
  });

  it("every field states the permission it needs in the schema", () => {
    expect(FIELD_PERMISSIONS["Query.apiKeys"]).toBe("API_KEY:READ_ANY");
    expect(FIELD_PERMISSIONS["Mutation.apiKey.create"]).toBe("API_KEY:CREATE_ANY");
    expect(FIELD_PERMISSIONS["Mutation.apiKey.rotate"]).toBe("API_KEY:UPDATE_ANY");
    expect(FIELD_PERMISSIONS["Query.verifyApiKey"]).toBe("API_KEY:READ_ANY");
    expect(FIELD_PERMISSIONS["Query.auditTrail"]).toBe("API_KEY:READ_ANY");
    expect(FIELD_PERMISSIONS["Mutation.webhook.add"]).toBe("API_KEY:CREATE_ANY");
    expect(FIELD_PERMISSIONS["Query.webhooks"]).toBe("API_KEY:READ_ANY");
    // with auditLog, auditTrail, deleteExpired, rotate, verifyApiKey, apiKeyPresets, and the 6 of webhooks
    expect(Object.keys(FIELD_PERMISSIONS)).toHaveLength(27);
  });
});

const CREATE = `mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id name description roles permissions { resource actions } createdAt key } } }`;

describe("GraphQL key mutations", () => {
  it("create returns the secret once; the new key authenticates; later reads never show it", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    const { body } = await gql(admin.key, CREATE, {
      input: { name: "ci deploy", description: "for CI", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }] },
    });
    const created = body.data.apiKey.create;
    expect(created).toMatchObject({ name: "ci deploy", description: "for CI", roles: ["VIEWER"] });
    expect(created.key).toMatch(/^sapi_/);
    const me = await gql(created.key, "{ me { id } }");
    expect(me.body.data.me.id).toBe(created.id);
    const read = await gql(admin.key, "query ($id: PrefixedID!) { apiKey(id: $id) { key } }", { id: created.id });
    expect(read.body.data.apiKey).toEqual({ key: null });
  });

  it("create validates input with the CLI's rules and reports the CLI's messages and codes", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    const bad = await gql(admin.key, CREATE, { input: { name: "bad-name", roles: ["ADMIN"] } });
    expect(bad.body.data.apiKey.create).toBeNull();
    expect(bad.body.errors[0]).toMatchObject({
      message: 'API key name must contain only letters, numbers, and spaces (Unicode letters are supported). Try "bad name"',
      extensions: { code: "INVALID_INPUT" },
    });
    // Optional fields sent as null are treated as absent, as GraphQL clients commonly send them.
    const nulls = await gql(admin.key, CREATE, { input: { name: "nulls", description: null, roles: null, permissions: [{ resource: "ME", actions: ["READ_ANY"] }] } });
    expect(nulls.body.data.apiKey.create).toMatchObject({ name: "nulls", description: null, roles: [] });
    const none = await gql(admin.key, CREATE, { input: { name: "empty" } });
    expect(none.body.errors[0]).toMatchObject({ message: "Please add at least one role or permission to the key.", extensions: { code: "INVALID_INPUT" } });
    const taken = await gql(admin.key, CREATE, { input: { name: "admin", roles: ["GUEST"] } });
    expect(taken.body.errors[0]).toMatchObject({ extensions: { code: "NAME_TAKEN" } });
    expect(taken.body.errors[0].message).toContain("already exists");
    const unknownRole = await gql(admin.key, CREATE, { input: { name: "x", roles: ["ROOT"] } });
    expect(unknownRole.status).toBe(200);
    expect(codes(unknownRole.body)).toEqual(["BAD_USER_INPUT"]);
    expect(await store.getByName("x")).toBeNull();
  });

  it("overwrite replaces the key and revokes the old secret at once", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    const old = await makeKey("rotating", ["GUEST"]);
    const { body } = await gql(admin.key, CREATE, { input: { name: "rotating", roles: ["GUEST"], overwrite: true } });
    const fresh = body.data.apiKey.create;
    expect(fresh.id).not.toBe(old.id);
    expect((await gql(old.key, "{ me { id } }")).status).toBe(401);
    expect((await gql(fresh.key, "{ me { id } }")).body.data.me.id).toBe(fresh.id);
  });

  it("refuses to create a key with permissions the caller lacks", async () => {
    const manager = await makeKey("manager", ["VIEWER"], [{ resource: "API_KEY", actions: ["CREATE_ANY"] }]);
    const up = await gql(manager.key, CREATE, { input: { name: "sneaky", roles: ["ADMIN"] } });
    expect(up.body.data.apiKey.create).toBeNull();
    expect(codes(up.body)).toEqual(["FORBIDDEN"]);
    expect(await store.getByName("sneaky")).toBeNull();
    const same = await gql(manager.key, CREATE, { input: { name: "reader", roles: ["VIEWER"] } });
    expect(same.body.data.apiKey.create.name).toBe("reader");
    // Overwriting replaces another key, which needs delete rights too.
    const over = await gql(manager.key, CREATE, { input: { name: "reader", roles: ["VIEWER"], overwrite: true } });
    expect(codes(over.body)).toEqual(["FORBIDDEN"]);
  });

  it("update, addRole and removeRole change a key within the caller's own permissions", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    const target = await makeKey("target", ["GUEST"]);
    const update = await gql(
      admin.key,
      `mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { name description roles } } }`,
      { input: { id: target.id, name: "renamed", description: "now described" } },
    );
    expect(update.body.data.apiKey.update).toEqual({ name: "renamed", description: "now described", roles: ["GUEST"] });
    const add = await gql(admin.key, `mutation ($input: AddRoleForApiKeyInput!) { apiKey { addRole(input: $input) } }`, {
      input: { apiKeyId: target.id, role: "VIEWER" },
    });
    expect(add.body.data.apiKey.addRole).toBe(true);
    expect((await store.get(target.id))?.roles).toEqual(["VIEWER", "GUEST"]);
    const remove = await gql(admin.key, `mutation ($input: RemoveRoleFromApiKeyInput!) { apiKey { removeRole(input: $input) } }`, {
      input: { apiKeyId: target.id, role: "GUEST" },
    });
    expect(remove.body.data.apiKey.removeRole).toBe(true);
    expect((await store.get(target.id))?.roles).toEqual(["VIEWER"]);

    // A key that may update keys still cannot raise one above itself.
    const updater = await makeKey("updater", ["VIEWER"], [{ resource: "API_KEY", actions: ["UPDATE_ANY"] }]);
    const raise = await gql(updater.key, `mutation ($input: AddRoleForApiKeyInput!) { apiKey { addRole(input: $input) } }`, {
      input: { apiKeyId: target.id, role: "ADMIN" },
    });
    expect(codes(raise.body)).toEqual(["FORBIDDEN"]);
    expect((await store.get(target.id))?.roles).toEqual(["VIEWER"]);
  });

  it("delete removes keys by id and their secrets stop working", async () => {
    const admin = await makeKey("admin", ["ADMIN"]);
    const a = await makeKey("a", ["GUEST"]);
    const b = await makeKey("b", ["GUEST"]);
    const del = `mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`;
    const { body } = await gql(admin.key, del, { ids: [a.id, b.id] });
    expect(body.data.apiKey.delete).toBe(true);
    expect((await gql(a.key, "{ me { id } }")).status).toBe(401);
    const again = await gql(admin.key, del, { ids: [a.id] });
    expect(again.body.data.apiKey.delete).toBeNull();
    expect(codes(again.body)).toEqual(["NOT_FOUND"]);
    // GUEST may not delete keys, not even another GUEST's.
    const guest = await makeKey("guest", ["GUEST"]);
    const other = await makeKey("other guest", ["GUEST"]);
    expect(codes((await gql(guest.key, del, { ids: [other.id] })).body)).toEqual(["FORBIDDEN"]);
    expect(await store.get(other.id)).not.toBeNull();
  });
});

describe("GraphQL documents", () => {
  it("syntax and validation errors: 200 for application/json, 400 for application/graphql-response+json", async () => {
    const { key } = await makeKey("admin", ["ADMIN"]);
    const syntax = await gql(key, "{ me { id ");
    expect(syntax.status).toBe(200);
    expect(codes(syntax.body)).toEqual(["GRAPHQL_PARSE_FAILED"]);
    const strict = await gql(key, "{ me { id ", undefined, "application/graphql-response+json");
    expect(strict.status).toBe(400);
    const unknown = await gql(key, "{ nope }", undefined, "application/graphql-response+json");
    expect(unknown.status).toBe(400);
    expect(codes(unknown.body)).toEqual(["GRAPHQL_VALIDATION_FAILED"]);
    expect(unknown.body.errors[0].message).toContain("nope");
  });

  it("rejects documents over the token, depth or alias limits before running them", async () => {
    const { key } = await makeKey("admin", ["ADMIN"]);
    const many = `{ ${Array.from({ length: DOCUMENT_LIMITS.maxTokens }, (_, i) => `a${i}: online`).join(" ")} }`;
    const tokens = await gql(key, many);
    expect(codes(tokens.body)).toEqual(["GRAPHQL_PARSE_FAILED"]);
    expect(tokens.body.errors[0].message).toMatch(/token/i);
    const aliases = `{ ${Array.from({ length: DOCUMENT_LIMITS.maxAliases + 1 }, (_, i) => `a${i}: online`).join(" ")} }`;
    const aliased = await gql(key, aliases);
    expect(aliased.body.data).toBeUndefined();
    expect(aliased.body.errors[0].message).toMatch(/too many aliases/);
    // Introspection is the one place the schema nests deeply. Standard introspection is 15 deep, so
    // below `__type`/`__schema` the field cap and graphql-js's introspection depth rule bound it instead
    // (tests/graphql/introspection.test.ts); `ofType` chains end where the type's wrappers do.
    const nest = (n: number): string => (n === 0 ? "name" : `ofType { ${nest(n - 1)} }`);
    const deep = await gql(key, `{ __type(name: "Query") { fields { type { ${nest(DOCUMENT_LIMITS.maxDepth)} } } } }`);
    expect(deep.body.errors).toBeUndefined();
    const fine = await gql(key, `{ __type(name: "Query") { fields { type { ${nest(3)} } } } }`);
    expect(fine.body.errors).toBeUndefined();
    // Fragments spread twice per level: 2^10 fields from a short document.
    const doubling = Array.from({ length: 10 }, (_, i) => `fragment F${i + 1} on Query { ...F${i} ...F${i} }`);
    const blowup = await gql(key, `{ ...F10 } fragment F0 on Query { online } ${doubling.join(" ")}`);
    expect(blowup.body.errors[0].message).toMatch(/too many fields/);
  });

  it("prepares a query once: the same query text and operation name give the same prepared query", () => {
    expect(prepare("{ me { id } }")).toBe(prepare("{ me { id } }"));
    expect(prepare("{ me { id } }")).not.toBe(prepare("{ me { name } }"));
    expect(prepare("query A { me { id } } query B { online }", "A")).not.toBe(prepare("query A { me { id } } query B { online }", "B"));
    expect(prepare("query A { me { id } }", "C").errors?.[0].message).toBe("Unable to detect operation AST");
  });

  it("tells which queries depend on the caller's key alone (those may be answered from memory)", () => {
    const keyOnly = (query: string) => {
      const document = parseDocument(query);
      return dependsOnKeyOnly(document, getOperationAST(document)!);
    };
    expect(keyOnly("{ me { id name roles } }")).toBe(true);
    expect(keyOnly("{ online apiKeyPossibleRoles __typename }")).toBe(true);
    expect(keyOnly("{ ...F } fragment F on Query { me { id } ... on Query { getAvailableAuthActions } }")).toBe(true);
    expect(keyOnly("{ me { id } apiKeys { id } }")).toBe(false);
    expect(keyOnly("{ ...F } fragment F on Query { info { hostname } }")).toBe(false);
    expect(keyOnly("{ ... on Query { apiKey(id: \"x\") { id } } }")).toBe(false);
    expect(keyOnly("mutation { apiKey { delete(input: { ids: [] }) } }")).toBe(false);
  });
});
