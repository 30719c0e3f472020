/**
 * Validation of everything a person or a client types: one set of valibot schemas serves the CLI
 * flags, the interactive prompts and the GraphQL inputs, so all three accept exactly the same things.
 */
import * as v from "valibot";
import {
  ACTIONS,
  type CreateKeyInput,
  groupPermissions,
  type Permission,
  RESOURCES,
  type Resource,
  type Role,
  ROLES,
} from "./model.ts";
import { ServiceError } from "./errors.ts";
import { containsSecret, redactSecrets } from "./secret.ts";
import { isPlainName, isPrintableAscii, nameLookAlikeProblem } from "./_names.ts";
import { once } from "./_once.ts";
import { didYouMean } from "./suggest.ts";
import { parsePresets, presetGrants } from "./presets.ts";

export const NAME_MAX = 100;
const DESCRIPTION_MAX = 1000;

export const NAME_RULE =
  "API key name must contain only letters, numbers, and spaces (Unicode letters are supported)";
export const NEED_ROLE_OR_PERMISSION = "Please add at least one role or permission to the key.";

// Letters, digits, spaces, and the combining marks scripts such as Devanagari or Tamil are written
// with: a mark must follow a letter (or another mark) and belong to a script of its own. Inherited and
// Common marks (U+0336 long stroke overlay, U+20DD enclosing circle) would draw over any letter, and
// so would enclosing marks of a script (U+0489 Cyrillic millions sign): those are refused.
// Built on first use, as the Unicode property patterns below are: V8 parses a pattern's classes when the
// literal is first evaluated (this one ~0.4-0.8 ms), and a plain ASCII name or description never needs them.
const NAME_CHARS = once(() =>
  /^(?:[\p{L}\p{N} ]|(?<=[\p{L}\p{M}])(?![\p{Script=Inherited}\p{Script=Common}\p{Me}])\p{M})+$/u
);
// C0/C1 controls and bidirectional overrides would let a description rewrite the terminal or a log line.
const UNSAFE_TEXT = once(() => /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u);

/**
 * A name to look a key up by: trimmed, NFC-normalized, letters (any script, with their script's
 * combining marks), digits and spaces, 1 to
 * 100 characters. Looser than `NameSchema`, so keys named before its look-alike rules can still be found.
 */
export const LookupNameSchema: v.GenericSchema<string | undefined, string> = v.pipe(
  v.optional(v.string("API key name must be a string"), ""),
  v.trim(),
  // A plain ASCII name (see isPlainName) is its own NFC form and passes NAME_CHARS: neither is computed for it.
  v.transform((s) => (isPlainName(s) ? s : s.normalize("NFC"))),
  v.nonEmpty("API key name is required"),
  v.check((s) => [...s].length <= NAME_MAX, `API key name must be at most ${NAME_MAX} characters`),
  v.check((s) => isPlainName(s) || NAME_CHARS().test(s), NAME_RULE),
);

/** A new key name: the lookup rule, and nothing that could pass for another name (see lib/core/_names.ts). */
export const NameSchema: v.GenericSchema<string | undefined, string> = v.pipe(
  LookupNameSchema,
  v.rawCheck(({ dataset, addIssue }) => {
    const problem = dataset.typed ? nameLookAlikeProblem(dataset.value) : null;
    if (problem) addIssue({ message: problem });
  }),
  // Names are stored in clear and listed: a secret's body pasted here (without `sapi_`) would leak.
  v.check((s) => !containsSecret(s), "API key name must not contain an API key secret: it would be stored in clear"),
);

/** An optional free-text description, at most 1,000 characters; blank means none. */
export const DescriptionSchema: v.GenericSchema<string | undefined, string | undefined> = v.pipe(
  v.optional(v.string("Description must be a string"), ""),
  v.trim(),
  v.check((s) => [...s].length <= DESCRIPTION_MAX, `Description must be at most ${DESCRIPTION_MAX} characters`),
  // Printable ASCII (an empty description too) holds none of them: the Unicode pattern is not built for it.
  v.check((s) => isPrintableAscii(s) || !UNSAFE_TEXT().test(s), "Description must not contain control or bidirectional-override characters"),
  // Descriptions are stored in clear and listed: a secret pasted here would leak. The checksum makes this exact.
  v.check((s) => !containsSecret(s), "Description must not contain an API key secret (sapi_…): it would be stored in clear"),
  v.transform((s) => s || undefined),
);

const REASON_MAX = 500;
/** Why a key was disabled: held to a description's rules (no secret, no control characters), at most 500 characters. */
export const ReasonSchema: v.GenericSchema<string | undefined, string | undefined> = v.pipe(
  v.optional(v.string("Reason must be a string"), ""),
  v.trim(),
  v.check((s) => [...s].length <= REASON_MAX, `Reason must be at most ${REASON_MAX} characters`),
  v.check((s) => isPrintableAscii(s) || !UNSAFE_TEXT().test(s), "Reason must not contain control or bidirectional-override characters"),
  v.check((s) => !containsSecret(s), "Reason must not contain an API key secret (sapi_…): it would be stored in clear"),
  v.transform((s) => s || undefined),
);

