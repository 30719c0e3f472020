/**
 * The access questions of interactive create: roles from a list, then permissions (none, picked as
 * resources and actions, or typed), asked again until the key has at least one of either. Flags that
 * were given are never asked for.
 */
import type { ApikeyFlags } from "./flags.ts";
import { type Ask, askValid, TOGGLE, withProblem } from "./_ask.ts";
import { ServiceError } from "../core/errors.ts";
import { groupPermissions, NEED_ROLE_OR_PERMISSION, parseInput, PermissionsSchema, RolesSchema, withPresets } from "../core/input.ts";
import { ACTIONS, type Permission, RESOURCES, type Role, ROLE_DESCRIPTIONS, ROLES } from "../core/model.ts";

/** The roles, each with what it allows. */
async function askRoles(ask: Ask, problem?: string): Promise<Role[]> {
  const width = Math.max(...ROLES.map((role) => role.length));
  const choices = ROLES.map((role) => ({ value: role, label: `${role.padEnd(width)}  ${ROLE_DESCRIPTIONS[role]}` }));
  return ask.multiselect(withProblem(`Roles (${TOGGLE}):`, problem), choices);
}

/** Resources from a list, then actions for all of them at once or for each one. */
async function pickPermissions(ask: Ask): Promise<Permission[]> {
  const resources = await ask.multiselect(
    `Resources (${TOGGLE}):`,
    RESOURCES.map((resource) => ({ value: resource, label: resource })),
  );
  if (resources.length === 0) return [];
  const actionChoices = ACTIONS.map((action) => ({ value: action, label: action }));
  const each = resources.length > 1 &&
    (await ask.select(`Actions for the ${resources.length} resources:`, [
      { value: "same", label: resources.length === 2 ? "The same actions for both resources" : `The same actions for all ${resources.length} resources` },
      { value: "each", label: "Different actions for each resource" },
    ], "same")) === "each";
  const pairs: string[] = [];
  if (each) {
    for (const resource of resources) {
      const actions = await ask.multiselect(`Actions on ${resource} (${TOGGLE}):`, actionChoices);
      pairs.push(...actions.map((action) => `${resource}:${action}`));
    }
  } else {
    const target = resources.length === 1 ? resources[0] : resources.join(", ");
    const actions = await ask.multiselect(`Actions on ${target} (${TOGGLE}):`, actionChoices);
    for (const resource of resources) pairs.push(...actions.map((action) => `${resource}:${action}`));
  }
  return groupPermissions(pairs);
}

/** Permissions (none, picked, or typed), on top of the roles when there are some. */
async function askPermissions(ask: Ask, haveRoles: boolean, problem?: string): Promise<Permission[]> {
  const how = await ask.select(
    withProblem(`Permissions (RESOURCE:ACTION pairs)${haveRoles ? " on top of the roles" : ""}:`, problem),
    [
      { value: "none", label: haveRoles ? "None, the roles are enough" : "None" },
      { value: "pick", label: "Choose resources, then actions" },
      { value: "type", label: "Type them, e.g. DOCKER:READ_ANY,VMS:UPDATE_ANY" },
    ],
    haveRoles ? "none" : "pick",
  );
  if (how === "pick") return pickPermissions(ask);
  if (how === "type") {
    return askValid(ask, PermissionsSchema, "Permissions, comma-separated RESOURCE:ACTION pairs (empty for none):");
  }
  return [];
}

/** Roles and permissions not given by flags, asked again until there is at least one of either. */
export async function askAccess(ask: Ask, flags: ApikeyFlags): Promise<{ roles: Role[]; permissions: Permission[] }> {
  const givenRoles = flags.roles !== undefined ? parseInput(RolesSchema, flags.roles) : undefined;
  // A preset gives permissions (with any -p): only roles are asked then.
  const givenPermissions = flags.preset !== undefined
    ? parseInput(PermissionsSchema, withPresets({ permissions: flags.permissions }, flags.preset).permissions)
    : flags.permissions !== undefined ? parseInput(PermissionsSchema, flags.permissions) : undefined;
  let problem: string | undefined;
  for (;;) {
    const roles = givenRoles ?? (await askRoles(ask, problem));
    const permissions = givenPermissions ??
      (await askPermissions(ask, roles.length > 0, givenRoles ? problem : undefined));
    if (roles.length + permissions.length > 0) return { roles, permissions };
    if (givenRoles && givenPermissions) throw new ServiceError("INVALID_INPUT", NEED_ROLE_OR_PERMISSION);
    problem = NEED_ROLE_OR_PERMISSION;
  }
}
