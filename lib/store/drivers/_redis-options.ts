/**
 * The ioredis options for a store URL: one Redis or a Sentinel group, TLS files, and the deadlines that
 * keep a command from hanging while Redis is away.
 */
import { readFileSync } from "node:fs";
import type { RedisOptions } from "ioredis";
import { ServiceError } from "../../core/errors.ts";
import type { RedisTarget } from "./_redis-url.ts";

/** What the URL does not carry: TLS files and the sentinels' own password (`SERVICE_API_REDIS_*`). */
export interface RedisSecrets {
  /** Paths of PEM files: the CA that signed Redis's certificate, and this client's certificate and key. */
  tls?: { ca?: string; cert?: string; key?: string };
  /** The password of the sentinels themselves (not the master's, which the URL carries). */
  sentinelPassword?: string;
}

const TLS_VARIABLES = { ca: "SERVICE_API_REDIS_TLS_CA", cert: "SERVICE_API_REDIS_TLS_CERT", key: "SERVICE_API_REDIS_TLS_KEY" } as const;

/**
 * `SERVICE_API_REDIS_TLS_CA`, `_TLS_CERT`, `_TLS_KEY` (file paths) and `SERVICE_API_REDIS_SENTINEL_PASSWORD`.
 * @example redisSecretsFrom(process.env).tls?.ca // "/etc/ssl/redis-ca.pem"
 */
export function redisSecretsFrom(env: Record<string, string | undefined>): RedisSecrets {
  const tls: NonNullable<RedisSecrets["tls"]> = {};
  for (const [field, variable] of Object.entries(TLS_VARIABLES)) {
    const value = env[variable]?.trim();
    if (value) tls[field as keyof typeof TLS_VARIABLES] = value;
  }
  const sentinelPassword = env.SERVICE_API_REDIS_SENTINEL_PASSWORD || undefined;
  return { ...(Object.keys(tls).length ? { tls } : {}), ...(sentinelPassword ? { sentinelPassword } : {}) };
}

/** The TLS options: the files read now, so a wrong path is a usage error naming its variable, not a failed handshake. */
function tlsOptions(target: RedisTarget, files: RedisSecrets["tls"]): RedisOptions["tls"] {
  if (!files) return target.tls ? {} : undefined;
  if (!target.tls) {
    throw new ServiceError("USAGE", `${Object.keys(files).map((f) => TLS_VARIABLES[f as keyof typeof TLS_VARIABLES]).join(", ")} set, but the store URL is not rediss:// (or rediss+sentinel://): use rediss:// for TLS`);
  }
  if (Boolean(files.cert) !== Boolean(files.key)) {
    throw new ServiceError("USAGE", "SERVICE_API_REDIS_TLS_CERT and SERVICE_API_REDIS_TLS_KEY go together: a client certificate needs its key");
  }
  const read = (field: keyof typeof TLS_VARIABLES) => {
    const path = files[field];
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch (error) {
      throw new ServiceError("USAGE", `Cannot read ${TLS_VARIABLES[field]} (${path}): ${(error as { code?: string }).code ?? error}`);
    }
  };
  const [ca, cert, key] = [read("ca"), read("cert"), read("key")];
  return { ...(ca ? { ca } : {}), ...(cert ? { cert, key } : {}) };
}

/** The ioredis options: fail fast and visibly while Redis is away, reconnect in the background. */
export function clientOptionsOf(
  target: RedisTarget,
  secrets: RedisSecrets,
  { connectTimeout, commandTimeout }: { connectTimeout: number; commandTimeout: number },
): RedisOptions & { base: string } {
  const tls = tlsOptions(target, secrets.tls);
  const common: RedisOptions & { base: string } = {
    base: target.prefix,
    username: target.username,
    password: target.password,
    db: target.db,
    ...(tls ? { tls } : {}),
    lazyConnect: true,
    connectTimeout,
    commandTimeout,
    enableOfflineQueue: false,
    // 0: a command in flight when the connection drops fails at once instead of waiting for a reconnect.
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(100 * 2 ** attempt, 2_000),
    // ioredis waits this long for a closed socket's "close" (which a refused one never sends) before exiting.
    disconnectTimeout: 100,
    // ioredis's ready check sends INFO on every connection and, for a user without INFO, prints its own
    // warning to the console past LOG_FORMAT=json. One Redis gains nothing from it but a wait while Redis
    // loads its data (a command then fails, as when Redis is away); a Sentinel group keeps it below.
    enableReadyCheck: false,
  };
  if (target.mode === "single") return { ...common, host: target.hosts[0].host, port: target.hosts[0].port };
  return {
    ...common,
    sentinels: target.hosts,
    name: target.name,
    sentinelPassword: secrets.sentinelPassword,
    ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
    // The ready check's INFO is where ioredis sees that the master a sentinel named has become a replica.
    enableReadyCheck: true,
    // The sentinels announce a new master (+switch-master): reconnect to it at once.
    failoverDetector: true,
    // A write that reached a demoted master fails (STORE_UNAVAILABLE) and the client reconnects to the new one.
    reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 1 : false),
    sentinelRetryStrategy: (attempt) => Math.min(100 * 2 ** attempt, 2_000),
  };
}