// The schemas' types are written out (as valibot's GenericSchema) so the package's public API has explicit
// types, as JSR requires; the inferred pipe types are long and would change with every rule.
/** A comma-separated list, or a list of such strings. */
type ListInput = string | string[] | undefined;
/** Permissions as a person or a client gives them. */
type PermissionsInput = string | (string | { resource: string; actions: string[] })[] | undefined;
/** A create request before validation. */
interface CreateKeyInputShape {
  name: string | undefined;
  description: string | undefined;
  roles: ListInput;
  permissions: PermissionsInput;
}

/**
 * Splits `"a, b,,c"` or `["a", "b,c"]` into trimmed, non-blank items, in the case they were typed, so
 * that `show` finds a secret pasted there before quoting it.
 */
function toItems(input: string | string[]): string[] {
  const parts = (Array.isArray(input) ? input : [input]).flatMap((s) => s.split(","));
  return parts.map((s) => s.trim()).filter(Boolean);
}

const listInput = v.optional(v.union([v.string(), v.array(v.string())], "Expected a comma-separated list"), []);
/**
 * Quotes a rejected value for a message. Cut to 40 characters, with invisible, control and bidi
 * characters escaped and anything shaped like a secret elided, so a hostile or mistaken value can
 * neither flood a log, rewrite the terminal line nor leak a key pasted into the wrong flag. `upper`:
 * in upper case, as roles and permissions are compared, once the secrets in the value as given are elided
 * (an upper-cased secret no longer passes its checksum).
 */
const show = (value: unknown, upper = false) => {
  const elided = redactSecrets(String(value));
  const chars = [...(upper ? elided.toUpperCase() : elided)];
  const text = chars.length > 40 ? chars.slice(0, 40).join("") + "…" : chars.join("");
  return JSON.stringify(text).replace(/[\p{C}\p{Zl}\p{Zp}]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
};

/** " Did you mean 'X'?" for a short mistyped word; nothing for anything long (a pasted secret, a sentence). */
const guess = (value: unknown, known: readonly string[]) =>
  typeof value === "string" && value.length <= 40 ? didYouMean(value, known) : "";

/** Roles, comma-separated or as a list, case-insensitive; unknown roles are errors naming the valid ones. */
export const RolesSchema: v.GenericSchema<ListInput, Role[]> = v.pipe(
  listInput,
  v.transform(toItems),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const upper = dataset.value.map((item) => item.toUpperCase());
    const unknown = upper.findIndex((role) => !(ROLES as readonly string[]).includes(role));
    if (unknown < 0) return ROLES.filter((role) => upper.includes(role));
    addIssue({ message: `Unknown role ${show(dataset.value[unknown], true)}.${guess(upper[unknown], ROLES)} Valid roles: ${ROLES.join(", ")}` });
    return NEVER;
  }),
);

/**
 * Checks one `RESOURCE:ACTION` pair, either part in any case; returns its canonical (upper-case) form or a
 * message saying what is wrong.
 */
function checkPair(resource: string, action: string | undefined, raw: string): string | { message: string } {
  if (!resource || !action) {
    return { message: `Invalid permission ${show(raw, true)}: expected RESOURCE:ACTION, for example DOCKER:READ_ANY` };
  }
  if (!(RESOURCES as readonly string[]).includes(resource.toUpperCase())) {
    return { message: `Unknown permission resource ${show(resource, true)}.${guess(resource.toUpperCase(), RESOURCES)} Valid resources: ${RESOURCES.join(", ")}` };
  }
  if (!(ACTIONS as readonly string[]).includes(action.toUpperCase())) {
    return { message: `Unknown permission action ${show(action, true)}.${guess(action.toUpperCase(), ACTIONS)} Valid actions: ${ACTIONS.join(", ")}` };
  }
  return `${resource}:${action}`.toUpperCase();
}

const PermissionObject = v.object({ resource: v.string(), actions: v.array(v.string()) });

/** Turns every accepted permission shape into a flat list of `RESOURCE:ACTION` pairs, or an issue. */
const toPairs = v.rawTransform<(string | v.InferOutput<typeof PermissionObject>)[] | string, string[]>(
  ({ dataset, addIssue, NEVER }) => {
    const pairs: string[] = [];
    const items = Array.isArray(dataset.value) ? dataset.value : [dataset.value];
    for (const item of items) {
      const checked = typeof item === "string"
        ? toItems(item).map((raw) => {
          const [resource, action, ...rest] = raw.split(":").map((s) => s.trim());
          return checkPair(resource, rest.length ? undefined : action, raw);
        })
        : item.actions.map((a) => checkPair(item.resource, a, `${item.resource}:${a}`));
      for (const result of checked) {
        if (typeof result !== "string") return (addIssue(result), NEVER);
        pairs.push(result);
      }
    }
    return pairs;
  },
);

/**
 * Permissions as `"RESOURCE:ACTION,..."`, a list of such strings, or a list of `{ resource, actions }`
 * (the GraphQL shape); case-insensitive. The result is grouped by resource.
 */
export const PermissionsSchema: v.GenericSchema<PermissionsInput, Permission[]> = v.pipe(
  v.optional(v.union([v.string(), v.array(v.union([v.string(), PermissionObject]))], "Permissions must be RESOURCE:ACTION pairs"), []),
  toPairs,
  v.transform((pairs: string[]) => groupPermissions(pairs)),
);

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
