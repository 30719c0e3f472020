/**
 * Validation of everything a person or a client types: one set of valibot schemas serves the CLI
 * flags, the interactive prompts and the GraphQL inputs, so all three accept exactly the same things.
 * The schemas of names and free text are in ./text-input.ts, those of roles and permissions in
 * ./access-input.ts; here is a whole create request, `parseInput`, which turns a schema's first issue
 * into one `ServiceError`, and the check of a key id.
 */
import * as v from "valibot";
import type { CreateKeyInput, Resource } from "./model.ts";
import { ServiceError } from "./errors.ts";
import { parsePresets, presetGrants } from "./presets.ts";
import { DescriptionSchema, NameSchema } from "./text-input.ts";
import { type ListInput, PermissionsSchema, type PermissionsInput, RolesSchema } from "./access-input.ts";

export { DescriptionSchema, LookupNameSchema, NAME_MAX, NAME_RULE, NameSchema, ReasonSchema } from "./text-input.ts";
export { PermissionsSchema, RolesSchema } from "./access-input.ts";

export const NEED_ROLE_OR_PERMISSION = "Please add at least one role or permission to the key.";

/** A create request before validation. */
interface CreateKeyInputShape {
  name: string | undefined;
  description: string | undefined;
  roles: ListInput;
  permissions: PermissionsInput;
}

/** Everything needed to create a key; at least one role or permission. */
export const CreateKeySchema: v.GenericSchema<CreateKeyInputShape, CreateKeyInput> = v.pipe(
  v.object({
    name: NameSchema,
    description: DescriptionSchema,
    roles: RolesSchema,
    permissions: PermissionsSchema,
  }),
  v.check((input) => input.roles.length + input.permissions.length > 0, NEED_ROLE_OR_PERMISSION),
);

/**
 * Validates with a schema and returns the typed output, or throws one `ServiceError("INVALID_INPUT")`
 * whose message is the first problem found, stated for a person.
 *
 * @example
 * const name = parseInput(NameSchema, "deploy key"); // "deploy key"
 */
export function parseInput<const S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortEarly: true });
  if (result.success) return result.output;
  throw new ServiceError("INVALID_INPUT", result.issues[0].message);
}

/**
 * Validates a create request. `preset`: preset names (lib/core/presets.ts) whose roles and permissions
 * the key holds besides `roles` and `permissions`.
 * @example parseCreateInput({ name: "ci", roles: "admin" })
 */
export function parseCreateInput(input: {
  name?: unknown;
  description?: unknown;
  roles?: unknown;
  permissions?: unknown;
  preset?: unknown;
}): CreateKeyInput {
  const { preset, ...rest } = input;
  return parseInput(CreateKeySchema, preset == null ? rest : withPresets(rest, preset)) as CreateKeyInput;
}

/** `input` with the roles and permissions of the presets `preset` names added to its own. */
export function withPresets<T extends { roles?: unknown; permissions?: unknown }>(
  input: T,
  preset: unknown,
): T & { roles: string[]; permissions: (string | { resource: string; actions: string[] })[] } {
  const { roles, pairs } = presetGrants(parsePresets(preset));
  const asList = (value: unknown) => (value == null ? [] : Array.isArray(value) ? value : [value]);
  return { ...input, roles: [...asList(input.roles), ...roles], permissions: [...asList(input.permissions), ...pairs] };
}

export type { Resource };
export { groupPermissions, permissionPairs } from "./model.ts";

const KEY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * True for a key id as the store makes them (a lower-case UUID). Anything else names no key: it is
 * "not found" without a store access, so an id like `..`, `x.tmp` or one holding NUL never reaches a
 * file name or a Redis key.
 */
export const isKeyId = (id: unknown): id is string => typeof id === "string" && KEY_ID.test(id);
