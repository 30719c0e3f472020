/**
 * `service-api completion <shell>`: prints a completion script for bash, zsh or fish. Loaded at
 * every start-up with the other command definitions, so this file only describes the command; the
 * scripts are built in lib/cli/completion-script.ts, imported when the command runs.
 */
import { ServiceError } from "../../core/errors.ts";
import type { CommandDef, CommandIO } from "../command.ts";
import type { Output } from "../format-results.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;

/**
 * cli.ts passes a command's first action argument as its flags: for `completion <shell>` that is the
 * shell. Anything else (a call without cac) is read from argv.
 */
function shellOf(given: unknown): string | undefined {
  if (typeof given === "string") return given;
  const argv = globalThis.process?.argv.slice(2) ?? [];
  return argv.slice(argv.indexOf("completion") + 1).find((arg) => !arg.startsWith("-"));
}

async function run(given: unknown, _io: CommandIO): Promise<Output> {
  const shell = shellOf(given);
  if (!shell || !(SHELLS as readonly string[]).includes(shell)) {
    throw new ServiceError("USAGE", `${shell ? `Unknown shell '${shell}'` : "Missing shell"}: choose one of ${SHELLS.join(", ")}`);
  }
  const { completionScript } = await import("../completion-script.ts");
  return { stdout: await completionScript(shell as (typeof SHELLS)[number], command), exitCode: 0 };
}

export const command: CommandDef<unknown> = {
  description: "Print a shell completion script (bash, zsh or fish)",
  options: [],
  examples: [
    "source <(service-api completion bash)",
    "service-api completion zsh > \"${fpath[1]}/_service-api\"",
    "service-api completion fish > ~/.config/fish/completions/service-api.fish",
  ],
  run,
};
