import { describe, expect, it } from "vitest";
import { ACTIONS, type Permission, RESOURCES, type Role } from "../../lib/core/model.ts";
import { can, canGrant, effectivePermissions, escalation } from "../../lib/core/policy.ts";

const key = (roles: Role[], permissions: Permission[] = []) => ({ roles, permissions });

describe("policy", () => {
  it("ADMIN may do every action on every resource", () => {
    const admin = key(["ADMIN"]);
    for (const resource of RESOURCES) for (const action of ACTIONS) expect(can(admin, resource, action)).toBe(true);
  });

  it("VIEWER reads every resource except API_KEY and changes nothing", () => {
    const viewer = key(["VIEWER"]);
    for (const resource of RESOURCES) {
      expect(can(viewer, resource, "READ_ANY")).toBe(resource !== "API_KEY");
      for (const action of ["CREATE_ANY", "UPDATE_ANY", "DELETE_ANY", "DELETE_OWN"] as const) {
        expect(can(viewer, resource, action)).toBe(false);
      }
    }
  });

  it("CONNECT is VIEWER plus updating remote access, nothing else", () => {
    const connect = key(["CONNECT"]);
    expect(can(connect, "CONNECT__REMOTE_ACCESS", "UPDATE_ANY")).toBe(true);
    expect(can(connect, "DOCKER", "READ_ANY")).toBe(true);
    expect(can(connect, "API_KEY", "READ_ANY")).toBe(false);
    expect(can(connect, "CONNECT", "UPDATE_ANY")).toBe(false);
    expect(escalation(key(["VIEWER", "CONNECT"]), connect)).toEqual([]);
    expect(escalation(connect, key(["VIEWER"]))).toEqual([]);
    expect(escalation(key(["VIEWER"]), connect)).toEqual(["CONNECT__REMOTE_ACCESS:UPDATE_ANY", "CONNECT__REMOTE_ACCESS:UPDATE_OWN"]);
  });

  it("GUEST reads only ME", () => {
    const guest = key(["GUEST"]);
    expect(effectivePermissions(guest)).toEqual([{ resource: "ME", actions: ["READ_ANY", "READ_OWN"] }]);
    expect(can(guest, "INFO", "READ_ANY")).toBe(false);
  });

  it("an _ANY action implies the _OWN one, not the reverse", () => {
    const any = key([], [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }]);
    expect(can(any, "DOCKER", "UPDATE_OWN")).toBe(true);
    const own = key([], [{ resource: "DOCKER", actions: ["UPDATE_OWN"] }]);
    expect(can(own, "DOCKER", "UPDATE_ANY")).toBe(false);
    expect(can(own, "DOCKER", "READ_OWN")).toBe(false);
  });

  it("effective permissions are the union of roles and explicit pairs", () => {
    const mixed = key(["GUEST"], [{ resource: "DOCKER", actions: ["READ_ANY"] }]);
    expect(effectivePermissions(mixed)).toEqual([
      { resource: "DOCKER", actions: ["READ_ANY", "READ_OWN"] },
      { resource: "ME", actions: ["READ_ANY", "READ_OWN"] },
    ]);
  });

  it("no escalation: a key grants only what it holds itself", () => {
    const manager = key([], [{ resource: "API_KEY", actions: ["CREATE_ANY"] }, { resource: "DOCKER", actions: ["READ_ANY"] }]);
    expect(canGrant(manager, key([], [{ resource: "DOCKER", actions: ["READ_OWN"] }]))).toBe(true);
    expect(canGrant(manager, key(["GUEST"]))).toBe(false);
    expect(canGrant(manager, key(["ADMIN"]))).toBe(false);
    expect(canGrant(key(["ADMIN"]), key(["VIEWER", "CONNECT", "GUEST"], [{ resource: "VMS", actions: ["DELETE_ANY"] }]))).toBe(true);
  });
});
