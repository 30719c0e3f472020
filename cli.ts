#!/usr/bin/env node
/**
 * `service-api`: the command line, wiring only. Parses argv with cac, picks the command, calls its
 * `run` and prints through the formatter. This is the only place that touches exit statuses.
 */
import { cac } from "cac";
import type { CommandDef, CommandIO, OptionDef } from "./lib/cli/command.ts";
import { isServiceError, ServiceError } from "./lib/core/errors.ts";
import { formatError, type Output } from "./lib/cli/format-results.ts";
import { writeOut } from "./lib/cli/output.ts";
import { createDebug, resolveLogLevel } from "./lib/core/log.ts";
import { VERSION } from "./lib/core/version.ts";

type Command = CommandDef<object>;

/**
 * The commands, each a module loaded on demand (citty's `subCommands`): only the one named on the
 * command line, or all of them for help and for an unknown command. They are light: what only one
 * command needs (the service, the HTTP client, the prompts) is imported inside its `run`.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  "apikey [...paths]": async () => (await import("./lib/cli/commands/apikey.ts")).command,
  serve: async () => (await import("./lib/cli/commands/serve.ts")).command,
  "completion <shell>": async () => (await import("./lib/cli/commands/completion.ts")).command,
};

const GLOBAL_OPTIONS: OptionDef[] = [
  { flag: "--store <spec>", help: "Key store: fs:<dir>, memory: or redis://host:port/db (env SERVICE_API_STORE)" },
];
/** Shown in --help; handled here before cac parses anything. */
const HELP_OPTIONS: OptionDef[] = [
  { flag: "-h, --help", help: "Show this help" },
  { flag: "-v, --version", help: "Print the version alone" },
];

/** The long name of a flag definition: `-r, --roles <roles>` -> `roles`. */
const longName = (def: OptionDef) => /--([\w-]+)/.exec(def.flag)![1];
/** The short name, if any: `-r, --roles <roles>` -> `r`. */
const shortName = (def: OptionDef) => /^-(\w),/.exec(def.flag)?.[1];

/**
 * cac (through mri) turns numeric-looking values into numbers, so `--name 007` would arrive as 7.
 * Take such values back from argv as typed. Repeating a flag is an error rather than a silent pick.
 */
function stringFlags(options: Record<string, unknown>, argv: string[], defs: OptionDef[]): void {
  for (const def of defs.filter((d) => d.flag.includes("<") && !d.numeric)) {
    const flag = longName(def);
    const short = shortName(def);
    // cac also files `--cors-origin` under `corsOrigin`, which is what the commands read.
    const camel = flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    const value = options[camel] ?? options[flag];
    if (value === undefined || typeof value === "string") continue;
    if (Array.isArray(value)) throw new ServiceError("USAGE", `--${flag} was given more than once`);
    if (value === true || value === false) throw new ServiceError("USAGE", `--${flag} needs a value`);
    const spellings = short ? [`--${flag}`, `-${short}`] : [`--${flag}`];
    const at = argv.findLastIndex((arg) => spellings.some((s) => arg === s || arg.startsWith(`${s}=`)));
    const spelled = spellings.find((s) => argv[at].startsWith(`${s}=`));
    options[flag] = options[camel] = spelled ? argv[at].slice(spelled.length + 1) : argv[at + 1];
    if (short) options[short] = options[flag];
  }
}

/** A mistyped word, with the closest known one: " Did you mean '--create'?" or nothing. */
async function didYouMean(word: string, known: readonly string[]): Promise<string> {
  return (await import("./lib/cli/suggest.ts")).didYouMean(word, known);
}

