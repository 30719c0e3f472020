/**
 * The rule of each field: the permission it needs and how it resolves. Every field names the
 * permission it needs; a key without it gets `null` for that field and a `FORBIDDEN` error (a
 * standard partial result). Input goes through the same valibot schemas as the CLI.
 */
import { ACTIONS, type Actor, type ApiKeyInfo, type AuthAction, type KeyPatch, type Permission, type Resource, RESOURCES, ROLES, type Role } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, NameSchema, parseCreateInput, parseInput, PermissionsSchema, RolesSchema } from "../core/input.ts";
import { checkLabels } from "../core/labels.ts";
import { controlsOf, controlsPatch } from "./credits.ts";
import { parseFilter } from "../core/filter.ts";
import { pageSize, parseCursor } from "../core/paging.ts";
import { pageKeys } from "../store/paging.ts";
import { PRESETS } from "../core/presets.ts";
import { can, canPair, effectivePermissions, escalation, type Grants } from "../core/policy.ts";
import { MAX_GRACE_MS, parseInstant, untilOf } from "../core/lifecycle.ts";
import type { KeyStore } from "../store/key-store.ts";
import { type AuditContext, auditLog } from "./audit-log.ts";
import { USAGE_QUERY } from "./usage.ts";

/** What every resolver sees: the authenticated key and the store. */
export type GraphQLContext = {
  key: ApiKeyInfo;
  store: KeyStore;
  /** This request's `store.list()`, once asked for. */
  listed?: Promise<ApiKeyInfo[]>;
  /** Notes a key's use (the service's last-use recorder; a no-op when it records none); absent: the store's own recorder. */
  seen?: (id: string) => void;
} & Pick<AuditContext, "audited">;

type Args = Record<string, any>;
type Resolver = (args: Args, context: GraphQLContext, source: any) => unknown;

/** A field's permission: `RESOURCE:ACTION`, where an `_OWN` action is checked against the id the field acts on. */
export interface Rule {
  needs: `${Resource}:${AuthAction}`;
  /** For `_ANY` rules: the id the field acts on; holding the matching `_OWN` action suffices when it is the caller's. */
  own?: (args: Args) => readonly string[];
  /** The answer depends on nothing but the caller's key and the arguments: not on the store, the host or the clock. */
  keyOnly?: true;
  resolve: Resolver;
}

function forbidden(message: string): ServiceError {
  return new ServiceError("FORBIDDEN", message);
}

/** Throws `FORBIDDEN` unless the caller's key holds what `rule` needs for these arguments. */
export function authorize(rule: Rule, args: Args, context: GraphQLContext): void {
  const { resource, action, ownAction } = needsOf(rule);
  if (canPair(context.key, rule.needs, resource, action)) return;
  const ids = rule.own?.(args);
  if (ids && ids.length > 0 && ids.every((id) => id === context.key.id) && can(context.key, resource, ownAction)) return;
  throw forbidden(`Forbidden: this API key lacks the permission ${rule.needs}`);
}

type Needs = { resource: Resource; action: AuthAction; ownAction: AuthAction };
/** Each rule's `needs`, split once: `authorize` runs for every field of every request. */
const split = new WeakMap<Rule, Needs>();

function needsOf(rule: Rule): Needs {
  let needs = split.get(rule);
  if (!needs) {
    const [resource, action] = rule.needs.split(":") as [Resource, AuthAction];
    split.set(rule, needs = { resource, action, ownAction: action.replace(/_ANY$/, "_OWN") as AuthAction });
  }
  return needs;
}

/** Refuses to create or update a key with permissions the caller does not hold itself. */
function noEscalation(actor: Grants, target: Grants): void {
  const extra = escalation(actor, target);
  if (extra.length) {
    const shown = extra.slice(0, 5).join(", ") + (extra.length > 5 ? `, and ${extra.length - 5} more` : "");
    throw forbidden(`Forbidden: an API key can only grant permissions it holds itself; missing ${shown}`);
  }
}

/**
 * A key that expires (or is in its grace period) cannot make a key outlive it: what it creates, or an
 * expiry it sets, must end no later than itself. So a temporary key stays temporary, and so does all it made.
 */
function noOutliving(key: ApiKeyInfo, expiresAt: unknown): void {
  const until = Math.min(untilOf(key.expiresAt), untilOf(key.graceUntil));
  if (until === Infinity) return;
  if (expiresAt == null || parseInstant(expiresAt, "expiresAt") > until) {
    throw forbidden(`Forbidden: this API key stops working at ${new Date(until).toISOString()}; a key it creates or changes must expire no later (give expiresAt)`);
  }
}

async function target(store: KeyStore, id: string): Promise<ApiKeyInfo> {
  const found = await store.get(id);
  if (!found) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
  return found;
}

const grants = (roles: Role[] = [], permissions: Permission[] = []): Grants => ({ roles, permissions });

/** The calling key, as the audit trail names who made a change. */
const actorOf = (key: ApiKeyInfo): Actor => ({ kind: "key", id: key.id, name: key.name });

/** `CreateApiKeyInput.graceSeconds` in ms, checked: only with overwrite, 1 s to 24 h. */
function graceOf(input: Args): number | undefined {
  const seconds = input.graceSeconds;
  if (seconds == null) return undefined;
  if (!input.overwrite) throw new ServiceError("INVALID_INPUT", "graceSeconds needs overwrite: true (it keeps the replaced key's secret working)");
  if (!(seconds >= 1 && seconds * 1000 <= MAX_GRACE_MS)) {
    throw new ServiceError("INVALID_INPUT", `graceSeconds is from 1 to ${MAX_GRACE_MS / 1000} (24 hours) (got ${seconds})`);
  }
  return seconds * 1000;
}

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
  ...USAGE_QUERY,
};

