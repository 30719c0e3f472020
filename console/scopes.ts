// The consent page's input, checked before anything is shown: the scopes an app asks for (Unraid's grammar)
// and where the browser may be sent back to. Pure functions: tests/http/console-scopes.test.ts runs them in Node.
import { ACTIONS, type AuthAction, type Permission, RESOURCES, type Resource, ROLES, type Role } from "../lib/core/model.ts";

/** What a `scopes` parameter asks for, or the scopes that could not be read (each shown, none dropped). */
export interface Scopes {
  roles: Role[];
  permissions: Permission[];
  unknown: string[];
}

const lookup = <T extends string>(list: readonly T[], word: string): T | undefined => list.find((item) => item === word.toUpperCase());

/**
 * Reads Unraid's scope grammar: comma- or space-separated scopes, each `role:<role>` or
 * `<resource>[+<resource>…]:<action>[+<action>…]`, case-insensitive.
 * @example parseScopes("role:viewer,docker+vms:read_any+update_any")
 */
export function parseScopes(raw: string): Scopes {
  const roles = new Set<Role>();
  const pairs = new Map<Resource, Set<AuthAction>>();
  const unknown: string[] = [];
  for (const scope of raw.split(/[\s,]+/).filter(Boolean)) {
    const [left, right, ...rest] = scope.split(":");
    if (right === undefined || rest.length || !left || !right) {
      unknown.push(scope);
      continue;
    }
    if (left.toLowerCase() === "role") {
      const found = right.split("+").map((word) => lookup(ROLES, word));
      if (found.every(Boolean)) found.forEach((role) => roles.add(role!));
      else unknown.push(scope);
      continue;
    }
    const resources = left.split("+").map((word) => lookup(RESOURCES, word));
    const actions = right.split("+").map((word) => lookup(ACTIONS, word));
    if (!resources.every(Boolean) || !actions.every(Boolean)) {
      unknown.push(scope);
      continue;
    }
    for (const resource of resources as Resource[]) {
      const set = pairs.get(resource) ?? new Set<AuthAction>();
      for (const action of actions as AuthAction[]) set.add(action);
      pairs.set(resource, set);
    }
  }
  const permissions = RESOURCES.filter((r) => pairs.has(r)).map((resource) => ({
    resource,
    actions: ACTIONS.filter((a) => pairs.get(resource)!.has(a)),
  }));
  return { roles: ROLES.filter((r) => roles.has(r)), permissions, unknown };
}

const LOOPBACK = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/i;

/**
 * The `redirect_uri` an app gave, if the browser may be sent there: `https:`, or `http:` to this machine
 * (`localhost`, 127.0.0.0/8, `[::1]`), absolute, with no user name or password and no fragment. Otherwise the
 * reason it is refused.
 */
export function checkRedirect(raw: string | null): { url: URL } | { problem: string } {
  if (!raw) return { problem: "The app gave no redirect_uri: there is nowhere to send the key." };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: "The app's redirect_uri is not an absolute URL." };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { problem: `The app's redirect_uri uses ${url.protocol}, which is refused: only https: (or http: to this machine) is allowed.` };
  }
  if (url.protocol === "http:" && !LOOPBACK.test(url.hostname)) {
    return { problem: `The app's redirect_uri sends the key over plain http to ${url.hostname}; only https:, or http: to localhost, 127.0.0.0/8 or [::1], is allowed.` };
  }
  if (url.username || url.password) return { problem: "The app's redirect_uri holds a user name or password, which is refused." };
  if (raw.includes("#")) return { problem: "The app's redirect_uri has a fragment (#…), which is refused." };
  return { url };
}

/** Where to send the browser: `redirect_uri` with `params` added (its own query kept); `state` is copied exactly. */
export function redirectTo(url: URL, params: Record<string, string>, state: string | null): string {
  const target = new URL(url.href);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  if (state !== null) target.searchParams.set("state", state);
  return target.href;
}

/** A key's grants in the scope grammar: `role:viewer`, then `docker:read_any+update_any` per resource. */
export function toScopes(roles: readonly string[], permissions: readonly { resource: string; actions: readonly string[] }[]): string {
  return [
    ...roles.map((role) => `role:${role.toLowerCase()}`),
    ...permissions.map((p) => `${p.resource.toLowerCase()}:${p.actions.map((a) => a.toLowerCase()).join("+")}`),
  ].join(",");
}

/**
 * The "create from template" link for a key: /authorize with its name, description and grants and no
 * redirect_uri, so the page fills in the create form instead of sending a key anywhere. Holds no secret.
 */
export function templateHref(base: string, key: { name: string; description?: string | null; roles: readonly string[]; permissions: readonly { resource: string; actions: readonly string[] }[] }): string {
  const url = new URL("authorize", base);
  url.searchParams.set("name", key.name);
  if (key.description) url.searchParams.set("description", key.description);
  url.searchParams.set("scopes", toScopes(key.roles, key.permissions));
  return url.href;
}
