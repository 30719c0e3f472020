/**
 * `--help`: the usage of every command and flag, the environment variables, the exit statuses and the
 * valid roles, resources and actions, from the command definitions themselves (so a new flag or
 * command shows up without editing this file). Lines fit 80 columns.
 */
import type { CommandDef, OptionDef } from "./command.ts";
import { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES } from "../core/model.ts";
import { VERSION } from "../core/version.ts";

/** The environment variables the CLI and the service read. */
export const ENVIRONMENT: readonly [string, string][] = [
  ["SERVICE_API_STORE", "Key store, as --store (default ${XDG_CONFIG_HOME:-~/.config}/service-api/keys)"],
  ["SERVICE_API_URL", "Act on a running service, as --url"],
  ["SERVICE_API_KEY", "The key used with --url / SERVICE_API_URL (ADMIN role)"],
  ["LOG_LEVEL", "silent, error, warn, info (default), debug or trace; on stderr"],
  ["PORT", "serve: port to listen on, as --port (default 3001)"],
  ["HOST", "serve: interface to listen on, as --host (default 127.0.0.1)"],
  ["LOG_FORMAT", "serve: json writes every service line (access, warnings, listening) as JSON"],
  ["SERVICE_API_CORS_ORIGINS", "serve: browser origins allowed to call /graphql, as --cors-origin"],
  ["SERVICE_API_METRICS_ALLOW", "serve: addresses that may read /metrics without a key, as --metrics-allow"],
  ["SERVICE_API_LAST_USE", "serve: off stops recording when keys were last used, as --no-last-use"],
  ["SERVICE_API_METRICS_GC", "serve: on adds the GC histogram to /metrics (default off, as it costs p99 latency)"],
  ["SERVICE_API_REDIS_TLS_CA", "rediss:// stores: PEM file of the CA that signed Redis's certificate"],
  ["SERVICE_API_REDIS_TLS_CERT", "rediss:// stores: PEM file of this client's certificate (with SERVICE_API_REDIS_TLS_KEY)"],
  ["SERVICE_API_REDIS_TLS_KEY", "rediss:// stores: PEM file of that certificate's key"],
  ["SERVICE_API_REDIS_SENTINEL_PASSWORD", "redis+sentinel:// stores: the sentinels' own password"],
  ["SERVICE_API_RETIRED_RETENTION", "How long deleted or replaced keys' secrets are recognised, as --retired-retention (default 30d)"],
  ["NO_COLOR", "Prompts without colours"],
];

/** Every exit status, with the error codes that lead to it. */
export const EXIT_STATUSES: readonly [number, string][] = [
  [0, "success (also --if-exists / --if-not-exists with nothing to do, and --delete --expired or --audit finding nothing)"],
  [1, "could not be done: NAME_TAKEN, NOT_FOUND, NO_KEYS, UNAUTHENTICATED, FORBIDDEN, secret not delivered"],
  [2, "bad usage or invalid input: USAGE, INVALID_INPUT"],
  [3, "key store or service unreachable: STORE_UNAVAILABLE; a change no Redis replica confirmed: NOT_REPLICATED"],
  [130, "cancelled at a prompt: CANCELLED"],
];

const WIDTH = 80;

/** Word-wraps `text` to the width, indenting continuation lines by `indent` spaces. */
function wrap(text: string, indent: number, first = ""): string {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(" ")) {
    if (line.trim() && line.length + 1 + word.length > WIDTH) {
      lines.push(line.trimEnd());
      line = " ".repeat(indent);
    }
    line += (line.trim() ? " " : "") + word;
  }
  lines.push(line.trimEnd());
  return lines.join("\n");
}

/** Two columns: a left part padded to `width`, then wrapped help. */
const row = (left: string, text: string, width: number) => wrap(text, width + 4, `  ${left.padEnd(width)} `);

/**
 * A flag as help shows it: a value in angle brackets, as every usage line writes it. cac is given
 * `--credits [n]` (a flag with a negation cannot require its value there), but `--credits` needs one.
 */
const shownFlag = (flag: string) => flag.replace(/\[(\w[^\]]*)\]$/, "<$1>");

function options(defs: readonly OptionDef[]): string[] {
  const width = Math.min(26, Math.max(...defs.map((d) => shownFlag(d.flag).length)));
  return defs.map((d) => {
    const flag = shownFlag(d.flag);
    return flag.length > width ? `  ${flag}\n${wrap(d.help, width + 4, " ".repeat(width + 4))}` : row(flag, d.help, width);
  });
}

/**
 * Help for one mode of a command (`service-api apikey --rotate --help`): its usage line, the options that
 * line names, its examples, and where the rest is. Undefined when the command has no such mode.
 */