/** The rules of the `Mutation.apiKey` fields. */
export const API_KEY_MUTATIONS: Readonly<Record<string, Rule>> = {
  create: {
    needs: "API_KEY:CREATE_ANY",
    resolve: async ({ input }, { key, store }) => {
      // Overwriting replaces (deletes) whatever key holds the name.
      if (input.overwrite && !can(key, "API_KEY", "DELETE_ANY")) {
        throw forbidden("Forbidden: overwrite replaces an existing key and needs API_KEY:DELETE_ANY");
      }
      // GraphQL sends `null` for an omitted optional field; the shared schemas expect it absent.
      const parsed = parseCreateInput({
        name: input.name,
        description: input.description ?? undefined,
        roles: input.roles ?? undefined,
        permissions: input.permissions ?? undefined,
        preset: input.preset ?? undefined,
      });
      const graceMs = graceOf(input);
      noEscalation(key, parsed);
      noOutliving(key, input.expiresAt);
      // The store checks expiresAt (future, at most 3650 days away), naming the field in its message.
      const expiry = input.expiresAt == null ? {} : { expiresAt: input.expiresAt as string };
      const labels = input.labels == null ? {} : { labels: checkLabels(input.labels) };
      const limits = controlsOf(input); // rate limits and credits
      return store.create({ ...parsed, ...expiry, ...labels, ...limits }, { overwrite: Boolean(input.overwrite), graceMs, actor: actorOf(key) });
    },
  },
  update: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.id],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.id);
      const patch: KeyPatch = {};
      if (input.name != null) patch.name = parseInput(NameSchema, input.name);
      if (input.description !== undefined) patch.description = parseInput(DescriptionSchema, input.description ?? "") ?? "";
      if (input.roles != null) patch.roles = parseInput(RolesSchema, input.roles);
      if (input.permissions != null) patch.permissions = parseInput(PermissionsSchema, input.permissions);
      // null removes the expiry; a time is checked by the store like on create.
      if (input.expiresAt !== undefined) patch.expiresAt = input.expiresAt;
      if (input.labels != null) patch.labels = checkLabels(input.labels) ?? {};
      Object.assign(patch, controlsPatch(input)); // rate limits and credits
      if (input.disabled != null) patch.disabled = input.disabled;
      if (input.disabledReason != null) patch.disabledReason = input.disabledReason; // checked by the store
      noEscalation(key, current);
      noEscalation(key, { roles: patch.roles ?? current.roles, permissions: patch.permissions ?? current.permissions });
      if (input.expiresAt !== undefined) noOutliving(key, input.expiresAt);
      return store.update(input.id, patch, { actor: actorOf(key) });
    },
  },
  delete: {
    needs: "API_KEY:DELETE_ANY",
    own: (a) => a.input.ids,
    resolve: async ({ input }, { key, store }) => {
      const ids = [...new Set<string>(input.ids)];
      if (ids.length === 0) throw new ServiceError("INVALID_INPUT", "Give at least one API key id to delete");
      const found = await Promise.all(ids.map((id) => store.get(id)));
      const missing = ids.filter((_, i) => !found[i]);
      if (missing.length) throw new ServiceError("NOT_FOUND", `No API key found with id: ${missing.join(", ")}`);
      const deleted = await Promise.all(ids.map((id) => store.deleteById(id, { actor: actorOf(key) })));
      return deleted.every(Boolean);
    },
  },
  addRole: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.apiKeyId],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.apiKeyId);
      const roles = ROLES.filter((r) => r === input.role || current.roles.includes(r));
      noEscalation(key, current);
      noEscalation(key, { roles, permissions: current.permissions });
      await store.update(current.id, { roles }, { actor: actorOf(key) });
      return true;
    },
  },
  removeRole: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.apiKeyId],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.apiKeyId);
      noEscalation(key, current);
      await store.update(current.id, { roles: current.roles.filter((r) => r !== input.role) }, { actor: actorOf(key) });
      return true;
    },
  },
  // A new secret for a key is as much as any change to it: the permission of update, and no escalation (the
  // caller receives a secret with the key's permissions), nor a secret outliving a temporary caller.
  rotate: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.id],
    resolve: async ({ id, graceSeconds }, { key, store }) => {
      const current = await target(store, id);
      if (current.graceUntil) throw new ServiceError("NOT_FOUND", `API key ${id} was replaced and only works until ${current.graceUntil} (its grace period): it can be deleted, not rotated`);
      const graceMs = graceSeconds == null ? undefined : graceOf({ overwrite: true, graceSeconds });
      noEscalation(key, current);
      noOutliving(key, current.expiresAt);
      return store.rotate(id, { graceMs, actor: actorOf(key) });
    },
  },
  deleteExpired: {
    needs: "API_KEY:DELETE_ANY",
    resolve: (_, { key, store }) => store.deleteExpired({ actor: actorOf(key) }),
  },
};

/** The permission each field needs, `"Query.apiKeys": "API_KEY:READ_ANY"`: for docs and tests. */
export const FIELD_PERMISSIONS: Readonly<Record<string, string>> = Object.fromEntries([
  ...Object.entries(QUERY).map(([field, rule]) => [`Query.${field}`, rule.needs]),
  ...Object.entries(API_KEY_MUTATIONS).map(([field, rule]) => [`Mutation.apiKey.${field}`, rule.needs]),
]);
