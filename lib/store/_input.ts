/**
 * The store's own check of what it is given: the same valibot schemas and messages
 * as the CLI and GraphQL, so a library caller cannot store a key those would refuse or could not delete.
 */
import type { CreateKeyInput, KeyPatch } from "../core/model.ts";
import { checkExpiresAt } from "../core/lifecycle.ts";
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, NameSchema, parseCreateInput, parseInput, PermissionsSchema, ReasonSchema, RolesSchema } from "../core/input.ts";
import { checkLabels } from "../core/labels.ts";
import { checkRateLimits } from "../core/rate-limits.ts";
import { checkCredits } from "../core/credits.ts";
import { checkAllowFrom } from "../core/allow-from.ts";

/** A create request, validated and normalized (throws INVALID_INPUT); `now` decides whether an expiry is past. */
export function checkKeyInput(input: unknown, now: number): CreateKeyInput {
  if (typeof input !== "object" || input === null) throw new ServiceError("INVALID_INPUT", "A key needs a name and roles or permissions");
  const { name, description, roles, permissions, expiresAt, labels, rateLimits, credits, allowFrom } = input as Record<string, unknown>;
  const checked: CreateKeyInput = parseCreateInput({ name, description, roles, permissions });
  const checkedLabels = checkLabels(labels);
  if (checkedLabels) checked.labels = checkedLabels;
  const limits = rateLimits == null ? [] : checkRateLimits(rateLimits);
  if (limits.length) checked.rateLimits = limits;
  if (credits != null) checked.credits = checkCredits(credits);
  const allowed = allowFrom == null ? [] : checkAllowFrom(allowFrom);
  if (allowed.length) checked.allowFrom = allowed;
  return expiresAt === undefined || expiresAt === null ? checked : { ...checked, expiresAt: checkExpiresAt(expiresAt, now) };
}

/**
 * An update's fields, each validated like on create; only known fields are kept. A blank description
 * stays `""`, which tells `update` to remove it, and `expiresAt: null` removes the expiry.
 */
export function checkKeyPatch(patch: unknown, now: number): KeyPatch {
  if (typeof patch !== "object" || patch === null) throw new ServiceError("INVALID_INPUT", "An update needs the fields to change");
  const given = patch as Record<string, unknown>;
  const out: KeyPatch = {};
  if (given.expiresAt !== undefined) out.expiresAt = given.expiresAt === null ? null : checkExpiresAt(given.expiresAt, now);
  if (given.name !== undefined) out.name = parseInput(NameSchema, given.name);
  if (given.description !== undefined) out.description = parseInput(DescriptionSchema, given.description ?? "") ?? "";
  if (given.roles !== undefined) out.roles = parseInput(RolesSchema, given.roles);
  if (given.permissions !== undefined) out.permissions = parseInput(PermissionsSchema, given.permissions);
  if (given.labels !== undefined) out.labels = checkLabels(given.labels ?? {}) ?? {};
  if (given.rateLimits !== undefined) out.rateLimits = checkRateLimits(given.rateLimits ?? []);
  if (given.allowFrom !== undefined) out.allowFrom = checkAllowFrom(given.allowFrom ?? []);
  if (given.credits !== undefined) out.credits = given.credits === null ? null : checkCredits(given.credits);
  if (given.disabled !== undefined && typeof given.disabled !== "boolean") throw new ServiceError("INVALID_INPUT", "disabled must be true or false");
  if (given.disabledReason != null && given.disabled !== true) {
    throw new ServiceError("INVALID_INPUT", "A reason goes with disabling a key (disabled: true)");
  }
  if (given.disabled !== undefined) out.disabled = given.disabled as boolean;
  const reason = given.disabledReason == null ? undefined : parseInput(ReasonSchema, given.disabledReason);
  if (reason !== undefined) out.disabledReason = reason;
  return out;
}

/**
 * A name to look up, in the form names are stored in (trimmed, NFC). Not held to the name rules: a key
 * stored before they applied can still be found and deleted.
 */
export function lookupName(name: unknown): string {
  if (typeof name !== "string") throw new ServiceError("INVALID_INPUT", "API key name must be a string");
  return name.trim().normalize("NFC");
}
