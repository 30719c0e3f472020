/**
 * The vocabulary of the service: roles, permission resources and actions, and the shape of a key.
 * Enumerations are `as const` arrays so they serve as runtime lists and as types.
 */

/** Roles a key can hold. */
export const ROLES = ["ADMIN", "CONNECT", "VIEWER", "GUEST"] as const;
export type Role = (typeof ROLES)[number];

/** What each role means, for help text and prompts. */
export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  ADMIN: "Full system access",
  CONNECT: "Access to the remote-connectivity (connect) features",
  VIEWER: "Read-only access",
  GUEST: "Restricted access",
};

/** Resources a permission can name. */
export const RESOURCES = [
  "ACTIVATION_CODE", "API_KEY", "ARRAY", "CLOUD", "CONFIG", "CONNECT", "CONNECT__REMOTE_ACCESS",
  "CUSTOMIZATIONS", "DASHBOARD", "DISK", "DISPLAY", "DOCKER", "FLASH", "INFO", "LOGS", "ME",
  "NETWORK", "NOTIFICATIONS", "ONLINE", "OS", "OWNER", "PERMISSION", "REGISTRATION", "SERVERS",
  "SERVICES", "SHARE", "VARS", "VMS", "WELCOME",
] as const;
export type Resource = (typeof RESOURCES)[number];

/** Actions a permission can grant on a resource. */
export const ACTIONS = [
  "CREATE_ANY", "CREATE_OWN", "READ_ANY", "READ_OWN",
  "UPDATE_ANY", "UPDATE_OWN", "DELETE_ANY", "DELETE_OWN",
] as const;
export type AuthAction = (typeof ACTIONS)[number];

/** The actions granted on one resource. */
export interface Permission {
  resource: Resource;
  actions: AuthAction[];
}

/** What the store returns about a key: everything but the secret, which is never kept. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  description?: string;
  roles: Role[];
  permissions: Permission[];
  createdAt: string;
}

/** A key as persisted: its public fields plus the SHA-256 (hex) of its secret. */
export interface StoredKey extends ApiKeyInfo {
  hash: string;
}

/** The validated input for creating a key. */
export interface CreateKeyInput {
  name: string;
  description?: string;
  roles: Role[];
  permissions: Permission[];
}

/** The result of creating a key: the only place the secret ever appears. */
export interface CreatedKey extends ApiKeyInfo {
  key: string;
}

/** Groups `RESOURCE:ACTION` pairs by resource, both in enumeration order, without duplicates. */
export function groupPermissions(pairs: Iterable<string>): Permission[] {
  const wanted = new Set(pairs);
  return RESOURCES.flatMap((resource): Permission[] => {
    const actions = ACTIONS.filter((action) => wanted.has(`${resource}:${action}`));
    return actions.length ? [{ resource, actions }] : [];
  });
}

/** Flattens permissions into `RESOURCE:ACTION` pairs. */
export function permissionPairs(permissions: readonly Permission[]): string[] {
  return permissions.flatMap((p) => p.actions.map((a) => `${p.resource}:${a}`));
}
