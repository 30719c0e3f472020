/**
 * The schemas of what a key may do: roles, and permissions as `RESOURCE:ACTION` pairs (typed, listed or
 * in the GraphQL shape), both case-insensitive. A rejected value is quoted safely and, when it looks like
 * a typo, with the nearest valid word.
 */
import * as v from "valibot";
import { ACTIONS, groupPermissions, type Permission, RESOURCES, type Role, ROLES } from "./model.ts";
import { redactSecrets } from "./secret.ts";
import { didYouMean } from "./suggest.ts";

// The schemas' types are written out (as valibot's GenericSchema) so the package's public API has explicit
// types, as JSR requires; the inferred pipe types are long and would change with every rule.
/** A comma-separated list, or a list of such strings. */
export type ListInput = string | string[] | undefined;
/** Permissions as a person or a client gives them. */
export type PermissionsInput = string | (string | { resource: string; actions: string[] })[] | undefined;

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

/**
 * " Did you mean 'X'?" for a short mistyped word, or the words it begins (`READ`: 'READ_ANY' or 'READ_OWN');
 * nothing for anything long (a pasted secret, a sentence).
 */
const guess = (value: unknown, known: readonly string[]) => {
  if (typeof value !== "string" || value.length > 40) return "";
  const typo = didYouMean(value, known);
  const begun = value === "" ? [] : known.filter((word) => word.startsWith(`${value}_`));
  return typo || (begun.length > 0 ? ` Did you mean ${begun.map((word) => `'${word}'`).join(" or ")}?` : "");
};

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
