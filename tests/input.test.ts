import { describe, expect, it } from "vitest";
import { NameSchema, parseCreateInput, parseInput } from "../lib/input.ts";
import { ServiceError } from "../lib/errors.ts";

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
    expect(parseInput(NameSchema, "𝐀".repeat(100))).toHaveLength(200);
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

  it("rejects wrong types with a message, not a crash", () => {
    fails(() => parseCreateInput({ name: 42, roles: "ADMIN" }), "must be a string");
    fails(() => parseCreateInput({ name: "x", roles: { a: 1 } }), "comma-separated list");
  });
});
