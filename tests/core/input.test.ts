import { describe, expect, it } from "vitest";
import { NameSchema, parseCreateInput, parseInput } from "../../lib/core/input.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { generateSecret } from "../../lib/core/secret.ts";

const fails = (fn: () => unknown, message: string) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("INVALID_INPUT");
    expect((error as ServiceError).message).toContain(message);
    return;
  }
  throw new Error("expected a validation error");
};

describe("names", () => {
  it.each([["Überprüfung 東京 2"], ["deploy key"], ["Ключ 7"], ["مفتاح"], ["007"]])("accepts %j", (name) => {
    expect(parseInput(NameSchema, name)).toBe(name);
  });

  it.each([
    ["bad-name"], ["under_score"], ["a/b"], ["__proto__"], ["$(rm -rf /)"], ["zero\u200bwidth"],
    ["rtl\u202Eoverride"], ["line\nbreak"], ["key 🔑"], ["a\u0000b"],
  ])("rejects %j with the rule", (name) => {
    fails(() => parseInput(NameSchema, name), "only letters, numbers, and spaces");
  });

  it("normalizes to NFC and trims", () => {
    expect(parseInput(NameSchema, "  Cafe\u0301  ")).toBe("Caf\u00e9");
  });

  it("counts characters, not UTF-16 units, against the limit of 100", () => {
    // U+20000, a letter outside the BMP (math bold letters are refused as compatibility forms now).
    expect(parseInput(NameSchema, "\u{20000}".repeat(100))).toHaveLength(200);
    fails(() => parseInput(NameSchema, "a".repeat(101)), "at most 100 characters");
  });
});

describe("create input", () => {
  it("accepts the GraphQL shape of permissions and groups pairs by resource", () => {
    expect(
      parseCreateInput({
        name: "x",
        permissions: [{ resource: "VMS", actions: ["READ_ANY"] }, "docker:read_any", { resource: "VMS", actions: ["READ_ANY", "UPDATE_ANY"] }],
      }).permissions,
    ).toEqual([{ resource: "DOCKER", actions: ["READ_ANY"] }, { resource: "VMS", actions: ["READ_ANY", "UPDATE_ANY"] }]);
  });

  it("ignores blanks and duplicates in role lists", () => {
    expect(parseCreateInput({ name: "x", roles: " guest,, ADMIN ,guest," }).roles).toEqual(["ADMIN", "GUEST"]);
  });

  it("rejects descriptions over 1,000 characters or with control characters", () => {
    fails(() => parseCreateInput({ name: "x", roles: "ADMIN", description: "d".repeat(1001) }), "at most 1000");
    fails(() => parseCreateInput({ name: "x", roles: "ADMIN", description: "\u001b[2J" }), "control");
  });

  it("refuses a description holding a well-formed secret, anywhere and glued to other text", () => {
    const secret = generateSecret();
    const body = secret.slice("sapi_".length);
    for (const description of [secret, `token for CI: ${secret}`, `x${secret}y`, `body only ${body}`, `glued${body}tail`]) {
      fails(() => parseCreateInput({ name: "x", roles: "ADMIN", description }), "must not contain an API key secret");
    }
  });

  it("keeps descriptions that only look like a secret: the checksum decides", () => {
    const secret = generateSecret();
    const mistyped = secret.slice(0, -1) + (secret.endsWith("A") ? "B" : "A");
    for (const description of ["keys start with sapi_", mistyped, secret.slice(0, -2), "sapi_" + "a".repeat(49)]) {
      expect(parseCreateInput({ name: "x", roles: "ADMIN", description }).description).toBe(description);
    }
  });

  it("rejects wrong types with a message, not a crash", () => {
    fails(() => parseCreateInput({ name: 42, roles: "ADMIN" }), "must be a string");
    fails(() => parseCreateInput({ name: "x", roles: { a: 1 } }), "comma-separated list");
  });
});

describe("a secret pasted into --description", () => {
  it("is refused by the CLI with exit 2, not echoed, and nothing is stored", async () => {
    const { cliWithStore } = await import("../helpers/cli.ts");
    const { cli, cleanup } = cliWithStore();
    try {
      const secret = generateSecret();
      const result = await cli("apikey", "--create", "--name", "ci", "--roles", "ADMIN", "--description", `old key ${secret}`);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Description must not contain an API key secret");
      expect(result.stdout + result.stderr).not.toContain(secret.slice(5, 20));
      const list = await cli("apikey", "--list", "--json");
      expect(JSON.parse(list.stdout)).toEqual({ keys: [] });
    } finally {
      cleanup();
    }
  });
});

describe("a secret pasted into a GraphQL description", () => {
  it("is refused on create and on update, and the stored description is unchanged", async () => {
    const { createKeyStore } = await import("../../lib/store/key-store.ts");
    const { createHandler } = await import("../../lib/http/fetch.ts");
    const store = createKeyStore();
    const handler = createHandler({ store, onError: () => {} });
    const admin = await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] });
    const secret = generateSecret();
    const gql = async (query: string, variables: Record<string, unknown>) => {
      const response = await handler(new Request("http://service/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${admin.key}` },
        body: JSON.stringify({ query, variables }),
      }));
      return (await response.json()) as { errors?: { message: string; extensions?: { code?: string } }[] };
    };
    const created = await gql(`mutation ($i: CreateApiKeyInput!) { apiKey { create(input: $i) { id } } }`, {
      i: { name: "ci", roles: ["VIEWER"], description: `key ${secret}` },
    });
    expect(created.errors?.[0].extensions?.code).toBe("INVALID_INPUT");
    expect(created.errors?.[0].message).toContain("must not contain an API key secret");
    const updated = await gql(`mutation ($i: UpdateApiKeyInput!) { apiKey { update(input: $i) { id } } }`, {
      i: { id: admin.id, description: secret },
    });
    expect(updated.errors?.[0].extensions?.code).toBe("INVALID_INPUT");
    expect(JSON.stringify([created, updated])).not.toContain(secret.slice(5));
    expect((await store.list()).map((k) => k.description)).toEqual([undefined]);
  });
});