/** A mistyped flag in cac's "Unknown option `--crate`" message, with the closest known flag. */
async function unknownOption(message: string, defs: OptionDef[]): Promise<string> {
  const flag = /`([^`]+)`/.exec(message)?.[1] ?? "";
  const known = [...defs, ...HELP_OPTIONS].map((d) => `--${longName(d)}`);
  return `${message}.${await didYouMean(flag.split("=")[0], known)} Run 'service-api --help'.`;
}

/** A command's name without its arguments: `completion <shell>` -> `completion`. */
const nameOf = (usageName: string) => usageName.split(" ")[0];

/** Loads the command `only`, or every command, in the table's order, by name. */
async function loadCommands(only?: string): Promise<Record<string, Command & { usageName: string }>> {
  const loaded: Record<string, Command & { usageName: string }> = {};
  for (const [usageName, load] of Object.entries(COMMANDS)) {
    if (only === undefined || nameOf(usageName) === only) loaded[nameOf(usageName)] = { ...(await load()), usageName };
  }
  return loaded;
}

async function main(argv: string[]): Promise<Output> {
  const debug = await createDebug();
  const options = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length);
  const named = argv[0] !== undefined && Object.keys(COMMANDS).map(nameOf).includes(argv[0]) ? argv[0] : undefined;
  // Help goes to stdout (it is what was asked for) and exits 0, like gh and npm; so does a bare
  // `service-api`, `service-api apikey` or `service-api completion`, which could only be a question. A bare
  // `service-api serve` serves: every one of its settings has a default or an environment variable.
  const help = options.includes("-h") || options.includes("--help") || argv.length === 0 || (named && named !== "serve" && argv.length === 1);
  // cac matches a command by the first word, so a named command is the only one it can pick.
  const commands = await loadCommands(help ? undefined : named);
  if (help) {
    const { renderHelp } = await import("./lib/cli/help.ts");
    return { stdout: renderHelp(commands, [...GLOBAL_OPTIONS, ...HELP_OPTIONS], named), exitCode: 0 };
  }
  if (options.includes("-v") || options.includes("--version")) return { stdout: `${VERSION}\n`, exitCode: 0 };
  const cli = cac("service-api");
  for (const { flag, help } of GLOBAL_OPTIONS) cli.option(flag, help);
  let chosen: { command: Command; flags: Record<string, unknown> } | undefined;
  for (const command of Object.values(commands)) {
    const entry = cli.command(command.usageName, command.description);
    for (const { flag, help } of command.options) entry.option(flag, help);
    for (const example of command.examples) entry.example(example);
    // A command with operands (`apikey [...paths]`) gets them first and its flags last.
    entry.action((...given: unknown[]) => (chosen = { command, flags: (Array.isArray(given[0]) ? given.at(-1) : given[0]) as Record<string, unknown> }));
  }

  const parsed = cli.parse(["node", "service-api", ...argv], { run: false });
  if (!cli.matchedCommand) {
    const unknown = parsed.args[0];
    if (!unknown) throw new ServiceError("USAGE", "Missing command. Run 'service-api --help'.");
    throw new ServiceError("USAGE", `Unknown command '${unknown}'.${await didYouMean(unknown, Object.keys(commands))} Run 'service-api --help'.`);
  }
  const defs = [...GLOBAL_OPTIONS, ...commands[cli.matchedCommandName!].options];
  // cac's unknown-option check misses flags named like Object.prototype members (`--constructor`, `--__proto__`).
  const inherited = argv.find((arg) => /^--?[^-]/.test(arg) && arg.replace(/^--?/, "").split(/[=.]/)[0] in Object.prototype);
  if (inherited) throw new ServiceError("USAGE", `Unknown option \`${inherited.split("=")[0]}\`. Run 'service-api --help'.`);
  try {
    await cli.runMatchedCommand();
  } catch (error) {
    const message = error instanceof Error ? error.message : "";
    if (/^Unknown option/.test(message)) throw new ServiceError("USAGE", await unknownOption(message, defs));
    throw error;
  }
  stringFlags(parsed.options, argv, defs);
  if (!chosen) throw new ServiceError("USAGE", "Nothing to do. Run 'service-api --help'.");
  const io: CommandIO = { env: process.env, log: (line) => process.stderr.write(line + "\n"), debug, write: writeOut, argv };
  return await chosen.command.run(chosen.flags, io);
}

/** Runs the command line and sets the exit status; never throws. */
async function run(argv: string[]): Promise<void> {
  const asJson = argv.includes("--json") || argv.includes("--format=json") || argv.some((arg, i) => arg === "--format" && argv[i + 1] === "json");
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
