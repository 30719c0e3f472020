/**
 * The `apikey` command's flow, independent of argv parsing and of where output goes: pick the mode,
 * validate, call the store (local or remote), and return what to print.
 */
import { ServiceError } from "../../core/errors.ts";
import { formatCreated, formatDeleted, formatList, formatNothingDeleted, type Output } from "../format.ts";
import { LookupNameSchema, parseCreateInput, parseInput } from "../../core/input.ts";
import type { KeyBackend } from "../../store/key-store.ts";
import type { ApikeyFlags } from "../flags.ts";

export type { ApikeyFlags, KeyBackend };

export interface TerminalState {
  /** True when a person can answer prompts (stdin and stdout are terminals). */
  interactive: boolean;
  /** Why prompting is impossible, for the message (default: "stdin is not a terminal"). */
  notInteractiveBecause?: string;
}

/** The terminal's state, or a function that finds it out (called only when a prompt is needed). */
export type ApikeyContext = TerminalState | (() => Promise<TerminalState>);

/** The terminal's state when a prompt is needed: null when a person can answer. */
async function cannotPrompt(context: ApikeyContext): Promise<TerminalState | null> {
  const state = typeof context === "function" ? await context() : context;
  return state.interactive ? null : state;
}

function missing(what: string, flags: string, context: TerminalState): ServiceError {
  const because = context.notInteractiveBecause ?? "stdin is not a terminal";
  return new ServiceError("USAGE", `Missing ${what}: ${because}, so the command cannot ask for it. Pass ${flags}.`);
}

/**
 * Runs `service-api apikey` with parsed flags.
 * @example await runApikey({ create: true, name: "ci", roles: "ADMIN", json: true }, store, { interactive: false })
 */
export async function runApikey(flags: ApikeyFlags, store: KeyBackend, context: ApikeyContext): Promise<Output> {
  const modes = (["create", "delete", "list"] as const).filter((mode) => flags[mode]);
  if (modes.length !== 1) {
    throw new ServiceError(
      "USAGE",
      modes.length === 0
        ? "Choose what to do: --create, --delete or --list"
        : `Choose one of --create, --delete and --list, not ${modes.map((m) => `--${m}`).join(" and ")}`,
    );
  }
  const asJson = Boolean(flags.json);

  if (flags.list) return formatList(await store.list(), asJson);

  if (flags.create) {
    if (flags.name === undefined) {
      const unable = await cannotPrompt(context);
      if (unable) throw missing("--name", "--name <name> and --roles <roles> or --permissions <RESOURCE:ACTION,...>", unable);
      const { interactiveCreate } = await import("../prompts.ts");
      return interactiveCreate(flags, store);
    }
    const input = parseCreateInput(flags);
    const created = await store.create(input, { overwrite: Boolean(flags.overwrite) });
    return { ...formatCreated(created, asJson), created: { id: created.id, name: created.name, overwrite: Boolean(flags.overwrite) } };
  }

  if (flags.name === undefined) {
    const unable = await cannotPrompt(context);
    if (unable) throw missing("--name", "--name <name>", unable);
    const { interactiveDelete } = await import("../prompts.ts");
    return interactiveDelete(flags, store);
  }
  const name = parseInput(LookupNameSchema, flags.name);
  const deleted = await store.deleteByName(name);
  if (deleted) return formatDeleted([deleted], asJson);
  return formatNothingDeleted(name, await store.isEmpty(), asJson);
}

/**
 * What to do and say when a new key's secret could not be written (a full disk, a closed pipe): the
 * output was its only copy. A plain create is undone, by id and only while the name still holds that
 * key; an overwrite cannot be undone (the key it replaced is gone), so the message says what is left.
 * Returns the one-line message.
 */
export async function undeliveredCreate(created: NonNullable<Output["created"]>, store: KeyBackend, reason: string): Promise<string> {
  const { id, name } = created;
  const lost = `Error: Could not write the new key's secret to stdout (${reason}).`;
  const fix = `Delete it (service-api apikey --delete --name '${name}') or overwrite it again.`;
  if (created.overwrite) {
    return `${lost} Key '${name}' (id ${id}) is stored, replacing any earlier key of that name (which no longer works), but its secret is lost. ${fix}`;
  }
  try {
    if (await store.deleteById(id)) return `${lost} The key was deleted again, so nothing changed: create it again.`;
    return `${lost} Key '${name}' (id ${id}) was already deleted or replaced by someone else; nothing was undone.`;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `${lost} Undoing the create failed (${why}): key '${name}' (id ${id}) is stored but its secret is lost. ${fix}`;
  }
}
