// Unkey's permission query over RESOURCE:ACTION names (lib/core/permission-query.ts): precedence, grouping,
// case, roles counting, and the errors a malformed query gets.
import { describe, expect, it } from "vitest";
import { lackedPair, parsePermissionQuery, satisfies } from "../../lib/core/permission-query.ts";

const viewer = { roles: ["VIEWER" as const], permissions: [] };
const holds = (query: string, grants: Parameters<typeof satisfies>[0] = viewer) => satisfies(grants, parsePermissionQuery(query));

describe("permission queries", () => {
  it("AND binds tighter than OR, parentheses group, words and names in any case", () => {
    expect(holds("API_KEY:READ_ANY OR DOCKER:READ_ANY AND VMS:READ_ANY")).toBe(true);
    expect(holds("(API_KEY:READ_ANY OR DOCKER:READ_ANY) AND API_KEY:CREATE_ANY")).toBe(false);
    expect(holds("docker:read_own and ( vms:read_any or api_key:read_any )")).toBe(true);
    expect(holds("ME:READ_ANY", { roles: [], permissions: [{ resource: "ME", actions: ["READ_ANY"] }] })).toBe(true);
    expect(parsePermissionQuery("DOCKER:READ_ANY")).toEqual({ pair: "DOCKER:READ_ANY", resource: "DOCKER", action: "READ_ANY" });
  });

  it("names a pair the grants lack whenever they do not satisfy a query, and none when they do", () => {
    const query = parsePermissionQuery("DOCKER:READ_ANY AND (API_KEY:READ_ANY OR VMS:UPDATE_ANY)");
    expect(lackedPair(viewer, query)?.pair).toBe("API_KEY:READ_ANY");
    expect(lackedPair({ roles: ["ADMIN"], permissions: [] }, query)).toBeUndefined();
  });

  it("refuses malformed queries with a message naming the form", () => {
    const message = (query: string) => {
      try {
        parsePermissionQuery(query);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error(`${query} was accepted`);
    };
    expect(message("")).toMatch(/it is empty; use RESOURCE:ACTION names joined by AND and OR/);
    expect(message("DOCKER:READ_ANY OR")).toMatch(/ends where a permission/);
    expect(message("AND DOCKER:READ_ANY")).toMatch(/'AND' where a permission was expected/);
    expect(message("DOCKER:READ_ANY)")).toMatch(/a '\)' has no '\('/);
    expect(message("DOCKER:READ_ANY,VMS:READ_ANY")).toMatch(/each name is one RESOURCE:ACTION/);
    expect(message("DOCKER")).toMatch(/expected RESOURCE:ACTION/);
    expect(message("DOCKER:FLY")).toMatch(/Unknown permission action "FLY"/);
  });
});
