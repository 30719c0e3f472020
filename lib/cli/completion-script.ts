/**
 * What shell completion knows, taken from the command definitions so a new flag is completed without
 * touching this file: commands, their flags (from each command's `options`), the values of
 * --roles/--permissions (from the model), and which flags take key names or files. Key names come
 * from the store at completion time: the script runs `service-api apikey --list` and reads the first
 * field of its pipe format (no secret is ever in a list). Loaded only by
 * `service-api completion`.
 */
import { ACTIONS, RESOURCES, ROLES } from "../core/model.ts";
import type { CommandDef, OptionDef } from "./command.ts";
import type { CompletionSpec, FlagSpec, Shell, ValueKind } from "./completion-types.ts";
import { command as apikey } from "./commands/apikey.ts";
import { command as serve } from "./commands/serve.ts";
import { command as doctor } from "./commands/doctor.ts";

/** Values of these flags have completions of their own; any other value is left to the person. */
const VALUE_KINDS: Record<string, ValueKind> = {
  name: "names",
  roles: "roles",
  permissions: "permissions",
  store: "files",
  output: "files",
};

/** `-r, --roles <roles>` -> { long: "roles", short: "r", value: "roles" }. */
export function flagSpec(def: OptionDef): FlagSpec {
  const names = def.flag.split(/[\s,]+/).filter((part) => part.startsWith("-"));
  const long = names.find((n) => n.startsWith("--"))!.slice(2);
  const short = names.find((n) => /^-[^-]$/.test(n))?.slice(1);
  const takesValue = /[<[]/.test(def.flag);
  return { long, short, help: def.help, value: takesValue ? VALUE_KINDS[long] ?? "none" : undefined };
}

/** Options cli.ts adds to every command (its GLOBAL_OPTIONS, plus cac's help and version). */
const GLOBAL: FlagSpec[] = [
  { long: "store", help: "Key store: fs:<dir>, memory: or redis://host:port/db", value: "files" },
  { long: "help", short: "h", help: "Show help" },
  { long: "version", short: "v", help: "Show the version" },
];

/**
 * The spec, for the commands as cli.ts lists them (a test checks that both agree). The completion
 * command passes its own definition, which keeps this module out of an import cycle with it.
 */
export function completionSpec(self: CommandDef<never>): CompletionSpec {
  const defs: Record<string, CommandDef<never>> = { apikey, serve, doctor, completion: self };
  const commands = Object.entries(defs).map(([name, command]) => ({
    name,
    description: command.description,
    flags: command.options.map(flagSpec),
  }));
  return { program: "service-api", commands, global: GLOBAL, roles: ROLES, resources: RESOURCES, actions: ACTIONS };
}

export async function completionScript(shell: Shell, self: CommandDef<never>): Promise<string> {
  const spec = completionSpec(self);
  if (shell === "bash") return (await import("./completion-bash.ts")).bashScript(spec);
  const { fishScript, zshScript } = await import("./completion-zsh-fish.ts");
  return shell === "zsh" ? zshScript(spec) : fishScript(spec);
}
