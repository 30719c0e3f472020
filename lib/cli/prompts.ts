/**
 * Interactive create and delete at a terminal (`service-api apikey --create|--delete` without
 * `--name`), over our terminal prompt (lib/cli/_tty-prompt.ts). lib/cli/commands/apikey.ts imports this file only on that path.
 *
 * Every answer is checked with the same valibot schemas as the flags; a bad answer is asked again
 * with the rule that it broke. Flags that were given are validated first and never asked for.
 * Ctrl-C or Esc at any question: `ServiceError("CANCELLED")` (exit 130) before anything is written.
 * Results are the same `Output`s as in non-interactive mode, so `--json` works the same way.
 */
import * as v from "valibot";
import type { ApikeyFlags } from "./flags.ts";
import { type Ask, type Choice, createAsk, type PromptFn } from "./_ask.ts";
import { ServiceError } from "../core/errors.ts";
import { formatCreated, formatDeleted, formatNothingChosen, formatNothingDeleted, type Output } from "./format.ts";
import {
  DescriptionSchema,
  groupPermissions,
  NameSchema,
  NEED_ROLE_OR_PERMISSION,
  parseInput,
  PermissionsSchema,
  RolesSchema,
  withPresets,
} from "../core/input.ts";
import { ACTIONS, type ApiKeyInfo, type Permission, RESOURCES, type Role, ROLE_DESCRIPTIONS, ROLES } from "../core/model.ts";
import type { KeyBackend, KeyStore } from "../store/key-store.ts";
import { keyState, shortTime, twinMarks } from "./list.ts";
import { lifecycleValues } from "./flags.ts";
import { createKey } from "./create-key.ts";
import { noteDropped } from "./rotate.ts";
import { displayWidth, padEnd } from "./width.ts";

export type { PromptFn };

export interface InteractiveOptions {
  /** Asks one question; defaults to the terminal prompt of lib/cli/_tty-prompt.ts. Tests pass a scripted one. */
  prompt?: PromptFn;
  /** Terminal width used to fit the key list of delete; defaults to the width of stdout. */
  columns?: number;
}

/** Shown when a person deletes nothing on purpose (no key picked, or "no" at the confirmation). */
export const NOTHING_SELECTED_MESSAGE = "No API keys selected; nothing was deleted";
export const DELETE_DECLINED_MESSAGE = "Nothing was deleted";

const TOGGLE = "space to select, enter to confirm";

/** The first problem valibot finds, or the parsed value. */
function check<const S extends v.GenericSchema>(schema: S, input: unknown): { value: v.InferOutput<S> } | { problem: string } {
  const result = v.safeParse(schema, input, { abortEarly: true });
  return result.success ? { value: result.output } : { problem: result.issues[0].message };
}

/** Puts the problem with the last answer on the line above the question. */
const withProblem = (question: string, problem?: string) => (problem ? `${problem}\n${question}` : question);

/** Asks until the answer passes the schema, showing the rule the last answer broke. */
async function askValid<const S extends v.GenericSchema>(ask: Ask, schema: S, question: string, problem?: string) {
  for (;;) {
    const checked = check(schema, await ask.text(withProblem(question, problem)));
    if ("value" in checked) return checked.value as v.InferOutput<S>;
    problem = checked.problem;
  }
}

/** The name, and whether an existing key of that name is to be replaced (asked, unless --overwrite). */
async function askName(ask: Ask, flags: ApikeyFlags, store: KeyBackend): Promise<{ name: string; replace: boolean; old?: ApiKeyInfo }> {
  let problem: string | undefined;
  for (;;) {
    const name: string = flags.name !== undefined
      ? parseInput(NameSchema, flags.name)
      : await askValid(ask, NameSchema, "API key name (letters, numbers and spaces):", problem);
    const old = await store.getByName(name);
    if (!old) return { name, replace: false };
    if (flags.overwrite) return { name, replace: true, old };
    const replace = await ask.confirm(
      `API key '${name}' already exists. Replace it? The old secret stops working.`,
      false,
    );
    if (replace) return { name, replace: true, old };
    if (flags.name !== undefined) {
      throw new ServiceError("NAME_TAKEN", `API key with name '${name}' already exists. Use --overwrite to replace it.`);
    }
    problem = `Kept the existing key '${name}'. Choose another name.`;
  }
}

