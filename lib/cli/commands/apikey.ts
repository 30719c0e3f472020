/**
 * The `apikey` command: its flags and help text, and its flow, independent of argv parsing and of
 * where output goes: pick the mode, validate, call the store (local or remote), and return what to print.
 */
import { isServiceError, ServiceError } from "../../core/errors.ts";
import {
  createdJson,
  formatCreated,
  formatDeleted,
  formatNothingDeleted,
  NO_KEYS_MESSAGE,
  notFoundMessage,
  type Output,
} from "../format-results.ts";
import { formatEnv, formatExisting, formatNothingToDelete, formatUpdated } from "../format-scripts.ts";
import {
  DescriptionSchema,
  LookupNameSchema,
  NameSchema,
  parseCreateInput,
  parseInput,
  PermissionsSchema,
  ReasonSchema,
  RolesSchema,
  withPresets,
} from "../../core/input.ts";
import type { KeyBackend, KeyStore } from "../../store/key-store.ts";
import { applyLabels, parseLabelFlag, parseUnlabelFlag } from "../../core/labels.ts";
import { openKeyStore, parseStoreSpec, resolveRetiredRetention } from "../../store/config.ts";
import { type ApikeyFlags, chooseMode, MODES, lifecycleValues, type LifecycleValues } from "../flags.ts";
import type { CliBackend, CommandDef, CommandIO } from "../command.ts";
import { deliver } from "../output.ts";
import { checkOutputTarget } from "../secret-file.ts";
import { createKey } from "../create-key.ts";
import { withStoreHint } from "../store-hint.ts";
import { jsonLine } from "../json-text.ts";
import { noteDropped, rotateKey } from "../rotate.ts";
import { operands } from "../operands.ts";
import { printable } from "../scan-text.ts";
import { chosenKey, showUsage } from "../usage.ts";
import { CONTROL_OPTIONS } from "../credits.ts";

export type { ApikeyFlags, KeyBackend };

/** The flags of `apikey` plus where the keys are: a store spec or a running service's URL. */
export interface ApikeyCommandFlags extends ApikeyFlags {
  store?: string;
  url?: string;
}

export interface TerminalState {
  /** True when a person can answer prompts (stdin and stdout are terminals). */
  interactive: boolean;
  /** Why prompting is impossible, for the message (default: "stdin is not a terminal"). */
  notInteractiveBecause?: string;
}

/** The terminal's state, or a function that finds it out (called only when a prompt is needed). */
export type ApikeyContext = TerminalState | (() => Promise<TerminalState>);

/** The terminal's state when a prompt is needed: null when a person can answer. */
async function cannotPrompt(context: ApikeyContext): Promise<TerminalState | null> {
  const state = typeof context === "function" ? await context() : context;
  return state.interactive ? null : state;
}

function missing(what: string, flags: string, context: TerminalState): ServiceError {
  const because = context.notInteractiveBecause ?? "stdin is not a terminal";
  return new ServiceError("USAGE", `Missing ${what}: ${because}, so the command cannot ask for it. Pass ${flags}.`);
}

/**
 * Runs `service-api apikey` with parsed flags.
 * @example await runApikey({ create: true, name: "ci", roles: "ADMIN", json: true }, store, { interactive: false })
 */
