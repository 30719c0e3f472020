/**
 * argv -> the chosen command and its flags: the one place that knows cac. cac matches the command and
 * checks the flags (unknown options, missing values, stray arguments); this module hands the command
 * typed flags and turns every way argv can be wrong into a USAGE error (exit 2) with a clear message:
 * - values stay as typed: cac parses with mri, which makes `--name 007` the number 7 (its `string` option
 *   is not exposed by cac), so each value flag's value is taken from argv as given;
 * - flags named like Object.prototype members (`--constructor`, `--__proto__`) and dotted flags
 *   (`--name.x`, cac's nested options) are refused: cac drops some of them silently;
 * - a flag given twice is refused rather than one of its values picked.
 */
import { cac } from "cac";
import { ServiceError } from "../core/errors.ts";
import { type LoadedCommand, type OptionDef, optionNames } from "./command.ts";
import { COMMAND_NAMES, GLOBAL_OPTIONS, HELP_OPTIONS } from "./registry.ts";

/** Flags under their camelCase long names (`--if-exists` -> `ifExists`, `--no-expiry` -> `expiry: false`). */
export type Flags = Record<string, string | number | boolean>;

export interface ParsedArgv {
  command: LoadedCommand;
  /** The command's flags; its arguments under their names (`completion <shell>`: `shell`). */
  flags: Flags;
}

const HELP = " Run 'service-api --help'.";

/** The key a flag is delivered under: `expires-in` -> `expiresIn`; a negation under the flag it negates. */
const keyOf = (long: string) => long.replace(/^no-/, "").replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

/** The options before `--`. */
const optionTokens = (argv: string[]) => argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length).filter((a) => /^-./.test(a));

/** Refuses a flag named like an Object.prototype member, or dotted (cac reads `--a.b` as a nested option). */
function refuseOddNames(argv: string[]): void {
  for (const token of optionTokens(argv)) {
    const spelled = token.split("=")[0];
    const name = spelled.replace(/^--?/, "").replace(/^no-/, "");
    if (name.includes(".") || name in Object.prototype || keyOf(name) in Object.prototype) {
      throw new ServiceError("USAGE", `Unknown option \`${spelled}\`.${HELP}`);
    }
  }
}

/** Every spelling of a flag that takes a value (`--name`, `-n`), to the flag's long name. */
function valueFlagSpellings(defs: readonly OptionDef[]): Map<string, string> {
  const bySpelling = new Map<string, string>();
  for (const def of defs) {
    const { long, short, takesValue } = optionNames(def);
    if (!takesValue) continue;
    bySpelling.set(`--${long}`, long);
    if (short) bySpelling.set(`-${short}`, long);
  }
  return bySpelling;
}

/**
 * Each value flag's values as typed in argv, in order: `--name v`, `--name=v`, `-r v`, `-r=v`. Read after
 * cac has accepted argv, so every value flag found has its value where mri took it from.
 */
function valuesAsTyped(argv: string[], defs: readonly OptionDef[]): Map<string, string[]> {
  const bySpelling = valueFlagSpellings(defs);
  const values = new Map<string, string[]>();
  for (let i = 0; i < argv.length && argv[i] !== "--"; i++) {
    const [spelled, ...rest] = argv[i].split("=");
    const long = bySpelling.get(spelled);
    if (long === undefined) continue;
    // `--name=` with nothing after it takes the next word, as mri does.
    const value = rest.length > 0 && rest.join("=") !== "" ? rest.join("=") : argv[++i];
    values.set(long, [...(values.get(long) ?? []), value]);
  }
  return values;
}

/**
 * A value flag and a next word that starts with a dash but is a value, joined: `--import -` as
 * `--import=-`, `--limit -1` as `--limit=-1` and `-d "- note"` as `-d=- note`. mri reads a lone `-` or `-1` as a flag of its own, which
 * left the value flag before it empty (`-` is the usual word for standard input) or was refused as
 * "Unknown option `-1`" instead of the value's own message.
 */
function joinDashValues(argv: string[], defs: readonly OptionDef[]): string[] {
  const spellings = valueFlagSpellings(defs);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") return [...out, ...argv.slice(i)];
    const next = argv[i + 1];
    // A word with a space in it is no flag either (`-d "- note"`).
    if (spellings.has(argv[i]) && next !== undefined && (next === "-" || /^-\d/.test(next) || /^-.*\s/s.test(next))) out.push(`${argv[i++]}=${next}`);
    else out.push(argv[i]);
  }
  return out;
}

/**
 * cac's error as a USAGE error; an unknown flag gets the closest known one, or, when it is the word after a
 * value flag (`-d -note`: a value that starts with a dash), how to give that word as the value.
 */