async function askRoles(ask: Ask, problem?: string): Promise<Role[]> {
  const width = Math.max(...ROLES.map((role) => role.length));
  const choices = ROLES.map((role) => ({ value: role, label: `${role.padEnd(width)}  ${ROLE_DESCRIPTIONS[role]}` }));
  return ask.multiselect(withProblem(`Roles (${TOGGLE}):`, problem), choices);
}

/** Resources from a list, then actions for all of them at once or for each one. */
async function pickPermissions(ask: Ask): Promise<Permission[]> {
  const resources = await ask.multiselect(
    `Resources (${TOGGLE}):`,
    RESOURCES.map((resource) => ({ value: resource, label: resource })),
  );
  if (resources.length === 0) return [];
  const actionChoices = ACTIONS.map((action) => ({ value: action, label: action }));
  const each = resources.length > 1 &&
    (await ask.select(`Actions for the ${resources.length} resources:`, [
      { value: "same", label: `The same actions for all ${resources.length} resources` },
      { value: "each", label: "Different actions for each resource" },
    ], "same")) === "each";
  const pairs: string[] = [];
  if (each) {
    for (const resource of resources) {
      const actions = await ask.multiselect(`Actions on ${resource} (${TOGGLE}):`, actionChoices);
      pairs.push(...actions.map((action) => `${resource}:${action}`));
    }
  } else {
    const target = resources.length === 1 ? resources[0] : resources.join(", ");
    const actions = await ask.multiselect(`Actions on ${target} (${TOGGLE}):`, actionChoices);
    for (const resource of resources) pairs.push(...actions.map((action) => `${resource}:${action}`));
  }
  return groupPermissions(pairs);
}

async function askPermissions(ask: Ask, haveRoles: boolean, problem?: string): Promise<Permission[]> {
  const how = await ask.select(
    withProblem(`Permissions (RESOURCE:ACTION pairs)${haveRoles ? " on top of the roles" : ""}:`, problem),
    [
      { value: "none", label: haveRoles ? "None, the roles are enough" : "None" },
      { value: "pick", label: "Choose resources, then actions" },
      { value: "type", label: "Type them, e.g. DOCKER:READ_ANY,VMS:UPDATE_ANY" },
    ],
    haveRoles ? "none" : "pick",
  );
  if (how === "pick") return pickPermissions(ask);
  if (how === "type") {
    return askValid(ask, PermissionsSchema, "Permissions, comma-separated RESOURCE:ACTION pairs (empty for none):");
  }
  return [];
}

/** Roles and permissions not given by flags, asked again until there is at least one of either. */
async function askAccess(ask: Ask, flags: ApikeyFlags): Promise<{ roles: Role[]; permissions: Permission[] }> {
  const givenRoles = flags.roles !== undefined ? parseInput(RolesSchema, flags.roles) : undefined;
  // A preset gives permissions (with any -p): only roles are asked then.
  const givenPermissions = flags.preset !== undefined
    ? parseInput(PermissionsSchema, withPresets({ permissions: flags.permissions }, flags.preset).permissions)
    : flags.permissions !== undefined ? parseInput(PermissionsSchema, flags.permissions) : undefined;
  let problem: string | undefined;
  for (;;) {
    const roles = givenRoles ?? (await askRoles(ask, problem));
    const permissions = givenPermissions ??
      (await askPermissions(ask, roles.length > 0, givenRoles ? problem : undefined));
    if (roles.length + permissions.length > 0) return { roles, permissions };
    if (givenRoles && givenPermissions) throw new ServiceError("INVALID_INPUT", NEED_ROLE_OR_PERMISSION);
    problem = NEED_ROLE_OR_PERMISSION;
  }
}

/**
 * `apikey --create` at a terminal: asks for what the flags did not give, then creates the key.
 *
 * @example
 * const output = await interactiveCreate({ create: true }, createKeyStore());
 */
export async function interactiveCreate(
  flags: ApikeyFlags,
  store: KeyBackend,
  options: InteractiveOptions = {},
): Promise<Output> {
  const ask = createAsk(options.prompt);
  // Check what the flags say before asking anything, so a typo fails at once rather than after the questions.
  const description = flags.description !== undefined ? parseInput(DescriptionSchema, flags.description) : undefined;
  if (flags.roles !== undefined) parseInput(RolesSchema, flags.roles);
  if (flags.permissions !== undefined) parseInput(PermissionsSchema, flags.permissions);
  if (flags.preset !== undefined) withPresets({}, flags.preset);
  lifecycleValues(flags, Date.now());

  const { name, replace, old } = await askName(ask, flags, store);
  const finalDescription = flags.description !== undefined
    ? description
    : await askValid(ask, DescriptionSchema, "Description (optional, enter to skip):");
  const { roles, permissions } = await askAccess(ask, flags);

  // --expires-in counts from the answer to the last question, not from the first.
  const { expiresAt, graceMs } = lifecycleValues(flags, Date.now());
  const { created, graceUntil, record } = await createKey(
    store,
    { name, description: finalDescription, roles, permissions, ...(expiresAt ? { expiresAt } : {}) },
    { overwrite: replace || Boolean(flags.overwrite), replacing: replace, graceMs },
  );
  return { ...noteDropped(formatCreated(created, Boolean(flags.json), replace, graceUntil), old, created), created: record };
}