export async function runApikey(
  flags: ApikeyFlags,
  store: CliBackend,
  context: ApikeyContext,
  where?: string,
  write?: (fd: 1, text: string) => string | undefined,
): Promise<Output> {
  const mode = chooseMode(flags);
  const asJson = Boolean(flags.json) || flags.format === "json";
  const values = lifecycleValues(flags, Date.now());

  if (mode === "list") return await (await import("../list-stream.ts")).listKeys(flags, store, { asJson, limit: values.limit, where }, write);
  if (mode === "audit") return await (await import("../lifecycle.ts")).showAudit(store, values, asJson);
  if (mode === "export") return await (await import("../transfer.ts")).exportKeys(flags, store as Partial<KeyStore>, asJson);
  if (mode === "import") {
    const { importKeys } = await import("../transfer.ts");
    return await importKeys(flags, store as Partial<KeyStore>, asJson);
  }
  if (mode === "scan") return await (await import("../scan-command.ts")).scanWithStore(flags, store);
  if (mode === "create") return await create(flags, values, store, context, asJson);
  if (mode === "update") return await update(flags, values, store, asJson);
  if (mode === "rotate") return await rotateKey(flags, values, store, asJson);
  if (mode === "usage") return await showUsage(flags, store, asJson);

  if (flags.expired) return await (await import("../lifecycle.ts")).deleteExpired(store, asJson);

  if (flags.id !== undefined) {
    const deleted = await store.deleteById(flags.id);
    if (deleted) return formatDeleted([deleted], asJson);
    return nothingToDelete(`No API key found with id: ${flags.id}`, "NOT_FOUND", flags, asJson);
  }
  if (flags.name === undefined) {
    if (flags.ifExists) throw new ServiceError("USAGE", "--if-exists needs --name <name> or --id <id>");
    const unable = await cannotPrompt(context);
    if (unable) throw missing("--name", "--name <name> or --id <id>", unable);
    const { interactiveDelete } = await import("../prompts.ts");
    return interactiveDelete(flags, store);
  }
  const name = parseInput(LookupNameSchema, flags.name);
  const deleted = await store.deleteByName(name);
  if (deleted) return formatDeleted([deleted], asJson);
  const empty = await store.isEmpty();
  if (flags.ifExists) return nothingToDelete(empty ? NO_KEYS_MESSAGE : notFoundMessage(name), empty ? "NO_KEYS" : "NOT_FOUND", flags, asJson);
  return formatNothingDeleted(name, empty, asJson);
}

/** Nothing matched a delete: exit 0 with --if-exists, else the not-found failure (exit 1). */
function nothingToDelete(message: string, code: "NOT_FOUND" | "NO_KEYS", flags: ApikeyFlags, asJson: boolean): Output {
  if (flags.ifExists) return formatNothingToDelete(message, code, asJson);
  if (asJson) return { stdout: jsonLine({ deleted: 0, error: message, code }), exitCode: 1 };
  return { notice: message, exitCode: 1 };
}

async function create(flags: ApikeyFlags, values: LifecycleValues, store: CliBackend, context: ApikeyContext, asJson: boolean): Promise<Output> {
  const env = flags.format === "env";
  if (flags.name === undefined) {
    if (flags.ifNotExists || env || flags.dryRun) {
      throw new ServiceError("USAGE", `${flags.ifNotExists ? "--if-not-exists" : flags.dryRun ? "--dry-run" : "--format env"} needs --name <name>`);
    }
    if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
    const unable = await cannotPrompt(context);
    if (unable) throw missing("--name", "--name <name> and --roles <roles> or --permissions <RESOURCE:ACTION,...>", unable);
    const { interactiveCreate } = await import("../prompts.ts");
    return interactiveCreate(flags, store);
  }
  const input = {
    ...parseCreateInput(flags),
    ...(values.expiresAt ? { expiresAt: values.expiresAt } : {}),
    ...(flags.label !== undefined ? { labels: parseLabelFlag(String(flags.label)) } : {}),
    ...(values.rateLimits?.length ? { rateLimits: values.rateLimits } : {}), ...(values.credits ? { credits: values.credits } : {}),
  };
  if (flags.dryRun) {
    const options = { overwrite: Boolean(flags.overwrite), ifNotExists: Boolean(flags.ifNotExists), graceMs: values.graceMs };
    return await (await import("../dry-run.ts")).previewCreate(input, options, store, asJson);
  }
  // --if-not-exists with the key there creates and writes nothing: its --output file from the run that
  // made the key is no obstacle (a script run twice). A key made meanwhile is caught below.
  if (flags.ifNotExists) {
    const existing = await store.getByName(input.name);
    if (existing) return formatExisting(existing, asJson, env);
  }
  if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
  const overwrite = Boolean(flags.overwrite);
  const { graceMs } = values;
  // With --overwrite, whether a key is there to replace: the summary says "Replaced" (and, with --grace,
  // until when the old secret works) only then. Its settings, for the note on those the new key lacks.
  const old = overwrite ? await store.getByName(input.name) : null;
  const replacing = old !== null;
  let made;
  try {
    made = await createKey(store, input, { overwrite, replacing, graceMs });
  } catch (error) {
    // Taken, also by a create that won a race with ours: idempotent success, nothing created.
    const existing = flags.ifNotExists && isServiceError(error) && error.code === "NAME_TAKEN" ? await store.getByName(input.name) : null;
    if (!existing) throw error;
    return formatExisting(existing, asJson, env);
  }
  const { created, graceUntil, record } = made;
  const output = env ? formatEnv(created, replacing, graceUntil) : formatCreated(created, asJson, replacing, graceUntil);
  noteDropped(output, old, created);
  // With --if-not-exists a script reads `.created`; a plain create keeps the specified shape exactly.
  if (flags.ifNotExists && asJson) output.stdout = jsonLine({ ...createdJson(created), created: true });
  return { ...output, created: record };
}

