/**
 * Where keys live, resolved the same way by the CLI and the server so the two agree by default:
 * `--store`, else `SERVICE_API_STORE`, else `${XDG_CONFIG_HOME:-~/.config}/service-api/keys`.
 *
 *   fs:<dir> or a path   a directory on this host (default)
 *   memory:              this process only (tests, experiments)
 *   redis://host:port/db several hosts sharing one set of keys (rediss:// for TLS)
 *   redis+sentinel://host:port[,host:port...]/<master name>[/db]  the same, on the master a Sentinel group names
 *
 * TLS files and the sentinels' password come from `SERVICE_API_REDIS_*` variables (see `redisSecretsFrom`).
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { ServiceError } from "../core/errors.ts";
import { createStorage } from "unstorage";
import { fsDriver } from "./drivers/fs.ts";
import { createStoreDir } from "./drivers/_fs-presence.ts";
import { createKeyStore, createUpgradedKeyStore, type KeyStore } from "./key-store.ts";
import { JOURNAL } from "./_import-journal.ts";
import { parseRedisUrl, redactRedisUrl } from "./drivers/_redis-url.ts";
import { type RedisSecrets, redisSecretsFrom } from "./drivers/_redis-options.ts";
import { parseDuration } from "../core/lifecycle.ts";

export type StoreSpec =
  | { kind: "fs"; dir: string }
  | { kind: "memory" }
  | { kind: "redis"; url: string; secrets?: RedisSecrets };

type Env = Record<string, string | undefined>;

/** The default store directory. */
export function defaultStoreDir(env: Env = process.env): string {
  const config = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(config, "service-api", "keys");
}

/**
 * Reads a store description.
 * @example parseStoreSpec("fs:/var/lib/keys") // { kind: "fs", dir: "/var/lib/keys" }
 */
export function parseStoreSpec(value: string | undefined, env: Env = process.env): StoreSpec {
  // Given but blank (`--store ""`, an unset shell variable): a mistake, not a wish for the default store.
  if (value !== undefined && !value.trim()) throw new ServiceError("USAGE", "--store is empty. Give a directory, fs:<dir>, memory: or redis://host:port/db");
  const spec = value?.trim() || env.SERVICE_API_STORE?.trim() || "";
  if (!spec) return { kind: "fs", dir: defaultStoreDir(env) };
  if (spec === "memory:" || spec === "memory") return { kind: "memory" };
  if (/^rediss?(\+[a-z]+)?:\/\//i.test(spec)) {
    parseRedisUrl(spec); // a malformed URL or an unknown parameter is bad usage, before anything connects
    return { kind: "redis", url: spec, secrets: redisSecretsFrom(env) };
  }
  if (spec.startsWith("fs:")) {
    if (!spec.slice(3)) throw new ServiceError("USAGE", "Store 'fs:' needs a directory, for example fs:/var/lib/service-api");
    return { kind: "fs", dir: resolve(spec.slice(3)) };
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(spec) && !/^[a-z]:[\\/]/i.test(spec)) {
    throw new ServiceError(
      "USAGE",
      `Unknown store '${spec.split(":")[0]}:'. Use fs:<dir>, memory:, redis://host:port/db or redis+sentinel://host:port/<master name>`,
    );
  }
  return { kind: "fs", dir: resolve(spec) };
}

/**
 * Where the store choice came from, for `doctor` and the server's log: `--store`, `SERVICE_API_STORE`,
 * or the default (and the variable that placed it).
 */
export function storeSource(flag: string | undefined, env: Env = process.env): { source: "flag" | "environment" | "default"; detail: string } {
  if (flag?.trim()) return { source: "flag", detail: "--store" };
  if (env.SERVICE_API_STORE?.trim()) return { source: "environment", detail: "SERVICE_API_STORE" };
  const from = env.XDG_CONFIG_HOME ? `XDG_CONFIG_HOME=${env.XDG_CONFIG_HOME}` : `HOME=${env.HOME || homedir()}`;
  return { source: "default", detail: `the default, from ${from}` };
}

