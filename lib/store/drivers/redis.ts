/**
 * The Redis backend: one set of keys shared by the CLI and any number of servers on any hosts.
 *
 * Its pieces share one connection (`_redis-connection.ts`: the ioredis client, its deadlines, and
 * failures as `STORE_UNAVAILABLE` with credentials scrubbed) and one key prefix:
 *
 *   storage      unstorage's Redis driver under the prefix (`_redis-storage.ts`)
 *   atomic       claim, swap, take, locks and the member sets, in MULTI and Lua (`_redis-atomic.ts`)
 *   order        the creation-ordered index the pages read (`_redis-order.ts`)
 *   audit        a capped stream, `<prefix>:audit` (`_redis-audit.ts`)
 *   rateLimiter  one Lua script per request over the key's counters (`../rate-limiter.ts`)
 */
import type { Storage } from "unstorage";
import type { AtomicIndex } from "../atomic.ts";
import type { AuditLog } from "../audit.ts";
import { createRedisAtomicIndex } from "./_redis-atomic.ts";
import { createRedisAuditLog } from "./_redis-audit.ts";
import { openRedisConnection } from "./_redis-connection.ts";
import type { Shape } from "./_redis-desync.ts";
import { createRedisOrder } from "./_redis-order.ts";
import { createRedisStorage } from "./_redis-storage.ts";
import type { RedisSecrets } from "./_redis-options.ts";
import { REPLICA_WAIT_MS, replicaConfirmation } from "./_redis-topology.ts";
import type { StoreTopology } from "../types.ts";
import { createRedisRateLimiter, type RateLimiter } from "../rate-limiter.ts";
import { createRedisCreditCounter, type CreditCounter } from "../credit-counter.ts";

export interface RedisBackendOptions extends RedisSecrets {
  /** Milliseconds to wait for the first connection (and for each reconnection attempt). */
  connectTimeout?: number;
  /** Milliseconds after which a command that got no reply fails. */
  commandTimeout?: number;
  /** Events the audit stream keeps, about (default 100,000; Redis trims the oldest in whole blocks). */
  auditCap?: number;
  /** Milliseconds a change waits for a replica to confirm it, when the master has replicas (default 2,000). */
  replicaWaitMs?: number;
}

export interface RedisBackend {
  storage: Storage;
  atomic: AtomicIndex;
  /** The audit trail: a capped stream beside the keys. */
  audit: AuditLog;
  /** Keys' rate-limit counters, beside the keys: exact across every server sharing this Redis. */
  rateLimiter: RateLimiter;
  /** Keys' credit counts, beside the keys: exact across every server sharing this Redis. */
  creditCounter: CreditCounter;
  /** The mode, the Redis in use, its replicas and persistence. */
  topology: () => Promise<StoreTopology>;
  /** Waits for a replica to hold the changes made so far, when there are replicas (`WAIT 1`). */
  confirmChange: () => Promise<void>;
  dispose: () => Promise<void>;
}

export { redactRedisUrl } from "./_redis-url.ts";
export { redisSecretsFrom, type RedisSecrets } from "./_redis-options.ts";

/**
 * Opens the Redis backend for a `redis://[user:password@]host:port/db[?prefix=name]` URL (`rediss://` for
 * TLS, with `tls` files), or `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/db]`
 * for the master a Sentinel group names, followed through failovers. Resolves once Redis answers; rejects
 * with `STORE_UNAVAILABLE` within `connectTimeout` when it does not.
 *
 * @example
 * const { storage, atomic, dispose } = await openRedisBackend("redis://127.0.0.1:6379/0");
 * const store = createKeyStore({ storage, atomic, dispose });
 */
export async function openRedisBackend(url: string, options: RedisBackendOptions = {}): Promise<RedisBackend> {
  const { connectTimeout = 3_000, commandTimeout = 5_000, auditCap = 100_000, replicaWaitMs = REPLICA_WAIT_MS } = options;
  const secrets = { tls: options.tls, sentinelPassword: options.sentinelPassword };
  const connection = await openRedisConnection(url, { connectTimeout, commandTimeout, secrets });
  const { client, prefix, redisKey, failure, outOfStep, results } = connection;

  // The creation-ordered index: the storage writes each record's entry with it, the atomic index pages it.
  const order = createRedisOrder(client, prefix, async (exec, n) => void (await results(exec, ...Array<Shape>(n).fill(() => true))));
  const storage = createRedisStorage(connection, order);
  const atomic = createRedisAtomicIndex(connection, order);
  const audit = createRedisAuditLog(connection, auditCap);

  const rateLimiter = createRedisRateLimiter(client, (id, ms) => redisKey(`ratelimit:${id}:${ms}`), (error) => failure(error ?? outOfStep()));
  return {
    storage,
    atomic,
    audit,
    rateLimiter,
    creditCounter: createRedisCreditCounter(client, (id) => redisKey(`credits:${id}`), (error) => failure(error ?? outOfStep()), (id, ms) => redisKey(`ratelimit:${id}:${ms}`)),
    topology: connection.topology,
    confirmChange: replicaConfirmation(client, replicaWaitMs, failure, connection.target.mode === "sentinel"),
    dispose: async () => {
      client.disconnect();
    },
  };
}
