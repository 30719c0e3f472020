/**
 * The Redis backend: one set of keys shared by the CLI and any number of servers on any hosts.
 *
 * Storage is unstorage's Redis driver (ioredis) under a key prefix, `service-api` by default or
 * `?prefix=<name>` in the URL, so the store keeps to its own namespace in a shared database. The
 * atomic index operations run on the same client and the same prefixed keys:
 *
 *   claim  SET key value NX          (of N simultaneous creates of one name, on any host, one wins)
 *   swap   SET key value GET         (Redis >= 6.2)
 *   swapIf a Lua compare-and-set
 *   take   GETDEL key                (Redis >= 6.2)
 *   takeIf a Lua script: GET, compare, DEL (compare and delete of a name entry)
 *   exclusive  a lease: SET locks:<key> token NX PX, released by a Lua compare-and-delete
 *   hasAny SCARD of a member set kept beside the entries, so "is the store empty" costs O(1)
 *   order  a sorted set of the keys by creation time, written with each record (`_redis-order.ts`)
 *
 * Each of claim/swap/take updates its entry and that member set in one MULTI transaction.
 *
 * The audit trail is a capped stream, `<prefix>:audit` (`_redis-audit.ts`).
 *
 * The connection (`_redis-connection.ts`) never hangs a command nor answers from stale state when Redis goes away.
 */
import { createStorage, type Driver, type Storage } from "unstorage";
import type { AtomicIndex } from "../atomic.ts";
import type { AuditLog } from "../audit.ts";
import { createRedisAuditLog } from "./_redis-audit.ts";
import { openRedisConnection } from "./_redis-connection.ts";
import { isCount, isFlag, okOrNil, type Shape, storedOrNil } from "./_redis-desync.ts";
import { createRedisOrder } from "./_redis-order.ts";
import { createRedisRateLimiter, type RateLimiter } from "../rate-limiter.ts";

/** Compare and delete in one step on the server: the entry goes only if it still holds the expected value. */
const TAKE_IF = `if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  redis.call("SREM", KEYS[2], ARGV[2])
  return 1
end
return 0`;

const SWAP_IF = `if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[1], ARGV[2])
  redis.call("SADD", KEYS[2], ARGV[3])
  return 1
end
return 0`;

/** Deletes a lock only while it is still ours (the lease may have run out and passed to another holder). */
const RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`;
const LOCK_LEASE_MS = 5_000;


export interface RedisBackendOptions {
  /** Milliseconds to wait for the first connection (and for each reconnection attempt). */
  connectTimeout?: number;
  /** Milliseconds after which a command that got no reply fails. */
  commandTimeout?: number;
  /** Events the audit stream keeps, about (default 100,000; Redis trims the oldest in whole blocks). */
  auditCap?: number;
}

export interface RedisBackend {
  storage: Storage;
  atomic: AtomicIndex;
  /** The audit trail: a capped stream beside the keys. */
  audit: AuditLog;
  /** Keys' rate-limit counters, beside the keys: exact across every server sharing this Redis. */
  rateLimiter: RateLimiter;
  dispose: () => Promise<void>;
}

export { redactRedisUrl } from "./_redis-url.ts";

/**
 * Opens the Redis backend for a `redis://[user:password@]host:port/db[?prefix=name]` URL (or
 * `rediss://` for TLS). Resolves once Redis answers; rejects with `STORE_UNAVAILABLE` within
 * `connectTimeout` when it does not.
 *
 * @example
 * const { storage, atomic, dispose } = await openRedisBackend("redis://127.0.0.1:6379/0");
 * const store = createKeyStore({ storage, atomic, dispose });
 */
