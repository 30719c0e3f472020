#!/usr/bin/env node
/**
 * `service-api`: the command line, wiring only. Takes the command from the registry, its flags from
 * lib/cli/argv.ts, calls its `run` and prints through the formatter. This is the only place that
 * touches exit statuses.
 */
import type { CommandIO } from "./lib/cli/command.ts";
import { parseArgv } from "./lib/cli/argv.ts";
import { COMMAND_NAMES, GLOBAL_OPTIONS, HELP_OPTIONS, loadCommands, registry } from "./lib/cli/registry.ts";
import { isServiceError } from "./lib/core/errors.ts";
import { elideSecrets, formatError, type Output } from "./lib/cli/format-results.ts";
import { writeOut } from "./lib/cli/output.ts";
import { createDebug, resolveLogLevel } from "./lib/core/log.ts";
import { VERSION } from "./lib/core/version.ts";

async function main(argv: string[]): Promise<Output> {
  const debug = await createDebug();
  const options = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length);
  const named = argv[0] !== undefined && COMMAND_NAMES.includes(argv[0]) ? argv[0] : undefined;
  // Help goes to stdout (it is what was asked for) and exits 0, like gh and npm; so does a bare
  // `service-api`, `service-api apikey` or `service-api completion`, which could only be a question. A bare
  // `service-api serve` serves and a bare `doctor` checks: every one of their settings has a default.
  const help = options.includes("-h") || options.includes("--help") || argv.length === 0 || (named && !["serve", "doctor"].includes(named) && argv.length === 1);
  // cac matches a command by its first word, so a named command is the only one it can pick.
  const commands = await loadCommands(help ? undefined : named);
  if (argv.length === 0) return { stdout: (await import("./lib/cli/help.ts")).renderShortUsage(), exitCode: 0 };
  if (help) {
    const { renderHelp, renderModeHelp } = await import("./lib/cli/help.ts");
    const global = [...GLOBAL_OPTIONS, ...HELP_OPTIONS];
    // `apikey --rotate --help`: that mode's flags only, a screenful instead of the whole reference.
    // The mode is whichever flag names one (`apikey --json --rotate --help`, `webhook --rotate-secret --help`).
    const modeHelp = named
      ? options.filter((word) => /^--[a-z][a-z-]*$/.test(word)).map((word) => renderModeHelp(named, commands[named], word.slice(2), global)).find(Boolean)
      : undefined;
    return { stdout: modeHelp ?? renderHelp(commands, global, named), exitCode: 0 };
  }
  if (options.includes("-v") || options.includes("--version")) return { stdout: `${VERSION}\n`, exitCode: 0 };
  const { command, flags } = await parseArgv(argv, commands);
  const io: CommandIO = { env: process.env, log: (line) => process.stderr.write(line + "\n"), debug, write: writeOut, registry, argv };
  return await command.run(flags, io);
}

/** Runs the command line and sets the exit status; never throws. */
async function run(argv: string[]): Promise<void> {
  const asJson = argv.includes("--json") || argv.includes("--format=json") || argv.some((arg, i) => arg === "--format" && argv[i + 1] === "json");
  let output: Output;
  try {
    output = elideSecrets(await main(argv));
  } catch (error) {
    output = formatError(error, asJson);
    if (!isServiceError(error) && ["debug", "trace"].includes(resolveLogLevel(process.env.LOG_LEVEL).level)) {
      writeOut(2, `${(error as Error)?.stack ?? error}\n`);
    }
  }
  let failed = output.stdout ? writeOut(1, output.stdout) : undefined;
  // `--list | head -1`: the reader had what it wanted and left. Not an error (a secret never gets here:
  // deliver() wrote it, and undoes the create when it could not).
  if (failed === "EPIPE" && output.readerMayLeave) failed = undefined;
  if (output.notice) writeOut(2, output.notice + "\n");
  process.exitCode = output.exitCode;
  if (failed) {
    // Say so, most of all after a create: its secret is shown nowhere else.
    writeOut(2, `Error: Could not write the result to stdout (${failed})\n`);
    process.exitCode = 1;
  }
}

// Not a top-level await: the built CLI is a CommonJS bundle (see scripts/build.mjs).
void run(process.argv.slice(2));
