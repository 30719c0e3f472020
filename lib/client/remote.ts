/**
 * Remote mode of `service-api apikey`: the `KeyBackend` the command runs on, implemented over a
 * running service's GraphQL API. The command's flow and formatter are the same as in local mode,
 * so output and exit statuses are too; the service's error codes come back as `ServiceError` codes.
 * The methods are grouped by what they do: lookups and deletes, changes (./_remote-keys.ts), the audit
 * trail (./_remote-audit.ts) and use (./_usage.ts); what is asked and how answers are read is in
 * ./_remote-shapes.ts.
 */
import type { KeyBackend, KeyStore } from "../store/key-store.ts";
import { ServiceError } from "../core/errors.ts";
import { isWellFormedSecret, SECRET_PREFIX } from "../core/secret.ts";
import { type Client, createClient } from "./client.ts";
import { untrustedText } from "./_untrusted.ts";
import { remoteUsage } from "./_usage.ts";
import { remoteChanges, remoteLookups } from "./_remote-keys.ts";
import { remoteAudit } from "./_remote-audit.ts";

/** The store's methods a remote service offers: the command's, `update` and `verifyDetailed`. */
export type RemoteBackend = KeyBackend & Pick<KeyStore, "update" | "verifyDetailed">;

export interface RemoteBackendOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3001`. */
  baseUrl: string;
  /** A key allowed to manage keys (ADMIN, or the API_KEY permissions needed). */
  apiKey: string;
  timeoutMs?: number;
}

/**
 * A key backend that acts on a running service.
 * @example await runApikey(flags, createRemoteBackend({ baseUrl, apiKey }), { interactive: false })
 */
export function createRemoteBackend(options: RemoteBackendOptions | { client: Client }): RemoteBackend {
  const client = "client" in options ? options.client : createClient(options);
  return { ...remoteUsage(client), ...remoteLookups(client), ...remoteChanges(client), ...remoteAudit(client) };
}

/**
 * The backend for `apikey --url <base_url>`: checks the URL and takes the key from `SERVICE_API_KEY`.
 * @example openRemoteBackend("http://127.0.0.1:3001", process.env)
 */
export function openRemoteBackend(url: string, env: Record<string, string | undefined>): RemoteBackend {
  return createRemoteBackend({ client: openRemoteClient(url, env) });
}

/**
 * A client of the service at `url` (its base URL, checked) with the key in `SERVICE_API_KEY`: remote mode's.
 * @example openRemoteClient("http://127.0.0.1:3001", process.env)
 */
export function openRemoteClient(url: string, env: Record<string, string | undefined>, flag = "--url"): Client {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch { /* reported below */ }
  // Quoted with any credentials hidden (everything up to the last @), as for Redis URLs.
  const shown = untrustedText(url.replace(/\/\/.*@/s, "//***@"), 200);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new ServiceError("USAGE", `Invalid ${flag} '${shown}': give the service's base URL, for example http://127.0.0.1:3001`);
  }
  if (parsed.username || parsed.password) {
    // fetch refuses such URLs, and every message would then repeat the password.
    throw new ServiceError("USAGE", `Invalid ${flag} '${shown}': no user or password in the URL; the key goes in SERVICE_API_KEY`);
  }
  const apiKey = env.SERVICE_API_KEY?.trim();
  if (!apiKey) {
    throw new ServiceError("USAGE", "Remote mode needs an API key: set SERVICE_API_KEY to a key with the ADMIN role");
  }
  // Said here, naming the variable, rather than as the service's 401: the key never leaves for nothing.
  if (!isWellFormedSecret(apiKey)) {
    const what = apiKey.startsWith(SECRET_PREFIX)
      ? "it starts with 'sapi_' but is not a whole key (its checksum does not match: cut short, mistyped or made up)"
      : "it does not start with 'sapi_'";
    throw new ServiceError("UNAUTHENTICATED", `SERVICE_API_KEY is not an API key: ${what}. Set it to the key that --create printed, copied completely`);
  }
  return createClient({ baseUrl: url, apiKey });
}
