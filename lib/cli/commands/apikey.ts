/**
 * The `apikey` command: its flow, independent of argv parsing and of where output goes. `run` checks the
 * usage and opens the store (local or, with --url, remote); `runApikey` picks the mode and hands it to the
 * module of that mode (create.ts, update.ts, delete.ts, rotate.ts, usage.ts; list, audit, export/import
 * and scan are imported only when chosen). The flags and help text are in ../apikey-help.ts.
 */
import { ServiceError } from "../../core/errors.ts";
import type { Output } from "../format-results.ts";
import type { KeyBackend, KeyStore } from "../../store/key-store.ts";
import { openKeyStore, parseStoreSpec, resolveRetiredRetention } from "../../store/config.ts";
import { type ApikeyFlags, chooseMode, MODES, lifecycleValues } from "../flags.ts";
import type { CliBackend, CommandDef, CommandIO } from "../command.ts";
import { deliver } from "../output.ts";
import { withStoreHint } from "../store-hint.ts";
import { rotateKey } from "../rotate.ts";
import { operands } from "../operands.ts";
import { printable } from "../scan-text.ts";
import { showUsage } from "../usage.ts";
import { createFromFlags } from "../create.ts";
import { updateFromFlags } from "../update.ts";
import { deleteFromFlags } from "../delete.ts";
import { type ApikeyContext, terminal, type TerminalState } from "../terminal-state.ts";
import { APIKEY_HELP } from "../apikey-help.ts";

export type { ApikeyContext, ApikeyFlags, KeyBackend, TerminalState };

/** The flags of `apikey` plus where the keys are: a store spec or a running service's URL. */
export interface ApikeyCommandFlags extends ApikeyFlags {
  store?: string;
  url?: string;
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
  if (mode === "create") return await createFromFlags(flags, values, store, context, asJson);
  if (mode === "update") return await updateFromFlags(flags, values, store, asJson);
  if (mode === "rotate") return await rotateKey(flags, values, store, asJson);
  if (mode === "usage") return await showUsage(flags, store, asJson);

  return await deleteFromFlags(flags, store, context, asJson);
}

/**
 * Runs `service-api apikey`: opens the store the flags or environment name (or `io.store`), runs the
 * flow, and writes a new key's secret while the store is open (see `deliver`). Other output is returned.
 * @example await run({ create: true, name: "ci", roles: "ADMIN", json: true }, { ...io, store: createKeyStore() })
 */
export async function run(flags: ApikeyCommandFlags, io: CommandIO): Promise<Output> {
  const context: ApikeyContext = io.interactive === undefined ? terminal : { interactive: io.interactive };
  if (flags.url && flags.store) throw new ServiceError("USAGE", "Use --url or --store, not both");
  const paths = operands(io.argv ?? [], [...APIKEY_HELP.options, { flag: "--store <spec>", help: "" }]);
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
    // An import writes thousands of files: on the thread pool their fsyncs overlap (the file system commits them together).
    const store = await openKeyStore(spec, io.debug, { oneShot: chooseMode(flags) !== "import", retiredRetentionMs });
    try {
      return await go(store, where);
    } finally {
      await store.close();
    }
  } catch (error) {
    throw withStoreHint(error, flags.store, io.env);
  }
}

/** `service-api apikey`: flags, help text and `run`. */
export const command: CommandDef<ApikeyCommandFlags> = { ...APIKEY_HELP, run };
