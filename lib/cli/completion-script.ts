/**
 * What shell completion knows, taken from the command definitions so a new flag is completed without
 * touching this file: commands, their flags (from each command's `options`), the values of
 * --roles/--permissions (from the model), and which flags take key names or files. Key names come
 * from the store at completion time: the script runs `service-api apikey --list` and reads the first
 * field of its pipe format (no secret is ever in a list). Loaded only by
 * `service-api completion`, which passes the command registry (lib/cli/registry.ts).
 */
import { ACTIONS, RESOURCES, ROLES } from "../core/model.ts";
import { type CommandTable, type OptionDef, optionNames } from "./command.ts";
import type { CompletionSpec, FlagSpec, Shell, ValueKind } from "./completion-types.ts";

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
  const { long, short, takesValue } = optionNames(def);
  return { long, short, help: def.help, value: takesValue ? VALUE_KINDS[long] ?? "none" : undefined };
}

/** The spec, for the commands of the registry in its order, with the options every command takes. */
export async function completionSpec(registry: CommandTable): Promise<CompletionSpec> {
  const commands = Object.entries(await registry.commands()).map(([name, command]) => ({
    name,
    description: command.description,
    flags: command.options.map(flagSpec),
  }));
  const global = registry.global.map(flagSpec);
  return { program: "service-api", commands, global, roles: ROLES, resources: RESOURCES, actions: ACTIONS };
}

export async function completionScript(shell: Shell, registry: CommandTable): Promise<string> {
  const spec = await completionSpec(registry);
  if (shell === "bash") return (await import("./completion-bash.ts")).bashScript(spec);
  const { fishScript, zshScript } = await import("./completion-zsh-fish.ts");
  return shell === "zsh" ? zshScript(spec) : fishScript(spec);
}
