/**
 * `apikey --scan` as the command runs it: where the keys are looked up (the store the flags and
 * environment name; never a service through --url, which would mean sending what was found), and the
 * store opened only when the first secret is found, then closed.
 */
import { isServiceError, ServiceError } from "../core/errors.ts";
import { openKeyStore, parseStoreSpec } from "../store/config.ts";
import type { KeyStore } from "../store/key-store.ts";
import type { CliBackend, CommandIO } from "./command.ts";
import type { ApikeyFlags } from "./flags.ts";
import type { Output } from "./format-results.ts";
import { runScan, type ScanStore } from "./scan.ts";
import { withStoreHint } from "./store-hint.ts";

/** A store the scan can use: one that looks secrets up by hash (local stores; not the remote backend). */
function scanStoreOf(store: CliBackend | KeyStore): ScanStore {
  const candidate = store as Partial<ScanStore>;
  if (typeof candidate.verify !== "function" || typeof candidate.refusal !== "function") {
    throw new ServiceError("USAGE", "--scan looks secrets up in a key store (--store or SERVICE_API_STORE), not through a service");
  }
  return candidate as ScanStore;
}

/** Runs the scan over the given store (library callers and tests). */
export async function scanWithStore(flags: ApikeyFlags, store: CliBackend | KeyStore): Promise<Output> {
  return await runScan(flags.paths ?? [], async () => scanStoreOf(store), { revoke: Boolean(flags.revoke), json: Boolean(flags.json) });
}

/** Runs the scan for the command line: `paths` are its operands. */
export async function runScanCommand(flags: ApikeyFlags & { store?: string; url?: string }, io: CommandIO, paths: string[]): Promise<Output> {
  if (flags.url || (!flags.store && io.env.SERVICE_API_URL?.trim())) {
    throw new ServiceError("USAGE", "--scan looks secrets up in a key store (--store or SERVICE_API_STORE), not through --url or SERVICE_API_URL: a found secret is never sent anywhere");
  }
  if (io.store) return await scanWithStore({ ...flags, paths }, io.store);
  const spec = parseStoreSpec(flags.store, io.env); // a bad --store is reported before anything is read
  let opened: KeyStore | undefined;
  const open = async () => {
    try {
      opened = await openKeyStore(spec, io.debug, { oneShot: true });
    } catch (error) {
      throw withStoreHint(error, flags.store, io.env);
    }
    return scanStoreOf(opened);
  };
  try {
    return await runScan(paths, open, { revoke: Boolean(flags.revoke), json: Boolean(flags.json) });
  } catch (error) {
    throw isServiceError(error) ? error : withStoreHint(error, flags.store, io.env);
  } finally {
    await opened?.close();
  }
}