async function update(flags: ApikeyFlags, values: LifecycleValues, store: CliBackend, asJson: boolean): Promise<Output> {
  if (flags.name === undefined && flags.id === undefined) throw new ServiceError("USAGE", "--update needs --name <name> or --id <id> to choose the key");
  const patch: Parameters<CliBackend["update"]>[1] = {};
  if (flags.rename !== undefined) patch.name = parseInput(NameSchema, flags.rename);
  if (flags.description !== undefined) patch.description = parseInput(DescriptionSchema, flags.description) ?? "";
  if (flags.roles !== undefined) patch.roles = parseInput(RolesSchema, flags.roles);
  if (flags.permissions !== undefined) patch.permissions = parseInput(PermissionsSchema, flags.permissions);
  if (flags.preset !== undefined) {
    // A preset replaces the permissions (with -p's added), and adds its roles to -r's, as on create.
    const merged = withPresets({ roles: flags.roles, permissions: flags.permissions }, flags.preset);
    patch.permissions = parseInput(PermissionsSchema, merged.permissions);
    if (flags.roles !== undefined || merged.roles.length) patch.roles = parseInput(RolesSchema, merged.roles);
  }
  if (values.expiresAt) patch.expiresAt = values.expiresAt;
  if (values.clearExpiry) patch.expiresAt = null;
  Object.assign(patch, values.rateLimits ? { rateLimits: values.rateLimits } : {}, values.credits !== undefined ? { credits: values.credits } : {});
  if (flags.disable || flags.enable) patch.disabled = Boolean(flags.disable);
  if (flags.reason !== undefined) patch.disabledReason = parseInput(ReasonSchema, String(flags.reason));
  const setLabels = flags.label !== undefined ? parseLabelFlag(String(flags.label)) : undefined;
  const unsetLabels = flags.unlabel !== undefined ? parseUnlabelFlag(String(flags.unlabel)) : undefined;
  if (Object.keys(patch).length === 0 && !setLabels && !unsetLabels) {
    throw new ServiceError(
      "USAGE",
      "--update needs something to change: --roles, --permissions, --preset, --description, --rename, --expires-in, --expires-at, --no-expiry, --label, --unlabel, --rate-limit, --no-rate-limit, --credits, --no-credits, --disable or --enable",
    );
  }
  const before = await chosenKey(flags, store, "update");
  if (setLabels || unsetLabels) patch.labels = applyLabels(before.labels, setLabels, unsetLabels);
  if (flags.dryRun) return await (await import("../dry-run.ts")).previewUpdate(before, patch, store, asJson);
  return formatUpdated(await store.update(before.id, patch), before, asJson);
}

