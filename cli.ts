#!/usr/bin/env node
/**
 * `service-api`: the command line, wiring only. Parses argv with cac, picks the command, calls its
 * `run` and prints through the formatter. This is the only place that touches exit statuses.
 */
import { cac } from "cac";
import type { CommandDef, CommandIO, OptionDef } from "./lib/cli/command.ts";
import { isServiceError, ServiceError } from "./lib/core/errors.ts";
import { formatError, type Output } from "./lib/cli/format.ts";
import { writeOut } from "./lib/cli/output.ts";
import { createDebug, resolveLogLevel } from "./lib/core/log.ts";
import { VERSION } from "./lib/core/version.ts";

type Command = CommandDef<object>;

/**
 * The commands, each a module loaded on demand (citty's `subCommands`). Both are light: what only
 * one command needs (the service, the HTTP client, the prompts) is imported inside its `run`.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  apikey: async () => (await import("./lib/cli/commands/apikey.ts")).command,
  serve: async () => (await import("./lib/cli/commands/serve.ts")).command,
  "completion <shell>": async () => (await import("./lib/cli/commands/completion.ts")).command,
};

const GLOBAL_OPTIONS: OptionDef[] = [
  { flag: "--store <spec>", help: "Key store: fs:<dir>, memory: or redis://host:port/db (env SERVICE_API_STORE)" },
];

/**
 * cac (through mri) turns numeric-looking values into numbers, so `--name 007` would arrive as 7.
 * Take such values back from argv as typed. Repeating a flag is an error rather than a silent pick.
 */
function stringFlags(options: Record<string, unknown>, argv: string[], defs: OptionDef[]): void {
  const names = defs.filter((d) => d.flag.includes("<") && !d.numeric).map((d) => d.flag.slice(2).split(" ")[0]);
  for (const flag of names) {
    const value = options[flag];
    if (value === undefined || typeof value === "string") continue;
    if (Array.isArray(value)) throw new ServiceError("USAGE", `--${flag} was given more than once`);
    if (value === true || value === false) throw new ServiceError("USAGE", `--${flag} needs a value`);
    const at = argv.findLastIndex((arg) => arg === `--${flag}` || arg.startsWith(`--${flag}=`));
    options[flag] = argv[at].startsWith(`--${flag}=`) ? argv[at].slice(flag.length + 3) : argv[at + 1];
  }
}

async function main(argv: string[]): Promise<Output> {
  const debug = await createDebug();
  const cli = cac("service-api");
  for (const { flag, help } of GLOBAL_OPTIONS) cli.option(flag, help);
  const defs = [...GLOBAL_OPTIONS];
  let chosen: { command: Command; flags: Record<string, unknown> } | undefined;
  for (const [name, load] of Object.entries(COMMANDS)) {
    const command = await load();
    const entry = cli.command(name, command.description);
    for (const { flag, help } of command.options) entry.option(flag, help);
    for (const example of command.examples) entry.example(example);
    entry.action((flags: Record<string, unknown>) => (chosen = { command, flags }));
    defs.push(...command.options);
  }
  cli.help();
  cli.version(VERSION);

  const parsed = cli.parse(["node", "service-api", ...argv], { run: false });
  if (parsed.options.help || parsed.options.version) return { exitCode: 0 };
  if (!cli.matchedCommand) {
    const unknown = parsed.args[0];
    throw new ServiceError("USAGE", unknown ? `Unknown command '${unknown}'. Run 'service-api --help'.` : "Missing command. Run 'service-api --help'.");
  }
  // cac's unknown-option check misses flags named like Object.prototype members (`--constructor`, `--__proto__`).
  const inherited = argv.find((arg) => /^--?[^-]/.test(arg) && arg.replace(/^--?/, "").split(/[=.]/)[0] in Object.prototype);
  if (inherited) throw new ServiceError("USAGE", `Unknown option \`${inherited.split("=")[0]}\`. Run 'service-api --help'.`);
  stringFlags(parsed.options, argv, defs);
  await cli.runMatchedCommand();
  if (!chosen) throw new ServiceError("USAGE", "Nothing to do. Run 'service-api --help'.");
  const io: CommandIO = { env: process.env, log: (line) => process.stderr.write(line + "\n"), debug, write: writeOut };
  return await chosen.command.run(chosen.flags, io);
}

/** Runs the command line and sets the exit status; never throws. */
async function run(argv: string[]): Promise<void> {
  const asJson = argv.includes("--json");
  let output: Output;
  try {
    output = await main(argv);
  } catch (error) {
    // cac reports bad usage (unknown flag, missing value) with its own error class.
    const usage = error instanceof Error && error.name === "CACError"
      ? new ServiceError("USAGE", `${error.message}. Run 'service-api --help'.`)
      : error;
    output = formatError(usage, asJson);
    if (!isServiceError(usage) && ["debug", "trace"].includes(resolveLogLevel(process.env.LOG_LEVEL).level)) {
      writeOut(2, `${(error as Error)?.stack ?? error}\n`);
    }
  }
  const failed = output.stdout ? writeOut(1, output.stdout) : undefined;
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
