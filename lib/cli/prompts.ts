/**
 * Interactive create and delete at a terminal (`service-api apikey --create|--delete` without
 * `--name`), over our terminal prompt (lib/cli/_tty-prompt.ts). lib/cli/create.ts and lib/cli/delete.ts
 * import this file only on that path.
 *
 * Every answer is checked with the same valibot schemas as the flags; a bad answer is asked again
 * with the rule that it broke. Flags that were given are validated first and never asked for.
 * Ctrl-C or Esc at any question: `ServiceError("CANCELLED")` (exit 130) before anything is written.
 * Results are the same `Output`s as in non-interactive mode, so `--json` works the same way.
 */
import type { ApikeyFlags } from "./flags.ts";
import { type Ask, askValid, type Choice, createAsk, type PromptFn, TOGGLE } from "./_ask.ts";
import { askAccess } from "./_ask-access.ts";
import { ServiceError } from "../core/errors.ts";
import { formatCreated, formatDeleted, formatNothingChosen, formatNothingDeleted, type Output } from "./format.ts";
import { DescriptionSchema, NameSchema, parseInput, PermissionsSchema, RolesSchema, withPresets } from "../core/input.ts";
import type { ApiKeyInfo } from "../core/model.ts";
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
  const sure = await ask.confirm(`Delete ${count}${names}? ${chosen.length === 1 ? "Its secret stops" : "Their secrets stop"} working at once.`, false);
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