/**
 * How long retired secrets are remembered (see `KeyStoreOptions.retiredRetentionMs`): `--retired-retention`,
 * else `SERVICE_API_RETIRED_RETENTION`, else undefined (the store's default, 30 days). A duration: 12h, 90d.
 */
export function resolveRetiredRetention(flag: string | undefined, env: Env = process.env): number | undefined {
  if (flag !== undefined) return parseDuration(String(flag), "--retired-retention");
  const value = env.SERVICE_API_RETIRED_RETENTION?.trim();
  return value ? parseDuration(value, "SERVICE_API_RETIRED_RETENTION") : undefined;
}

/** Describes a store for logs, without credentials. */
export function describeStore(spec: StoreSpec): string {
  if (spec.kind === "fs") return `fs:${spec.dir}`;
  if (spec.kind === "memory") return "memory:";
  return redactRedisUrl(spec.url);
}

/**
 * Opens the key store a spec describes. Drivers load lazily, so a command pays only for the one it uses.
 * `oneShot`: the caller makes one change and exits (the CLI), so file I/O may block.
 * `create`: a directory store is made now if missing, owned by this user (`serve`: the store a later
 * root CLI run then keeps that owner for). `retiredRetentionMs`: see `resolveRetiredRetention`.
 * @example const store = await openKeyStore(parseStoreSpec("memory:"));
 */
export async function openKeyStore(
  spec: StoreSpec,
  debug?: (message: string) => void,
  options: { oneShot?: boolean; create?: boolean; retiredRetentionMs?: number } = {},
): Promise<KeyStore> {
  debug?.(`store: ${describeStore(spec)}`);
  const { retiredRetentionMs } = options;
  if (spec.kind === "memory") {
    const store = createKeyStore({ debug, retiredRetentionMs });
    // A one-shot process forgets its keys as it exits: a secret it printed could never authenticate anywhere.
    if (options.oneShot) {
      store.create = async () => {
        throw new ServiceError("USAGE", "memory: keeps keys only inside one process, and the CLI exits at once: a key made there could never be used. Use a directory (fs:<dir>) or redis://, or --url to ask a running service");
      };
    }
    return store;
  }
  if (spec.kind === "fs") {
    if (options.create) await createStoreDir(spec.dir);
    const open = async (blocking?: boolean) => {
      const driver = fsDriver({ base: spec.dir, blocking, debug });
      await driver.check(); // a bad, foreign or loose directory is reported before any work, and a server never starts on one
      const storage = createStorage({ driver });
      return { storage, store: await createUpgradedKeyStore({ storage, atomic: driver.atomic, audit: driver.audit, debug, retiredRetentionMs }) };
    };
    const { storage, store } = await open(options.oneShot);
    if (!options.oneShot) return recovered(store, debug);
    if (!(await storage.hasItem(JOURNAL))) return store; // one read: nothing to roll back
    // An import to roll back: on the thread pool, where the fsyncs of its thousands of removals overlap.
    const pooled = (await open(false)).store;
    await recovered(pooled, debug).finally(() => pooled.close());
    return store;
  }
  const { openRedisBackend } = await import("./drivers/redis.ts");
  const backend = await openRedisBackend(spec.url, spec.secrets);
  try {
    return await recovered(await createUpgradedKeyStore({ ...backend, debug, retiredRetentionMs }), debug); // its audit trail included
  } catch (error) {
    await backend.dispose();
    throw error;
  }
}

/**
 * `store`, once an import a killed process left half done is rolled back: whatever the command, none of its
 * keys is seen. Should that fail (a store this user may only read), the command goes on and says so at debug.
 */
async function recovered(store: KeyStore, debug?: (message: string) => void): Promise<KeyStore> {
  await store.recover?.().catch((error) => debug?.(`store: an interrupted import was not rolled back: ${(error as Error).message}`));
  return store;
}

export { bindThenSettleAsOwner } from "./drivers/_fs-owner.ts";
