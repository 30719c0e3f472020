#!/usr/bin/env node
/**
 * `service-api`: the command line. Parses argv with cac, picks the command, calls the library and
 * prints through the formatter. This is the only place that touches exit statuses.
 */
import process from "node:process";
import { isatty } from "node:tty";
import { cac } from "cac";
import { type ApikeyFlags, runApikey } from "./lib/apikey.ts";
import { openKeyStore, parseStoreSpec } from "./lib/config.ts";
import { ServiceError } from "./lib/errors.ts";
import { formatError, type Output } from "./lib/format.ts";
import { createDebug, resolveLogLevel } from "./lib/log.ts";
import { VERSION } from "./lib/version.ts";

const STRING_FLAGS = ["name", "description", "roles", "permissions", "store", "url", "host"] as const;

/**
 * cac (through mri) turns numeric-looking values into numbers, so `--name 007` would arrive as 7.
 * Take such values back from argv as typed. Repeating a flag is an error rather than a silent pick.
 */
function stringFlags(options: Record<string, unknown>, argv: string[]): void {
  for (const flag of STRING_FLAGS) {
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
  let action: (() => Promise<Output>) | undefined;

  cli.option("--store <spec>", "Key store: fs:<dir>, memory: or redis://host:port/db (env SERVICE_API_STORE)");

  cli
    .command("apikey", "Create, delete or list API keys")
    .option("--create", "Create a key")
    .option("--delete", "Delete a key (interactive without --name)")
    .option("--list", "List keys (never their secrets)")
    .option("--name <name>", "Key name: letters, digits and spaces")
    .option("--description <desc>", "Free-text description")
    .option("--roles <roles>", "Comma-separated roles: ADMIN, CONNECT, VIEWER, GUEST")
    .option("--permissions <perms>", "Comma-separated RESOURCE:ACTION pairs, e.g. DOCKER:READ_ANY")
    .option("--overwrite", "Replace an existing key of the same name (new id and secret)")
    .option("--json", "Print the result as one JSON object")
    .option("--url <base_url>", "Act on a running service instead of a store (env SERVICE_API_URL; key in SERVICE_API_KEY)")
    .example("service-api apikey --create --name \"deploy key\" --roles ADMIN --json")
    .example("service-api apikey --delete --name \"deploy key\"")
    .action((options: ApikeyFlags & { store?: string; url?: string }) => {
      action = async () => {
        // isatty() rather than process.stdin.isTTY: touching process.stdin builds a stream we never read.
        const notInteractiveBecause = !isatty(0)
          ? "stdin is not a terminal"
          : !isatty(1) ? "stdout is not a terminal" : undefined;
        const terminal = { interactive: !notInteractiveBecause, notInteractiveBecause };
        if (options.url && options.store) throw new ServiceError("USAGE", "Use --url or --store, not both");
        const url = options.url ?? (options.store ? undefined : process.env.SERVICE_API_URL?.trim() || undefined);
        if (url) {
          const { openRemoteBackend } = await import("./lib/remote.ts");
          return await runApikey(options, openRemoteBackend(url, process.env), terminal);
        }
        const store = await openKeyStore(parseStoreSpec(options.store), debug);
        try {
          return await runApikey(options, store, terminal);
        } finally {
          await store.close();
        }
      };
    });

  cli
    .command("serve", "Run the GraphQL service: POST /graphql with a bearer key, GET /healthz")
    .option("--host <host>", "Interface to listen on (env HOST, default 127.0.0.1)")
    .option("--port <port>", "Port, 0 for any free one (env PORT, default 3001)")
    .example("service-api serve --port 3001")
    .action((options: { host?: string; port?: string | number; store?: string }) => {
      action = async () => {
        const { runServe } = await import("./lib/serve.ts");
        return await runServe(options, { log: (line) => process.stderr.write(line + "\n"), debug });
      };
    });

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
  stringFlags(parsed.options, argv);
  await cli.runMatchedCommand();
  if (!action) throw new ServiceError("USAGE", "Nothing to do. Run 'service-api --help'.");
  return await action();
}

const argv = process.argv.slice(2);
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
  if (!(usage instanceof ServiceError) && ["debug", "trace"].includes(resolveLogLevel(process.env.LOG_LEVEL).level)) {
    process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  }
}
if (output.stdout) process.stdout.write(output.stdout);
if (output.notice) process.stderr.write(output.notice + "\n");
process.exitCode = output.exitCode;