/**
 * One line per key: name, id and creation time in aligned columns, then the description, which the
 * prompt cuts at the terminal's edge. A description cut off is also the choice's hint, which the
 * prompt shows whole on a line of its own below the list while that key is highlighted.
 */
function keyChoices(keys: ApiKeyInfo[], columns: number, now = Date.now()): Choice[] {
  const twins = twinMarks(keys); // a key and its grace-period twin: " (old)" and " (new)" after the name
  const nameOf = (key: ApiKeyInfo) => key.name + (twins.get(key) ?? "");
  const nameWidth = Math.max(...keys.map((key) => displayWidth(nameOf(key))));
  return keys.map((key): Choice => {
    const state = keyState(key, now);
    // Marked as on the list: an expired key (working no more) and a replaced one in its grace period.
    const mark = state === "expired" ? "  (expired)" : state === "grace" ? `  (grace until ${shortTime(key.graceUntil!)})` : "";
    const label = `${padEnd(nameOf(key), nameWidth)}  ${key.id}  ${shortTime(key.createdAt)}${mark}`;
    const description = key.description ?? "";
    if (description === "") return { value: key.id, label };
    // The prompt draws "│  > [ ] " (9 columns at most) before the label and keeps the last column free.
    const fits = 9 + displayWidth(label) + 2 + displayWidth(description) <= columns - 1;
    return { value: key.id, label: `${label}  ${description}`, ...(fits ? {} : { hint: description }) };
  });
}

/** Deletes exactly the key that was shown, not a newer one that took its name meanwhile. */
async function deleteShown(store: KeyBackend & Partial<Pick<KeyStore, "deleteById">>, key: ApiKeyInfo) {
  if (typeof store.deleteById === "function") return store.deleteById(key.id);
  const current = await store.getByName(key.name);
  return current?.id === key.id ? store.deleteByName(key.name) : null;
}

/**
 * `apikey --delete` at a terminal: pick keys from the list, confirm, delete.
 * No keys stored: the "No API keys found to delete" result (exit 1). Nothing picked, or "no" at the
 * confirmation: nothing deleted, exit 0.
 *
 * @example
 * const output = await interactiveDelete({ delete: true, json: true }, store);
 */
export async function interactiveDelete(
  flags: ApikeyFlags,
  store: KeyBackend,
  options: InteractiveOptions = {},
): Promise<Output> {
  const asJson = Boolean(flags.json);
  const ask = createAsk(options.prompt);
  const keys = await store.list();
  if (keys.length === 0) return formatNothingDeleted(undefined, true, asJson);

  const columns = options.columns ?? (globalThis.process?.stdout?.columns || 80);
  const ids = await ask.multiselect(`API keys to delete (${TOGGLE}):`, keyChoices(keys, columns));
  if (ids.length === 0) return formatNothingChosen(NOTHING_SELECTED_MESSAGE, asJson);

  const chosen = keys.filter((key) => ids.includes(key.id));
  const count = `${chosen.length} API key${chosen.length === 1 ? "" : "s"}`;
  const names = chosen.length <= 3 ? ` (${chosen.map((key) => `'${key.name}'`).join(", ")})` : "";
  const sure = await ask.confirm(`Delete ${count}${names}? Their secrets stop working at once.`, false);
  if (!sure) return formatNothingChosen(DELETE_DECLINED_MESSAGE, asJson);

  const deleted: ApiKeyInfo[] = [];
  for (const key of chosen) {
    const gone = await deleteShown(store, key);
    if (gone) deleted.push(gone);
  }
  // Someone else deleted them between the list and now.
  if (deleted.length === 0) return formatNothingDeleted(undefined, await store.isEmpty(), asJson);
  return formatDeleted(deleted, asJson);
}
