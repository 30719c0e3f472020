/**
 * The one command registry: every command, each a module loaded on demand (citty's `subCommands`), and
 * the options every command takes. cli.ts parses and runs with it, --help lists it, and completion
 * describes it (it reaches completion through `CommandIO.registry`). A command module is light: what only
 * that command needs (the service, the HTTP client, the prompts) is imported inside its `run`.
 */
import type { CommandDef, CommandTable, LoadedCommand, OptionDef } from "./command.ts";

/** Usage name (with the command's arguments) -> the command's module. */
const COMMANDS: Record<string, () => Promise<CommandDef<never>>> = {
  // Operands are for `--scan` (files and folders); every other mode refuses them.
  "apikey [...paths]": async () => (await import("./commands/apikey.ts")).command,
  serve: async () => (await import("./commands/serve.ts")).command,
  doctor: async () => (await import("./commands/doctor.ts")).command,
  webhook: async () => (await import("./commands/webhook.ts")).command,
  "completion <shell>": async () => (await import("./commands/completion.ts")).command,
};

/** Options every command takes. */
export const GLOBAL_OPTIONS: readonly OptionDef[] = [
  { flag: "--store <spec>", help: "Key store: fs:<dir>, memory: or redis://host:port/db (env SERVICE_API_STORE)" },
];

/** Shown in --help and completed; cli.ts answers them before any command is parsed. */
export const HELP_OPTIONS: readonly OptionDef[] = [
  { flag: "-h, --help", help: "Show this help" },
  { flag: "-v, --version", help: "Print the version alone" },
];

/** A command's name without its arguments: `completion <shell>` -> `completion`. */
const nameOf = (usageName: string) => usageName.split(" ")[0];

/** The commands' names, in the registry's order. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS).map(nameOf);

/** Loads the command `only`, or every command, in the registry's order, by name. */
export async function loadCommands(only?: string): Promise<Record<string, LoadedCommand>> {
  const loaded: Record<string, LoadedCommand> = {};
  for (const [usageName, load] of Object.entries(COMMANDS)) {
    if (only === undefined || nameOf(usageName) === only) loaded[nameOf(usageName)] = { ...((await load()) as CommandDef<object>), usageName };
  }
  return loaded;
}

/** The registry as a command sees it. */
export const registry: CommandTable = { commands: () => loadCommands(), global: [...GLOBAL_OPTIONS, ...HELP_OPTIONS] };