export function renderModeHelp(name: string, command: CommandDef<object>, mode: string, global: readonly OptionDef[]): string | undefined {
  const usage = (command.usage ?? []).filter((line) => line.startsWith(`service-api ${name} --${mode} `) || line === `service-api ${name} --${mode}`);
  const modeDef = command.options.find((def) => def.flag === `--${mode}` || def.flag.startsWith(`--${mode} `));
  if (usage.length === 0 || !modeDef) return undefined;
  const named = new Set(usage.join(" ").match(/(?<![\w-])--?[a-z][\w-]*/g));
  const flagsOf = (def: OptionDef) => def.flag.match(/(?<![\w-])--?[a-z][\w-]*/g) ?? [];
  const own = command.options.filter((def) => def !== modeDef && flagsOf(def).some((flag) => named.has(flag)));
  const remote = command.remote ? command.options.filter((def) => def.flag.startsWith(`${command.remote} `) && !own.includes(def)) : [];
  const examples = command.examples.filter((line) => line.includes(` --${mode}`));
  const lines = [
    wrap(`service-api ${name} --${mode}: ${modeDef.help}`, 2),
    ...usage.map((line) => wrap(line, 6, "  ")),
    "",
    "Options:",
    ...options([...own, ...(mode === "scan" ? [] : remote), ...global]),
    "",
  ];
  if (examples.length) lines.push("Examples:", ...examples.map((line) => wrap(line, 6, "  ")), "");
  lines.push(wrap(`Every mode: service-api ${name} --help. Every flag, output and message, with examples: docs/cli.md.`, 0));
  return lines.join("\n") + "\n";
}

/** The common sections: environment, exit statuses, roles, resources, actions. */
function reference(): string[] {
  return [
    "Environment:",
    ...ENVIRONMENT.map(([name, help]) => row(name, help, 17)),
    "",
    "Exit status:",
    ...EXIT_STATUSES.map(([status, help]) => row(String(status), help, 3)),
    "",
    "Roles:",
    ...ROLES.map((role) => row(role, ROLE_DESCRIPTIONS[role], 7)),
    "",
    wrap(RESOURCES.join(" "), 2, "Resources:"),
    wrap(ACTIONS.join(" "), 2, "Actions:"),
  ];
}

/**
 * Help for the whole CLI, or for one command.
 * @example renderHelp({ apikey }, [], "apikey")
 */
/**
 * What a bare `service-api` prints: the everyday commands in a screenful, and where the rest is. The
 * whole reference (`--help`) is over 200 lines; a first look should not scroll.
 */
export function renderShortUsage(): string {
  return [
    `service-api ${VERSION}: API keys for a server, and the GraphQL service they unlock.`,
    "",
    "Everyday commands:",
    "  service-api apikey --create --name <name> --roles <roles>   create a key",
    "  service-api apikey --delete --name <name>                   delete a key",
    "  service-api apikey --list [--filter <expr>]                 list keys",
    "  service-api apikey --rotate --name <name> [--grace 10m]     a new secret",
    "  service-api serve [--port 3001]                             serve /graphql",
    "  service-api doctor                                          check the store",
    "",
    "More: --update, --audit, --export, --import, --scan (service-api apikey --help).",
    "Add --json for one JSON object. The store: --store or SERVICE_API_STORE.",
    "Run 'service-api --help' for every command and flag.",
    "",
  ].join("\n");
}

export function renderHelp(commands: Record<string, CommandDef<object>>, global: readonly OptionDef[], only?: string): string {
  const chosen = only ? [only] : Object.keys(commands);
  const lines = [wrap(`service-api ${VERSION}: create and delete API keys, and run the GraphQL service they unlock.`, 2), ""];
  if (!only) {
    lines.push("Usage: service-api <command> [options]", "", "Commands:");
    for (const name of chosen) lines.push(row(name, commands[name].description, 10));
    lines.push("");
  }
  for (const name of chosen) {
    const command = commands[name];
    lines.push(wrap(`service-api ${name}: ${command.description}`, 2), ...(command.usage ?? []).map((u) => wrap(u, 6, "  ")), "");
    if (command.usage?.some((line) => line.startsWith(`service-api ${name} --`))) lines.push(`One mode's flags only: service-api ${name} --<mode> --help`, "");
    if (command.options.length > 0) lines.push("Options:", ...options(command.options), "");
    if (command.examples.length) lines.push("Examples:", ...command.examples.map((e) => wrap(e, 6, "  ")), "");
  }
  lines.push("Global options:", ...options(global), "", ...reference());
  return lines.join("\n") + "\n";
}
