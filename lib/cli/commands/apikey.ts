/**
 * The `apikey` command: its flags and help text, and its flow, independent of argv parsing and of
 * where output goes: pick the mode, validate, call the store (local or remote), and return what to print.
 */
import { ServiceError } from "../../core/errors.ts";
import { formatCreated, formatDeleted, formatList, formatNothingDeleted, type Output } from "../format.ts";
import { LookupNameSchema, parseCreateInput, parseInput } from "../../core/input.ts";
import type { KeyBackend } from "../../store/key-store.ts";
import { openKeyStore, parseStoreSpec } from "../../store/config.ts";
import type { ApikeyFlags } from "../flags.ts";
import type { CommandDef, CommandIO } from "../command.ts";
import { deliver } from "../output.ts";

export type { ApikeyFlags, KeyBackend };

/** The flags of `apikey` plus where the keys are: a store spec or a running service's URL. */
export interface ApikeyCommandFlags extends ApikeyFlags {
  store?: string;
  url?: string;
}

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
 * Runs `service-api apikey`: opens the store the flags or environment name (or `io.store`), runs the
 * flow, and writes a new key's secret while the store is open (see `deliver`). Other output is returned.
 * @example await run({ create: true, name: "ci", roles: "ADMIN", json: true }, { ...io, store: createKeyStore() })
 */
export async function run(flags: ApikeyCommandFlags, io: CommandIO): Promise<Output> {
  const context: ApikeyContext = io.interactive === undefined ? terminal : { interactive: io.interactive };
  if (flags.url && flags.store) throw new ServiceError("USAGE", "Use --url or --store, not both");
  if (io.store) return await deliver(await runApikey(flags, io.store, context), io.store, io.write);
  const url = flags.url ?? (flags.store ? undefined : io.env.SERVICE_API_URL?.trim() || undefined);
  if (url) {
    const { openRemoteBackend } = await import("../../client/remote.ts");
    const remote = openRemoteBackend(url, io.env);
    return await deliver(await runApikey(flags, remote, context), remote, io.write);
  }
  const store = await openKeyStore(parseStoreSpec(flags.store, io.env), io.debug, { oneShot: true });
  try {
    return await deliver(await runApikey(flags, store, context), store, io.write);
  } finally {
    await store.close();
  }
}

/** Whether stdin and stdout are terminals; isatty() rather than process.stdin, which would build a stream. */
async function terminal(): Promise<TerminalState> {
  const { isatty } = await import("node:tty");
  const notInteractiveBecause = !isatty(0) ? "stdin is not a terminal" : !isatty(1) ? "stdout is not a terminal" : undefined;
  return { interactive: !notInteractiveBecause, notInteractiveBecause };
}

/** `service-api apikey`: flags, help text and `run`. */
export const command: CommandDef<ApikeyCommandFlags> = {
  description: "Create, delete or list API keys",
  options: [
    { flag: "--create", help: "Create a key" },
    { flag: "--delete", help: "Delete a key (interactive without --name)" },
    { flag: "--list", help: "List keys (never their secrets)" },
    { flag: "--name <name>", help: "Key name: letters, digits and spaces" },
    { flag: "--description <desc>", help: "Free-text description" },
    { flag: "--roles <roles>", help: "Comma-separated roles: ADMIN, CONNECT, VIEWER, GUEST" },
    { flag: "--permissions <perms>", help: "Comma-separated RESOURCE:ACTION pairs, e.g. DOCKER:READ_ANY" },
    { flag: "--overwrite", help: "Replace an existing key of the same name (new id and secret)" },
    { flag: "--json", help: "Print the result as one JSON object" },
    { flag: "--url <base_url>", help: "Act on a running service instead of a store (env SERVICE_API_URL; key in SERVICE_API_KEY)" },
  ],
  examples: [
    "service-api apikey --create --name \"deploy key\" --roles ADMIN --json",
    "service-api apikey --delete --name \"deploy key\"",
  ],
  run,
};
