/**
 * The default store lives under $HOME, which a container may not have (HOME=/ and an arbitrary UID):
 * when that store cannot be used, the message says how to choose another one.
 */
import { isServiceError, ServiceError } from "../core/errors.ts";
import { defaultStoreDir } from "../store/config.ts";

type Env = Record<string, string | undefined>;

/** The error, with a hint to set SERVICE_API_STORE when it came from the default store. */
export function withStoreHint(error: unknown, storeFlag: string | undefined, env: Env): unknown {
  if (storeFlag?.trim() || env.SERVICE_API_STORE?.trim() || !isServiceError(error) || error.code !== "STORE_UNAVAILABLE") return error;
  const where = defaultStoreDir(env);
  const hint = ` The default store is ${where}${env.XDG_CONFIG_HOME ? "" : ` (from HOME=${env.HOME ?? ""})`}:` +
    " set SERVICE_API_STORE=fs:<dir> to a directory this user can write (or pass --store <spec>).";
  return new ServiceError("STORE_UNAVAILABLE", error.message.replace(/\.?$/, ".") + hint, { cause: error });
}