/**
 * Runs `service-api apikey`: opens the store the flags or environment name (or `io.store`), runs the
 * flow, and writes a new key's secret while the store is open (see `deliver`). Other output is returned.
 * @example await run({ create: true, name: "ci", roles: "ADMIN", json: true }, { ...io, store: createKeyStore() })
 */
export async function run(flags: ApikeyCommandFlags, io: CommandIO): Promise<Output> {
  const context: ApikeyContext = io.interactive === undefined ? terminal : { interactive: io.interactive };
  if (flags.url && flags.store) throw new ServiceError("USAGE", "Use --url or --store, not both");
  const paths = operands(io.argv ?? [], [...command.options, { flag: "--store <spec>", help: "" }]);
  // `service-api apikey create …`, as other tools spell it: the modes here are flags.
  const verb = paths[0]?.toLowerCase();
  if (verb !== undefined && (MODES as readonly string[]).includes(verb) && !MODES.some((m) => flags[m])) {
    throw new ServiceError("USAGE", `'${verb}' is a flag here: did you mean 'service-api apikey --${verb}'? Run 'service-api apikey --help'.`);
  }
  const mode = chooseMode(flags); // bad usage and bad values are reported before any store is opened
  lifecycleValues(flags, Date.now());
  if (paths.length && mode !== "scan") throw new ServiceError("USAGE", `--${mode} takes no paths (got '${printable(paths[0])}'); only --scan does`);
  if (mode === "scan") return await (await import("../scan-command.ts")).runScanCommand(flags, io, flags.paths ?? paths);
  const file = flags.output !== undefined ? { path: flags.output, force: Boolean(flags.force) } : undefined;
  const go = async (store: CliBackend, where?: string) => await deliver(await runApikey(flags, store, context, where, io.write), store, io.write, file);
  if (io.store) return await go(io.store);
  const url = flags.url ?? (flags.store ? undefined : io.env.SERVICE_API_URL?.trim() || undefined);
  if (url && (flags.export || flags.import !== undefined)) {
    throw new ServiceError("USAGE", `${flags.export ? "--export" : "--import"} works on a store (--store or SERVICE_API_STORE), not over --url: the service never hands out key hashes`);
  }
  if (url && flags.retiredRetention !== undefined) {
    throw new ServiceError("USAGE", "--retired-retention works on a store (--store or SERVICE_API_STORE), not over --url: the service keeps its own (serve --retired-retention)");
  }
  if (url) {
    const { openRemoteBackend } = await import("../../client/remote.ts");
    return await go(openRemoteBackend(url, io.env));
  }
  try {
    const spec = parseStoreSpec(flags.store, io.env);
    // A list names the store it read (a missing one lists as empty only where a create could make it).
    const where = chooseMode(flags) === "list" ? (await import("../store-where.ts")).listedStore(spec) : undefined;
    const retiredRetentionMs = resolveRetiredRetention(flags.retiredRetention, io.env);
    const store = await openKeyStore(spec, io.debug, { oneShot: true, retiredRetentionMs });
    try {
      return await go(store, where);
    } finally {
      await store.close();
    }
  } catch (error) {
    throw withStoreHint(error, flags.store, io.env);
  }
}

/** Whether stdin and stdout are terminals; isatty() rather than process.stdin, which would build a stream. */
async function terminal(): Promise<TerminalState> {
  const { isatty } = await import("node:tty");
  const notInteractiveBecause = !isatty(0) ? "stdin is not a terminal" : !isatty(1) ? "stdout is not a terminal" : undefined;
  return { interactive: !notInteractiveBecause, notInteractiveBecause };
}

