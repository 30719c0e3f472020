/**
 * The atomic index operations on Redis, on the backend's client and its prefixed keys:
 *
 *   claim  SET key value NX          (of N simultaneous creates of one name, on any host, one wins)
 *   claimAll  a Lua script: EXISTS of every entry, then SET and SADD of each (an import's commit)
 *   swap   SET key value GET         (Redis >= 6.2)
 *   swapIf a Lua compare-and-set
 *   take   GETDEL key                (Redis >= 6.2)
 *   takeIf a Lua script: GET, compare, DEL (compare and delete of a name entry)
 *   exclusive  a lease: SET locks:<key> token NX PX, released by a Lua compare-and-delete
 *   hasAny SCARD of a member set kept beside the entries, so "is the store empty" costs O(1)
 *   order  a sorted set of the keys by creation time, written with each record (`_redis-order.ts`)
 *
 * Each of claim/swap/take updates its entry and that member set in one MULTI transaction.
 */
import type { AtomicIndex } from "../atomic.ts";
import type { RedisConnection } from "./_redis-connection.ts";
import { isCount, isFlag, okOrNil, storedOrNil } from "./_redis-desync.ts";
import type { RedisOrder } from "./_redis-order.ts";

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

/**
 * Claims every name at once, or none: KEYS are the entries and, last, their member set; ARGV their values,
 * then their store keys (the set's members). Returns 0 when done, else the position (from 1) of one there.
 */
const CLAIM_ALL = `local n = #KEYS - 1
for i = 1, n do
  if redis.call("EXISTS", KEYS[i]) == 1 then return i end
end
for i = 1, n do
  redis.call("SET", KEYS[i], ARGV[i])
  redis.call("SADD", KEYS[n + 1], ARGV[n + i])
end
return 0`;

/** Deletes a lock only while it is still ours (the lease may have run out and passed to another holder). */
const RELEASE = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`;
const LOCK_LEASE_MS = 5_000;

/** The atomic index over `connection`; its `order` pages `order`, the creation-ordered index. */
export function createRedisAtomicIndex(connection: RedisConnection, order: RedisOrder): AtomicIndex {
  const { client, redisKey, unavailable, failure, wrap, results, shaped } = connection;
  /** The member set of the entries under a key's parent: `names:<hash>` is listed in `<prefix>:members:names`. */
  const membersOf = (key: string) => redisKey(`members:${key.slice(0, Math.max(0, key.lastIndexOf(":")))}`);

  return {
    claim: wrap(async (key, value) => {
      const [set] = await results(client.multi().set(redisKey(key), value, "NX").sadd(membersOf(key), key).exec(), okOrNil, isCount);
      return set === "OK";
    }),
    swap: wrap(async (key, value) => {
      const [previous] = await results(client.multi().set(redisKey(key), value, "GET").sadd(membersOf(key), key).exec(), storedOrNil, isCount);
      return (previous as string | null) ?? null;
    }),
    claimAll: wrap(async (entries) => {
      if (!entries.length) return null;
      const sets = new Set(entries.map(([key]) => membersOf(key)));
      if (sets.size !== 1) throw new Error("claimAll takes entries under one prefix"); // one member set to keep
      const keys = [...entries.map(([key]) => redisKey(key)), ...sets];
      const at = shaped(await client.eval(CLAIM_ALL, keys.length, ...keys, ...entries.map(([, value]) => value), ...entries.map(([key]) => key)), isCount);
      return at === 0 ? null : Number(at) - 1;
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
    order: async function* (after, size) {
      try {
        yield* order.order(after, size);
      } catch (error) {
        failure(error); // as every other command: STORE_UNAVAILABLE, with the URL's credentials scrubbed
      }
    },
  };
}
