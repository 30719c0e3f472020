/**
 * `apikey --create --dry-run` and `--update --dry-run`: everything a real run checks (input, presets,
 * expiry, labels, a taken name), then what it would create or change, with the effective permissions
 * (lib/core/policy.ts, as GraphQL `previewEffectivePermissions` answers them). Nothing is written and no
 * secret is made. A run that would fail fails the same way, with the same message and exit status.
 */
import type { ApiKeyInfo, CreateKeyInput, KeyPatch, Permission } from "../core/model.ts";
import { effectivePermissions } from "../core/policy.ts";
import { ServiceError } from "../core/errors.ts";
import { NEED_ROLE_OR_PERMISSION } from "../core/input.ts";
import { changedFields, changeLines, FIELDS, LABEL, settings, shown } from "./changes.ts";
import type { KeyBackend } from "../store/key-store.ts";
import { type Output, sentenceTime } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";

const NOTHING_CHANGED = "(dry run: nothing was changed)";

/** One line per resource: `    DOCKER  CREATE_ANY CREATE_OWN READ_ANY READ_OWN`. */
function permissionLines(permissions: readonly Permission[]): string {
  if (!permissions.length) return "    (none)\n";
  const width = Math.max(...permissions.map((p) => p.resource.length));
  return permissions.map((p) => `    ${p.resource.padEnd(width)}  ${p.actions.join(" ")}\n`).join("");
}

/**
 * What `--create` with these values would do. `replacing`: the key `--overwrite` would replace;
 * `existing` with `--if-not-exists`: the key that makes the create a no-op.
 */
export async function previewCreate(
  input: CreateKeyInput,
  options: { overwrite: boolean; ifNotExists: boolean; graceMs?: number },
  store: Pick<KeyBackend, "getByName">,
  asJson: boolean,
): Promise<Output> {
  const existing = await store.getByName(input.name);
  if (existing && options.ifNotExists) {
    if (asJson) return { stdout: jsonLine({ dryRun: true, action: "none", existing: { id: existing.id, name: existing.name } }), exitCode: 0 };
    return { stdout: `Would create nothing: API key '${existing.name}' exists (id ${existing.id}) ${NOTHING_CHANGED}\n`, exitCode: 0 };
  }
  if (existing && !options.overwrite) {
    throw new ServiceError("NAME_TAKEN", `API key with name '${input.name}' already exists. Use --overwrite to replace it.`);
  }
  const effective = effectivePermissions(input);
  const graceUntil = existing && options.graceMs ? new Date(Date.now() + options.graceMs).toISOString() : undefined;
  if (asJson) {
    const replaces = existing ? { replaces: { id: existing.id, ...(graceUntil ? { graceUntil } : {}) } } : {};
    return { stdout: jsonLine({ dryRun: true, action: existing ? "overwrite" : "create", key: settings(input), effectivePermissions: effective, ...replaces }), exitCode: 0 };
  }
  let text = `Would ${existing ? "replace" : "create"} API key '${input.name}' ${NOTHING_CHANGED}\n`;
  for (const field of FIELDS.slice(1)) text += `  ${LABEL[field].padEnd(12)} ${shown(field, input)}\n`;
  if (existing) {
    const until = graceUntil ? `keeps working until about ${sentenceTime(graceUntil)}` : "stops working at once";
    text += `  replaces     key ${existing.id}; its secret ${until}\n`;
  }
  return { stdout: `${text}  effective permissions:\n${permissionLines(effective)}`, exitCode: 0 };
}

/** What `--update` with this patch would do to `before`. */
export async function previewUpdate(before: ApiKeyInfo, patch: KeyPatch, store: Pick<KeyBackend, "getByName">, asJson: boolean): Promise<Output> {
  if (before.graceUntil) {
    throw new ServiceError("NOT_FOUND", `API key ${before.id} was replaced and only works until ${before.graceUntil} (its grace period): it can be deleted, not changed`);
  }
  const after: ApiKeyInfo = { ...before, ...patch } as ApiKeyInfo;
  if (patch.description !== undefined && !patch.description) delete after.description;
  if (patch.expiresAt === null) delete after.expiresAt;
  if (patch.labels !== undefined && Object.keys(patch.labels).length === 0) delete after.labels;
  if (patch.allowFrom?.length === 0) delete after.allowFrom;
  if (after.roles.length + after.permissions.length === 0) throw new ServiceError("INVALID_INPUT", NEED_ROLE_OR_PERMISSION);
  if (after.name !== before.name) {
    const holder = await store.getByName(after.name);
    if (holder && holder.id !== before.id) throw new ServiceError("NAME_TAKEN", `API key with name '${after.name}' already exists.`);
  }
  const changed = changedFields(before, after);
  const effective = effectivePermissions(after);
  if (asJson) {
    const payload = { dryRun: true, action: "update", id: before.id, changed, before: settings(before), after: settings(after), effectivePermissions: effective };
    return { stdout: jsonLine(payload), exitCode: 0 };
  }
  let text = `Would update API key '${before.name}' (id ${before.id}) ${NOTHING_CHANGED}\n`;
  if (!changed.length) text += "  nothing would change: the key already has these settings\n";
  text += changeLines(before, after, changed);
  return { stdout: `${text}  effective permissions:\n${permissionLines(effective)}`, exitCode: 0 };
}