export async function openRedisBackend(url: string, options: RedisBackendOptions = {}): Promise<RedisBackend> {
  const { connectTimeout = 3_000, commandTimeout = 5_000, auditCap = 100_000 } = options;
  const connection = await openRedisConnection(url, { connectTimeout, commandTimeout });
  const { client, driver, prefix, redisKey, unavailable, failure, wrap, outOfStep, results, shaped } = connection;

  /** The member set of the entries under a key's parent: `names:<hash>` is listed in `<prefix>:members:names`. */
  const membersOf = (key: string) => redisKey(`members:${key.slice(0, Math.max(0, key.lastIndexOf(":")))}`);

  const atomic: AtomicIndex = {
    claim: wrap(async (key, value) => {
      const [set] = await results(client.multi().set(redisKey(key), value, "NX").sadd(membersOf(key), key).exec(), okOrNil, isCount);
      return set === "OK";
    }),
    swap: wrap(async (key, value) => {
      const [previous] = await results(client.multi().set(redisKey(key), value, "GET").sadd(membersOf(key), key).exec(), storedOrNil, isCount);
      return (previous as string | null) ?? null;
    }),
    take: wrap(async (key) => {
      const [taken] = await results(client.multi().getdel(redisKey(key)).srem(membersOf(key), key).exec(), storedOrNil, isCount);
      return (taken as string | null) ?? null;
    }),
    swapIf: wrap(async (key, expected, value) =>
      shaped(await client.eval(SWAP_IF, 2, redisKey(key), membersOf(key), expected, value, key), isFlag) === 1
    ),
    takeIf: wrap(async (key, value) =>
      shaped(await client.eval(TAKE_IF, 2, redisKey(key), membersOf(key), value, key), isFlag) === 1
    ),
    exclusive: async (key, fn) => {
      const lock = redisKey(`locks:${key}`);
      const token = crypto.randomUUID();
      // A lease, so a holder that died releases it by itself; held for a few round trips at most.
      const deadline = Date.now() + LOCK_LEASE_MS + 1_000; // by then a dead holder's lease has run out
      for (;;) {
        if ((await client.set(lock, token, "PX", LOCK_LEASE_MS, "NX").catch(failure)) === "OK") break;
        if (Date.now() > deadline) throw unavailable(`key ${key} stayed locked for too long`);
        await new Promise((done) => setTimeout(done, 1 + Math.random() * 4));
      }
      try {
        return await fn();
      } finally {
        await client.eval(RELEASE, 1, lock, token).catch(() => {}); // expires by itself if this fails
      }
    },
    hasAny: wrap(async (prefix) => (await client.scard(membersOf(`${prefix.replace(/:+$/, "")}:`))) > 0),
  };

  // Every storage call goes through `failure` too, so a lost connection reads the same everywhere.
  const methods = ["hasItem", "getItem", "getItems", "setItem", "removeItem", "getKeys", "clear"] as const;
  const guarded = { ...driver } as Record<string, unknown>;
  for (const method of methods) {
    const fn = driver[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    if (fn) guarded[method] = wrap((...args: unknown[]) => Promise.resolve().then(() => fn(...args)));
  }
  // Records go with their index entry in one transaction (_redis-order.ts); other entries as unstorage writes them.
  const order = createRedisOrder(client, prefix, async (exec, n) => void (await results(exec, ...Array<Shape>(n).fill(() => true))));
  const { setItem, removeItem } = guarded as Required<Pick<Driver, "setItem" | "removeItem">>;
  guarded.setItem = (key: string, value: string, opts: object) => order.setItem(key, value)?.catch(failure) ?? setItem(key, value, opts);
  guarded.removeItem = (key: string, opts: object) => order.removeItem(key)?.catch(failure) ?? removeItem(key, opts);
  atomic.order = async function* (after, size) {
    try {
      yield* order.order(after, size);
    } catch (error) {
      failure(error); // as every other command: STORE_UNAVAILABLE, with the URL's credentials scrubbed
    }
  };
  const storage = createStorage({ driver: guarded as unknown as Driver });

  const audit = createRedisAuditLog(connection, auditCap);

  const rateLimiter = createRedisRateLimiter(client, (id, ms) => redisKey(`ratelimit:${id}:${ms}`), (error) => failure(error ?? outOfStep()));
  return {
    storage,
    atomic,
    audit,
    rateLimiter,
    dispose: async () => {
      client.disconnect();
    },
  };
}
