/**
 * Who may do what. A key's effective permissions are the union of what its roles grant and its
 * explicit `RESOURCE:ACTION` pairs, where `X_ANY` also grants `X_OWN` on the same resource.
 *
 *   ADMIN    every action on every resource
 *   VIEWER   READ_ANY on every resource except API_KEY
 *   CONNECT  VIEWER + CONNECT__REMOTE_ACCESS:UPDATE_ANY
 *   GUEST    ME:READ_ANY
 */
import {
  ACTIONS,
  type AuthAction,
  groupPermissions,
  type Permission,
  permissionPairs,
  type Resource,
  RESOURCES,
  type Role,
  ROLES,
} from "./model.ts";

const everyAction = (resource: Resource): Permission => ({ resource, actions: [...ACTIONS] });
const viewer: Permission[] = RESOURCES.filter((r) => r !== "API_KEY").map((resource) => ({
  resource,
  actions: ["READ_ANY"],
}));

/** What each role grants, before `X_ANY` implies `X_OWN`. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  ADMIN: RESOURCES.map(everyAction),
  VIEWER: viewer,
  CONNECT: groupPermissions([...permissionPairs(viewer), "CONNECT__REMOTE_ACCESS:UPDATE_ANY"]),
  GUEST: [{ resource: "ME", actions: ["READ_ANY"] }],
};

/** Anything that holds roles and permissions: a stored key, a create input, a preview request. */
export interface Grants {
  roles: readonly Role[];
  permissions: readonly Permission[];
}

/** Adds a permission's pairs to `pairs`, each `X_ANY` with its `X_OWN`. */
function addPairs(pairs: Set<string>, p: Permission): void {
  for (const action of p.actions) {
    pairs.add(`${p.resource}:${action}`);
    if (action.endsWith("_ANY")) pairs.add(`${p.resource}:${action.slice(0, -4)}_OWN`);
  }
}

/** Each role's effective pairs, computed once: `can` runs on every field of every request. */
const ROLE_PAIRS = {} as Record<Role, ReadonlySet<string>>;
for (const role of ROLES) {
  const pairs = new Set<string>();
  for (const p of ROLE_PERMISSIONS[role]) addPairs(pairs, p);
  ROLE_PAIRS[role] = pairs;
}

/**
 * The effective permissions as a set of `RESOURCE:ACTION` strings.
 * @example effectivePairs({ roles: ["GUEST"], permissions: [] }).has("ME:READ_OWN") // true
 */
function effectivePairs(grants: Grants): ReadonlySet<string> {
  const pairs = new Set<string>();
  for (const role of grants.roles) for (const pair of ROLE_PAIRS[role]) pairs.add(pair);
  for (const p of grants.permissions) addPairs(pairs, p);
  return pairs;
}

/**
 * The effective permissions grouped by resource, in enumeration order.
 * @example effectivePermissions({ roles: [], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] })
 * // [{ resource: "DOCKER", actions: ["READ_ANY", "READ_OWN"] }]
 */
export function effectivePermissions(grants: Grants): Permission[] {
  return groupPermissions(effectivePairs(grants));
}

/**
 * True when `grants` allow `action` on `resource`.
 * @example can({ roles: ["VIEWER"], permissions: [] }, "API_KEY", "READ_ANY") // false
 */
export function can(grants: Grants, resource: Resource, action: AuthAction): boolean {
  return canPair(grants, `${resource}:${action}`, resource, action);
}

/** `can`, for a caller that holds `pair` (`RESOURCE:ACTION`) already joined: GraphQL checks one per field. */
export function canPair(grants: Grants, pair: string, resource: Resource, action: AuthAction): boolean {
  for (const role of grants.roles) if (ROLE_PAIRS[role].has(pair)) return true;
  const any = action.endsWith("_OWN") ? (`${action.slice(0, -4)}_ANY` as AuthAction) : undefined;
  return grants.permissions.some((p) => p.resource === resource && (p.actions.includes(action) || (any !== undefined && p.actions.includes(any))));
}

/**
 * The pairs `target` would have that `actor` does not: empty when `actor` may hand out `target`.
 * No escalation: a key may create or update only keys whose effective permissions it holds itself.
 * @example escalation({ roles: ["VIEWER"], permissions: [] }, { roles: ["ADMIN"], permissions: [] }).length > 0 // true
 */
export function escalation(actor: Grants, target: Grants): string[] {
  const held = effectivePairs(actor);
  return [...effectivePairs(target)].filter((pair) => !held.has(pair));
}

/** True when `actor` holds every effective permission of `target`. */
export function canGrant(actor: Grants, target: Grants): boolean {
  return escalation(actor, target).length === 0;
}
