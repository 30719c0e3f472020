/**
 * The rules of the `Mutation.apiKey` fields: create, update, delete, addRole, removeRole, rotate and
 * deleteExpired, each checked against `mutation-guards.ts`. Input goes through the same valibot
 * schemas as the CLI.
 */
import { type KeyPatch, ROLES } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, NameSchema, parseCreateInput, parseInput, PermissionsSchema, RolesSchema } from "../core/input.ts";
import { checkLabels } from "../core/labels.ts";
import { checkAllowFrom } from "../core/allow-from.ts";
import { can } from "../core/policy.ts";
import { controlsOf, controlsPatch } from "./credits.ts";
import { forbidden, type Rule } from "./field-rule.ts";
import { actorOf, graceOf, noEscalation, noOutliving, noUnmetering, target } from "./mutation-guards.ts";

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
      const allowed = input.allowFrom == null ? {} : { allowFrom: checkAllowFrom(input.allowFrom) };
      const limits = controlsOf(input); // rate limits and credits
      await noUnmetering(key, store, { credits: limits.credits, rateLimits: limits.rateLimits });
      return store.create({ ...parsed, ...expiry, ...labels, ...allowed, ...limits }, { overwrite: Boolean(input.overwrite), graceMs, actor: actorOf(key) });
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
      if (input.allowFrom != null) patch.allowFrom = checkAllowFrom(input.allowFrom);
      Object.assign(patch, controlsPatch(input)); // rate limits and credits
      if (input.disabled != null) patch.disabled = input.disabled;
      if (input.disabledReason != null) patch.disabledReason = input.disabledReason; // checked by the store
      noEscalation(key, current);
      noEscalation(key, { roles: patch.roles ?? current.roles, permissions: patch.permissions ?? current.permissions });
      if (input.expiresAt !== undefined) noOutliving(key, input.expiresAt);
      await noUnmetering(key, store, Object.fromEntries(Object.entries(patch).filter(([field]) => field === "credits" || field === "rateLimits")), input.id);
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
      // Another key's new secret is that key's use: no more than the caller's (its own keeps its counts).
      if (id !== key.id) await noUnmetering(key, store, { credits: current.credits ?? null, rateLimits: current.rateLimits ?? null });
      return store.rotate(id, { graceMs, actor: actorOf(key) });
    },
  },
  deleteExpired: {
    needs: "API_KEY:DELETE_ANY",
    resolve: (_, { key, store }) => store.deleteExpired({ actor: actorOf(key) }),
  },
};
