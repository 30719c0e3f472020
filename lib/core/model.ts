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

import type { RateLimit } from "./rate-limits.ts";
import type { Credits, StoredCredits } from "./credits.ts";

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
  /** When the key stops working (ISO 8601, UTC); absent: never. */
  expiresAt?: string;
  /** When the key last authenticated a request, to within a minute (see `createUseRecorder`); absent: never. */
  lastUsedAt?: string;
  /** Present on a key replaced by `--overwrite --grace`: its secret keeps working until then. */
  graceUntil?: string;
  /**
   * Present on a key rotated with a grace period while its old secret still works: when that secret stops.
   * The old secret is the same key (same id, settings, state and counters), only a second way in.
   */
  retiringUntil?: string;
  /** The operator's `key=value` labels (see lib/core/labels.ts), keys sorted; absent: none. */
  labels?: Record<string, string>;
  /** Present (true) on a disabled key: refused like an expired one until enabled again. */
  disabled?: true;
  /** Why it was disabled, as the operator said (validated like a description). */
  disabledReason?: string;
  /** At most `limit` requests per `durationMs`, each (see lib/core/rate-limits.ts); absent: no limit. */
  rateLimits?: RateLimit[];
  /** Requests it may still make, and their refill (see lib/core/credits.ts); absent: no cap. */
  credits?: Credits;
  /** The addresses requests with it may come from, `<address>/<prefix>` (see lib/core/allow-from.ts); absent: any. */
  allowFrom?: string[];
}

/** A key as persisted: its public fields plus the SHA-256 (hex) of its secret, and its use counts. */
export interface StoredKey extends ApiKeyInfo {
  hash: string;
  /** After a rotation with a grace period: the old secret's hash, and when it stops (see `_rotate.ts`). */
  retiring?: { hash: string; until: string };
  /** Requests the key authenticated: in all, and per UTC day (`YYYY-MM-DD`) for the last 30 days. */
  usage?: { total: number; days: Record<string, number> };
  credits?: StoredCredits;
}

/** How much a key was used: `days` holds the UTC days of the last 30 with a use, oldest first. */
export interface KeyUsage {
  total: number;
  days: { date: string; count: number }[];
}

/** What `verifyDetailed` says of a secret (Unkey's codes, and IP_NOT_ALLOWED: outside the key's allow-list). */
export const VERIFICATION_CODES = ["VALID", "NOT_FOUND", "EXPIRED", "DISABLED", "RATE_LIMITED", "USAGE_EXCEEDED", "INSUFFICIENT_PERMISSIONS", "IP_NOT_ALLOWED"] as const;
export type VerificationCode = (typeof VERIFICATION_CODES)[number];

/** The answer to "is this key good, and for these permissions?", for services that are not ours. */
export interface KeyVerification {
  valid: boolean;
  code: VerificationCode;
  /** The key's id, name, roles, explicit permissions and expiry; null when no key has this secret. */
  id: string | null;
  name: string | null;
  roles: Role[] | null;
  permissions: Permission[] | null;
  expiresAt: string | null;
  /** Credits left after this use; null: the key has no credit limit. */
  credits: number | null;
  /** The key's rate limits after this use (`reset`: when the window ends, ISO 8601); null: none. */
  ratelimits: { name: string; limit: number; remaining: number; reset: string; exceeded: boolean }[] | null;
}

/** The validated input for creating a key. */
export interface CreateKeyInput {
  name: string;
  description?: string;
  roles: Role[];
  permissions: Permission[];
  /** When the key stops working (ISO 8601); must lie in the future. */
  expiresAt?: string;
  /** Labels, at most 20 (see lib/core/labels.ts). */
  labels?: Record<string, string>;
  /** Rate limits (see lib/core/rate-limits.ts); absent or []: none. */
  rateLimits?: RateLimit[];
  /** Credits (see lib/core/credits.ts); absent: none. */
  credits?: Credits;
  /** An IP allow-list (see lib/core/allow-from.ts); absent or []: any address. */
  allowFrom?: string[];
}

/** The fields an update may change; `expiresAt: null` removes an expiry. */
export interface KeyPatch {
  name?: string;
  description?: string;
  roles?: Role[];
  permissions?: Permission[];
  expiresAt?: string | null;
  /** The whole new set of labels; `{}` removes them all. */
  labels?: Record<string, string>;
  /** true disables the key, false enables it again. */
  disabled?: boolean;
  /** With `disabled: true`: why (validated like a description); absent: no reason kept. */
  disabledReason?: string;
  /** The whole new set of rate limits; `[]` removes them all. */
  rateLimits?: RateLimit[];
  /** New credits (the count set anew); null removes them. */
  credits?: Credits | null;
  /** The whole new allow-list; `[]` removes it (any address). */
  allowFrom?: string[];
}

/** Who made a change: a person at this host (the CLI, the library) or the key that called the service. */
export type Actor = { kind: "local"; user: string; host: string } | { kind: "key"; id: string; name: string };

/**
 * What an audit event records. `prune` is the removal of an expired key by `--delete --expired`; `rotate`
 * is a new secret for a key that keeps its id and settings; `disable` and `enable` an update that disabled
 * or enabled a key (with any other field it changed); `reuse` is not a change: a retired secret (its key
 * deleted or replaced) was presented to the service again.
 */
export const AUDIT_ACTIONS = ["create", "overwrite", "update", "delete", "prune", "import", "rotate", "disable", "enable", "reuse"] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One change to the store, as the audit trail keeps it: never a secret nor a hash. */
export interface AuditEvent {
  /** ISO 8601 time of the change. */
  at: string;
  action: AuditAction;
  /** The key changed (for an overwrite, the new key). */
  id: string;
  name: string;
  actor: Actor;
  /** update, disable, enable: the fields it changed (`name`, `description`, `roles`, `permissions`, `expiresAt`, `labels`, `disabled`, `disabledReason`, `rateLimits`, `credits`, `allowFrom`). */
  changed?: string[];
  /** overwrite: the id of the key it replaced. */
  replaced?: string;
  /** Why the change was made, when its maker said (`apikey --scan --revoke`: where the secret was found). */
  reason?: string;
}

/** The result of creating a key: the only place the secret ever appears. */
export interface CreatedKey extends ApiKeyInfo {
  key: string;
}

/** A rotated key, with its new secret. */
export interface RotatedKey extends CreatedKey {
  /**
   * The old secret of an earlier rotation with grace that this rotation stopped (a key keeps at most one),
   * by the end it had been given; null when it stopped none. Decided under the key's lock, so of two
   * rotations at once the one that ended it says so. Absent where it is not known (a remote backend).
   */
  ended?: { until: string } | null;
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
