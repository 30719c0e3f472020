/**
 * `service-api completion <shell>`: prints a completion script for bash, zsh or fish. Loaded at
 * every start-up with the other command definitions, so this file only describes the command; the
 * scripts are built in lib/cli/completion-script.ts, imported when the command runs.
 */
import { ServiceError } from "../../core/errors.ts";
import type { CommandDef, CommandIO } from "../command.ts";
import type { Output } from "../format-results.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;

async function run({ shell }: { shell?: string }, io: CommandIO): Promise<Output> {
  if (!shell || !(SHELLS as readonly string[]).includes(shell)) {
    throw new ServiceError("USAGE", `${shell ? `Unknown shell '${shell}'` : "Missing shell"}: choose one of ${SHELLS.join(", ")}`);
  }
  if (!io.registry) throw new Error("completion describes the command registry, and was given none");
  const { completionScript } = await import("../completion-script.ts");
  return { stdout: await completionScript(shell as (typeof SHELLS)[number], io.registry), exitCode: 0 };
}

export const command: CommandDef<{ shell?: string }> = {
  description: "Print a shell completion script (bash, zsh or fish)",
  options: [],
  examples: [
    "source <(service-api completion bash)",
    "service-api completion zsh > \"${fpath[1]}/_service-api\"",
    "service-api completion fish > ~/.config/fish/completions/service-api.fish",
  ],
  run,
};