async function usageError(error: unknown, defs: readonly OptionDef[], argv: readonly string[]): Promise<unknown> {
  if (!(error instanceof Error) || error.name !== "CACError") return error;
  const flag = /^Unknown option `([^`]+)`/.exec(error.message)?.[1];
  if (flag === undefined) return new ServiceError("USAGE", `${error.message}.${HELP}`);
  const at = argv.findIndex((word, i) => i > 0 && word.startsWith(flag.split("=")[0]) && /^-[^-]/.test(word));
  const valueOf = at > 0 ? valueFlagSpellings(defs).get(argv[at - 1]) : undefined;
  if (valueOf !== undefined) {
    const quoted = `'${argv[at].replaceAll("'", `'\\''`)}'`;
    return new ServiceError(
      "USAGE",
      `${argv[at - 1]} takes a value, and ${quoted} after it starts with a dash, so it was read as options (${error.message}). ` +
        `To give a value that starts with a dash, join it to the flag: --${valueOf}=${quoted}`,
    );
  }
  const known = [...defs, ...HELP_OPTIONS].map((def) => `--${optionNames(def).long}`);
  const { didYouMean } = await import("./suggest.ts");
  return new ServiceError("USAGE", `${error.message}.${didYouMean(flag.split("=")[0], known)}${HELP}`);
}

/**
 * The command argv names, among `commands` (the registry's, loaded), and its flags; a USAGE error for
 * anything cac or these rules refuse, or for a missing or unknown command.
 * @example await parseArgv(["apikey", "--list", "--json"], await loadCommands("apikey")) // { command, flags: { list: true, json: true } }
 */
export async function parseArgv(argv: string[], commands: Record<string, LoadedCommand>): Promise<ParsedArgv> {
  argv = joinDashValues(argv, Object.values(commands).flatMap((command) => command.options));
  refuseOddNames(argv);
  const cli = cac("service-api");
  for (const { flag, help } of GLOBAL_OPTIONS) cli.option(flag, help);
  for (const command of Object.values(commands)) {
    const entry = cli.command(command.usageName, command.description);
    for (const { flag, help } of command.options) entry.option(flag, help);
    entry.action(() => {});
  }
  const parsed = cli.parse(["node", "service-api", ...argv], { run: false });
  const name = cli.matchedCommandName;
  if (name === undefined) {
    const word = parsed.args[0];
    if (word === undefined) throw new ServiceError("USAGE", `Missing command.${HELP}`);
    const { didYouMean } = await import("./suggest.ts");
    throw new ServiceError("USAGE", `Unknown command '${word}'.${didYouMean(word, COMMAND_NAMES)}${HELP}`);
  }
  const command = commands[name];
  const defs = [...GLOBAL_OPTIONS, ...command.options];
  try {
    cli.runMatchedCommand(); // cac's checks
  } catch (error) {
    throw await usageError(error, defs, argv);
  }
  return { command, flags: flagsOf(parsed.options, valuesAsTyped(argv, defs), defs, command.usageName, parsed.args) };
}

/** The flags as the command reads them: booleans and numeric values from cac, other values as typed. */
function flagsOf(options: Record<string, unknown>, typed: Map<string, string[]>, defs: readonly OptionDef[], usageName: string, args: readonly string[]): Flags {
  const flags: Flags = {};
  for (const def of defs) {
    const { long, takesValue } = optionNames(def);
    const key = keyOf(long);
    const given = options[key];
    if (given === undefined) continue;
    // A negation (`--no-rate-limit`) delivers under the key of the flag it negates: only its `false` is its own.
    if (long.startsWith("no-") && given !== false && flags[key] !== undefined) continue;
    if (long.startsWith("no-") && typed.get(long.slice(3))?.length && [given].flat().includes(false)) {
      throw new ServiceError("USAGE", `--${long.slice(3)} and --${long} contradict each other: give one`);
    }
    const values = takesValue && !def.numeric ? typed.get(long) ?? [] : [given].flat();
    if (takesValue && values.length > 1) throw new ServiceError("USAGE", `--${long} was given more than once`);
    // `[value]` (an option that has a negation too, which cac cannot give a required value) typed last, bare.
    if (takesValue && !def.numeric && values.length === 1 && values[0] === undefined) throw new ServiceError("USAGE", `option \`--${long}\` value is missing.${HELP}`);
    // A boolean given twice is the same flag; a negation's default (`expiry: true`) has no value in argv.
    const value = takesValue && !def.numeric ? values[0] : [given].flat().at(-1);
    if (value !== undefined) flags[key] = value as string | number | boolean;
  }
  const argNames = [...usageName.matchAll(/<(\w+)>/g)].map((m) => m[1]);
  argNames.forEach((argName, i) => {
    if (args[i] !== undefined) flags[argName] = String(args[i]);
  });
  return flags;
}
