/**
 * `apikey --update`: the patch the flags describe (roles, permissions and presets, description, name,
 * expiry, labels, rate limits, credits, IP allow-list, disabled), applied to the key --name or --id chooses, or with
 * --dry-run only previewed. The key keeps its id and its secret.
 */
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, NameSchema, parseInput, PermissionsSchema, ReasonSchema, RolesSchema, withPresets } from "../core/input.ts";
import { applyLabels, parseLabelFlag, parseUnlabelFlag } from "../core/labels.ts";
import type { CliBackend } from "./command.ts";
import type { ApikeyFlags, LifecycleValues } from "./flags.ts";
import type { Output } from "./format-results.ts";
import { formatUpdated } from "./format-scripts.ts";
import { changedFields, changeLines, fieldsBefore } from "./changes.ts";
import { chosenKey } from "./usage.ts";
import { jsonLine } from "./json-text.ts";

/** Changes the chosen key as the flags say; a usage error when they say nothing to change. */
export async function updateFromFlags(flags: ApikeyFlags, values: LifecycleValues, store: CliBackend, asJson: boolean): Promise<Output> {
  if (flags.name === undefined && flags.id === undefined) throw new ServiceError("USAGE", "--update needs --name <name> or --id <id> to choose the key");
  const patch: Parameters<CliBackend["update"]>[1] = {};
  if (flags.rename !== undefined) patch.name = parseInput(NameSchema, flags.rename);
  if (flags.description !== undefined) patch.description = parseInput(DescriptionSchema, flags.description) ?? "";
  if (flags.roles !== undefined) patch.roles = parseInput(RolesSchema, flags.roles);
  if (flags.permissions !== undefined) patch.permissions = parseInput(PermissionsSchema, flags.permissions);
  if (flags.preset !== undefined) {
    // A preset replaces the permissions (with -p's added), and adds its roles to -r's, as on create.
    const merged = withPresets({ roles: flags.roles, permissions: flags.permissions }, flags.preset);
    patch.permissions = parseInput(PermissionsSchema, merged.permissions);
    if (flags.roles !== undefined || merged.roles.length) patch.roles = parseInput(RolesSchema, merged.roles);
  }
  if (values.expiresAt) patch.expiresAt = values.expiresAt;
  if (values.clearExpiry) patch.expiresAt = null;
  Object.assign(patch, values.rateLimits ? { rateLimits: values.rateLimits } : {}, values.credits !== undefined ? { credits: values.credits } : {});
  if (values.allowFrom) patch.allowFrom = values.allowFrom;
  if (flags.disable || flags.enable) patch.disabled = Boolean(flags.disable);
  if (flags.reason !== undefined) patch.disabledReason = parseInput(ReasonSchema, String(flags.reason));
  const setLabels = flags.label !== undefined ? parseLabelFlag(String(flags.label)) : undefined;
  const unsetLabels = flags.unlabel !== undefined ? parseUnlabelFlag(String(flags.unlabel)) : undefined;
  if (Object.keys(patch).length === 0 && !setLabels && !unsetLabels) {
    throw new ServiceError(
      "USAGE",
      "--update needs something to change: --roles, --permissions, --preset, --description, --rename, --expires-in, --expires-at, --no-expiry, --label, --unlabel, --rate-limit, --no-rate-limit, --credits, --no-credits, --allow-from, --disable or --enable",
    );
  }
  const before = await chosenKey(flags, store, "update");
  if (setLabels || unsetLabels) patch.labels = applyLabels(before.labels, setLabels, unsetLabels);
  if (flags.dryRun) return await (await import("./dry-run.ts")).previewUpdate(before, patch, store, asJson);
  const after = await store.update(before.id, patch);
  const changed = changedFields(before, after);
  const output = formatUpdated(after, before, asJson);
  // What changed, as --dry-run shows it: -p and -r replace the key's, and what they dropped must show.
  if (asJson) output.stdout = jsonLine({ ...JSON.parse(output.stdout!), changed, before: fieldsBefore(before, changed) });
  else output.stdout += changeLines(before, after, changed);
  return output;
}
