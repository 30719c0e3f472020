#!/usr/bin/env node
/**
 * `service-api`: the command line. Parses argv with cac, picks the command, calls the library and
 * prints through the formatter. This is the only place that touches exit statuses.
 */
import { writeSync } from "node:fs";
import { cac } from "cac";
import { type ApikeyFlags, type KeyBackend, runApikey, undeliveredCreate } from "./lib/cli/commands/apikey.ts";
import { openKeyStore, parseStoreSpec } from "./lib/store/config.ts";
import { isServiceError, ServiceError } from "./lib/core/errors.ts";
import { formatError, type Output } from "./lib/cli/format.ts";
import { createDebug, resolveLogLevel } from "./lib/core/log.ts";
import { VERSION } from "./lib/core/version.ts";

// `process` is the global (Node, Deno 2) rather than an import of `node:process`: that import builds an
// ES module facade which reads every property of process, stdin and stdout included, and costs a
// cold start about 10 ms. Likewise node:tty is loaded only when a prompt may be needed.

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
        const terminal = async () => {
          const { isatty } = await import("node:tty");
          const notInteractiveBecause = !isatty(0)
            ? "stdin is not a terminal"
            : !isatty(1) ? "stdout is not a terminal" : undefined;
          return { interactive: !notInteractiveBecause, notInteractiveBecause };
        };
        if (options.url && options.store) throw new ServiceError("USAGE", "Use --url or --store, not both");
        const url = options.url ?? (options.store ? undefined : process.env.SERVICE_API_URL?.trim() || undefined);
        if (url) {
          const { openRemoteBackend } = await import("./lib/client/remote.ts");
          const remote = openRemoteBackend(url, process.env);
          return await deliver(await runApikey(options, remote, terminal), remote);
        }
        const store = await openKeyStore(parseStoreSpec(options.store), debug, { oneShot: true });
        try {
          return await deliver(await runApikey(options, store, terminal), store);
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
        const { runServe } = await import("./lib/cli/commands/serve.ts");
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

/**
 * Writes all of `text` to stdout (1) or stderr (2) with write(2). Building `process.stdout` for a pipe
 * would load node:net and the streams machinery, a large share of a create's start-up. Returns the error
 * code when the text could not be written (a reader that has gone away, a closed descriptor, a full disk).
 */
function writeOut(fd: 1 | 2, text: string): string | undefined {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  let waited = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(fd, bytes, at);
    } catch (error) {
      const code = (error as { code?: string }).code ?? "EIO";
      // A full non-blocking pipe: wait for the reader here rather than hand the rest to a stream, whose
      // failure would come too late to report (or, for a new key's secret, to undo the create).
      if (code !== "EAGAIN" || waited >= WRITE_PATIENCE_MS) return code;
      Atomics.wait(pause, 0, 0, 5);
      waited += 5;
    }
  }
}
const pause = new Int32Array(new SharedArrayBuffer(4));
/** How long a reader that does not read may keep the command waiting before its output counts as lost. */
const WRITE_PATIENCE_MS = 60_000;

/**
 * Writes a new key's secret while the store is still open: when it cannot be written, that secret had no
 * other copy, so the create is undone (or, for an overwrite, the message says what is left) and the
 * command fails. Other output is written by `run`.
 */
async function deliver(output: Output, store: KeyBackend): Promise<Output> {
  if (!output.created || !output.stdout) return output;
  const failed = writeOut(1, output.stdout);
  if (!failed) return { ...output, stdout: undefined };
  return { notice: await undeliveredCreate(output.created, store, failed), exitCode: 1 };
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
