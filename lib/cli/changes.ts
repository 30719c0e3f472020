/**
 * What a create or update sets, field by field, as `--dry-run` previews it and `--update` reports it once
 * done: `  permissions  DOCKER:READ_ANY,VMS:UPDATE_OWN -> LOGS:READ_ANY`. Roles and permissions given to
 * `--update` replace the key's, so a report that showed only the new ones would hide what was dropped.
 */
import type { ApiKeyInfo, CreateKeyInput } from "../core/model.ts";
import { permissionPairs } from "../core/model.ts";
import { formatLabels } from "../core/labels.ts";
import { formatAllowFrom } from "../core/allow-from.ts";
import { sentenceTime } from "./format-results.ts";

export const FIELDS = ["name", "description", "roles", "permissions", "expiresAt", "labels", "allowFrom"] as const;
export type Field = (typeof FIELDS)[number];

export const LABEL: Record<Field, string> = {
  name: "name",
  description: "description",
  roles: "roles",
  permissions: "permissions",
  expiresAt: "expires",
  labels: "labels",
  allowFrom: "allow from",
};

/** The fields a create or update sets, as `--json` shows them (absent ones left out). */
export function settings(key: CreateKeyInput | ApiKeyInfo) {
  const { name, description, roles, permissions, expiresAt, labels, allowFrom } = key;
  return {
    name, ...(description ? { description } : {}), roles, permissions, ...(expiresAt ? { expiresAt } : {}), ...(labels ? { labels } : {}),
    ...(allowFrom?.length ? { allowFrom } : {}),
  };
}

/** The value of one field as a person reads it. */
export function shown(field: Field, key: CreateKeyInput | ApiKeyInfo): string {
  if (field === "roles") return key.roles.join(",") || "none";
  if (field === "permissions") return permissionPairs(key.permissions).join(",") || "none";
  if (field === "expiresAt") return key.expiresAt ? sentenceTime(key.expiresAt) : "never";
  if (field === "labels") return formatLabels(key.labels) || "none";
  if (field === "allowFrom") return formatAllowFrom(key.allowFrom) || "any address";
  return key[field] || (field === "description" ? "none" : "");
}

/** The fields whose value differs between `before` and `after`. */
export const changedFields = (before: ApiKeyInfo, after: ApiKeyInfo): Field[] =>
  FIELDS.filter((field) => JSON.stringify(after[field] ?? null) !== JSON.stringify(before[field] ?? null));

/** One line per changed field: `  roles        VIEWER -> ADMIN`. */
export const changeLines = (before: ApiKeyInfo, after: ApiKeyInfo, fields: readonly Field[]): string =>
  fields.map((field) => `  ${LABEL[field].padEnd(12)} ${shown(field, before)} -> ${shown(field, after)}\n`).join("");

/** `{ permissions: [...] }`: the changed fields' values before, for `--update --json`. */
export function fieldsBefore(before: ApiKeyInfo, fields: readonly Field[]): Record<string, unknown> {
  const all: Record<string, unknown> = settings(before);
  return Object.fromEntries(fields.map((field) => [field, all[field] ?? null]));
}
