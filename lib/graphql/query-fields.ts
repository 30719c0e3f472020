/**
 * The rules of the `Query` fields: the keys (listed, paged, filtered, one by id), the permission
 * catalogue (roles, actions, presets, effective permissions), the caller (`me`), the host (`info`),
 * the audit trail and `verifyApiKey`. Input goes through the same valibot schemas as the CLI.
 */
import { ACTIONS, type ApiKeyInfo, type Permission, RESOURCES, ROLES, type Role } from "../core/model.ts";
import { parseInput, PermissionsSchema, RolesSchema } from "../core/input.ts";
import { parseFilter } from "../core/filter.ts";
import { pageSize, parseCursor } from "../core/paging.ts";
import { pageKeys } from "../store/paging.ts";
import { PRESETS } from "../core/presets.ts";
import { effectivePermissions, type Grants } from "../core/policy.ts";
import type { KeyStore } from "../store/key-store.ts";
import { auditLog, auditTrail } from "./audit-log.ts";
import { USAGE_QUERY } from "./usage.ts";
import type { Args, Rule } from "./field-rule.ts";

/** Roles and permissions as the policy takes them. */
const grants = (roles: Role[] = [], permissions: Permission[] = []): Grants => ({ roles, permissions });

/** One page of `apiKeys(first:, after:, filter:)` (lib/store/paging.ts). */
async function page(a: Args, store: KeyStore): Promise<ApiKeyInfo[]> {
  const first = pageSize(a.first, a.after);
  const after = a.after == null ? undefined : parseCursor(a.after);
  const matches = a.filter == null ? undefined : parseFilter(a.filter);
  return await pageKeys(store, { first, after, matches }, Date.now());
}

/** The rules of the `Query` fields. */
export const QUERY: Readonly<Record<string, Rule>> = {
  // Read once per request however many aliases ask: 30 aliases must not mean 30 reads of every key.
  apiKeys: {
    needs: "API_KEY:READ_ANY",
    resolve: async (a, context) => {
      if (a.first != null || a.after != null) return await page(a, context.store);
      const keys = await (context.listed ??= context.store.list());
      if (a.filter == null) return keys;
      const matches = parseFilter(a.filter);
      const now = Date.now();
      return keys.filter((key) => matches(key, now));
    },
  },
  apiKey: { needs: "API_KEY:READ_ANY", own: (a) => [a.id], resolve: (a, { store }) => store.get(a.id) },
  apiKeyPossibleRoles: { needs: "PERMISSION:READ_ANY", keyOnly: true, resolve: () => [...ROLES] },
  apiKeyPossiblePermissions: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: () => RESOURCES.map((resource) => ({ resource, actions: [...ACTIONS] })),
  },
  apiKeyPresets: { needs: "PERMISSION:READ_ANY", keyOnly: true, resolve: () => PRESETS },
  getPermissionsForRoles: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: (a) => effectivePermissions(grants(parseInput(RolesSchema, a.roles))),
  },
  previewEffectivePermissions: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: (a) =>
      effectivePermissions(grants(parseInput(RolesSchema, a.roles ?? []), parseInput(PermissionsSchema, a.permissions ?? []))),
  },
  getAvailableAuthActions: { needs: "PERMISSION:READ_ANY", keyOnly: true, resolve: () => [...ACTIONS] },
  me: { needs: "ME:READ_OWN", keyOnly: true, resolve: (_, { key }) => key },
  online: { needs: "ONLINE:READ_ANY", keyOnly: true, resolve: () => true },
  // Each field of Info resolves itself (info.ts), so a request reads only the host facts it selects.
  info: { needs: "INFO:READ_ANY", resolve: () => ({}) },
  // Never remembered by the answer cache (not keyOnly): each request reads the trail, once per set of arguments.
  auditLog: { needs: "API_KEY:READ_ANY", resolve: auditLog },
  auditTrail: { needs: "API_KEY:READ_ANY", resolve: auditTrail },
  ...USAGE_QUERY,
};