/** `service-api apikey`: flags, help text and `run`. */
export const command: CommandDef<ApikeyCommandFlags> = {
  description: "Create, delete, update, rotate, disable or list API keys, read their use and audit trail, move them between stores, and find leaked ones",
  usage: [
    "service-api apikey --create --name <name> [-r <roles>] [-p <perms>] [--preset <name>] [-d <text>] [--expires-in <dur> | --expires-at <time>] [--rate-limit <n/dur,...>] [--credits <n> [--refill <n/day|month>]] [--overwrite [--grace <dur>] | --if-not-exists] [--dry-run] [--json | --format env] [--output <file> [--force]]",
    "service-api apikey --delete [--name <name> | --id <id> | --expired] [--if-exists] [--retired-retention <dur>] [--json]",
    "service-api apikey --update (--name <name> | --id <id>) [-r <roles>] [-p <perms>] [--preset <name>] [-d <text>] [--rename <name>] [--expires-in <dur> | --expires-at <time> | --no-expiry] [--rate-limit <n/dur,...> | --no-rate-limit] [--credits <n> [--refill <n/day|month>] | --no-credits] [--disable [--reason <text>] | --enable] [--dry-run] [--json]",
    "service-api apikey --rotate (--name <name> | --id <id>) [--grace <dur>] [--json | --format env] [--output <file> [--force]]",
    "service-api apikey --list [--filter <expr>] [--limit <n>] [--json]",
    "service-api apikey --audit [--since <dur|time>] [--limit <n>] [--json]",
    "service-api apikey --usage (--name <name> | --id <id>) [--json]",
    "service-api apikey --export [--output <file> [--force]] [--with-audit]",
    "service-api apikey --import <file|-> [--dry-run] [--on-conflict fail|skip|overwrite] [--json]",
    "service-api apikey --scan [<path>... | -] [--revoke] [--json]",
  ],
  options: [
    { flag: "--create", help: "Create a key" },
    { flag: "--delete", help: "Delete a key (interactive without --name, --id or --expired)" },
    { flag: "--update", help: "Change a key's roles, permissions, description, name or expiry; its secret stays" },
    { flag: "--rotate", help: "Give a key a new secret; its id and every setting (roles, expiry, ...) stay" },
    { flag: "--list", help: "List keys (never their secrets), with their expiry and last use" },
    { flag: "--audit", help: "Print the audit trail: who created, replaced, updated or deleted which key, oldest first" },
    { flag: "--usage", help: "Print how many requests a key authenticated: in all, and per day for the last 30 (UTC)" },
    { flag: "--export", help: "Write every key (ids, names, settings, secret hashes; never a secret) as JSON lines" },
    { flag: "--import <file>", help: "Load keys from an --export file (- reads stdin) into the store; all or nothing" },
    { flag: "--scan", help: "Find leaked secrets in files, folders (default .) or stdin (-); exit 1 if one is live" },
    { flag: "--revoke", help: "scan: delete every live key found (the audit trail says where)" },
    { flag: "--name <name>", help: "Key name: letters, digits and spaces" },
    { flag: "--id <id>", help: "Key id, instead of --name (delete, update, rotate)" },
    { flag: "-d, --description <desc>", help: "Free-text description (update: replaces it; \"\" removes it)" },
    { flag: "-r, --roles <roles>", help: "Comma-separated roles: ADMIN, CONNECT, VIEWER, GUEST (update: replaces them)" },
    { flag: "-p, --permissions <perms>", help: "Comma-separated RESOURCE:ACTION pairs, e.g. DOCKER:READ_ANY (update: replaces them)" },
    { flag: "--preset <name>", help: "create, update: a named permission set (docker_manager, vm_manager, monitoring, backup_manager, network_admin), added to -r and -p" },
    { flag: "--rename <name>", help: "update: the key's new name" },
    { flag: "--label <pairs>", help: "create, update: labels to set, key=value[,key=value] (at most 20 per key)" },
    { flag: "--unlabel <keys>", help: "update: label keys to remove, comma-separated" },
    { flag: "--filter <expr>", help: "list: label:env=prod, role:ADMIN, state:expired|grace|active, or part of the name; all must match" },
    { flag: "--expires-in <duration>", help: "create, update: the key stops working after this long: 45s, 30m, 12h, 7d, 90d" },
    { flag: "--expires-at <time>", help: "create, update: the key stops working at this ISO 8601 time, e.g. 2026-12-31T18:00:00Z" },
    { flag: "--no-expiry", help: "update: the key never expires" },
    ...CONTROL_OPTIONS,
    { flag: "--disable", help: "update: refuse the key on every server (401, KEY_DISABLED) until --enable; it is kept" },
    { flag: "--reason <text>", help: "with --disable: why, shown by --list --json (no secret, at most 500 characters)" },
    { flag: "--enable", help: "update: a disabled key works again" },
    { flag: "--overwrite", help: "Replace an existing key of the same name (new id and secret)" },
    { flag: "--grace <duration>", help: "with --overwrite or --rotate: the replaced secret keeps working this long (at most 24h)" },
    { flag: "--if-not-exists", help: "create: exit 0 and create nothing when the name is taken" },
    { flag: "--if-exists", help: "delete: exit 0 when there is nothing to delete" },
    { flag: "--expired", help: "delete: every key whose expiry or grace period has passed (exit 0 when none)" },
    {
      flag: "--retired-retention <duration>",
      help: "delete: how long a deleted or replaced key's secret is still recognised (env SERVICE_API_RETIRED_RETENTION, default 30d); --expired also forgets older ones",
    },
    { flag: "--since <dur|time>", help: "audit: events since a duration ago (7d) or an ISO 8601 time" },
    { flag: "--limit <n>", help: "audit: only the latest n events; list: only the oldest n keys" },
    { flag: "--output <file>", help: "create, rotate: write the secret (or the JSON) to a new file, mode 0600, instead of stdout; export: the file to write" },
    { flag: "--with-audit", help: "export: include the audit trail" },
    { flag: "--dry-run", help: "create, update, import: check everything and say what would change (with the effective permissions), change nothing" },
    { flag: "--on-conflict <mode>", help: "import: a key already there: fail (default, nothing imported), skip, or overwrite" },
    { flag: "--force", help: "with --output: replace an existing file (atomically)" },
    { flag: "--format <fmt>", help: "create, rotate: text (default), json (as --json) or env (SERVICE_API_KEY=... lines)" },
    { flag: "--json", help: "Print the result as one JSON object" },
    { flag: "--url <base_url>", help: "Act on a running service instead of a store (env SERVICE_API_URL; key in SERVICE_API_KEY)" },
  ],
  examples: [
    "service-api apikey --create --name \"deploy key\" -r ADMIN --json",
    "service-api apikey --create --name ci -r VIEWER --if-not-exists --output ci.key",
    "service-api apikey --create --name \"ci deploy\" -r ADMIN --expires-in 1h --json",
    "service-api apikey --create --name ci -r VIEWER --overwrite --grace 10m",
    "service-api apikey --create --name dockhand --preset docker_manager --dry-run",
    "service-api apikey --update --name ci -p DOCKER:READ_ANY",
    "service-api apikey --update --name ci --label env=prod,team=ops",
    "service-api apikey --update --name ci --rate-limit 10/1s,1000/1h --credits 5000 --refill 5000/day",
    "service-api apikey --rotate --name ci --grace 10m --output ci.key",
    "service-api apikey --update --name ci --disable --reason \"leaked in a log\"",
    "service-api apikey --usage --name ci --json",
    "service-api apikey --list --filter \"label:env=prod role:admin\"",
    "service-api apikey --delete --name \"deploy key\" --if-exists",
    "service-api apikey --delete --expired --json",
    "service-api apikey --audit --since 7d",
    "service-api apikey --export --output keys.jsonl",
    "service-api apikey --import keys.jsonl --store redis://127.0.0.1:6379/0",
    "git log -p | service-api apikey --scan -",
  ],
  run,
};
