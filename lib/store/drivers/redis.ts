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
 * The audit trail is a capped stream, `<prefix>:audit` (`XADD ... MAXLEN ~ <cap>`, 100,000 events by
 * default; Redis trims the oldest). Entry ids follow the events' own times (a Lua script adds each at
 * `max(its time, the last id)`), so `since` is one `XRANGE` from `<since>-0`, whatever the server's clock.
 *
 * The connection (`_redis-connection.ts`) never hangs a command nor answers from stale state when Redis goes away.
 */
import { createStorage, type Driver, type Storage } from "unstorage";
import type { AtomicIndex } from "../atomic.ts";
import { type AuditLog, auditEventOf, byTime, CLOCK_SKEW_MS, selectEvents } from "../audit.ts";
import type { AuditEvent } from "../../core/model.ts";
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

/**
 * Appends an event with an id at its own time (ARGV[1], ms), or just after the newest entry when that is
 * later (ids must grow; writers' clocks differ), so XRANGE by time finds every event at or after it.
 */
const AUDIT_ADD = `local ms = tonumber(ARGV[1])
local seq = 0
local last = redis.call("XREVRANGE", KEYS[1], "+", "-", "COUNT", 1)[1]
if last then
  local lms, lseq = string.match(last[1], "^(%d+)-(%d+)$")
  lms = tonumber(lms)
  if ms <= lms then
    ms = lms
    seq = tonumber(lseq) + 1
  end
end
return redis.call("XADD", KEYS[1], "MAXLEN", "~", ARGV[2], string.format("%.0f-%.0f", ms, seq), "event", ARGV[3])`;
/** Entries read per XRANGE / XREVRANGE round trip. */
const AUDIT_PAGE = 1_000;
const STREAM_ID = /^\d+-\d+$/;
/** An XRANGE reply: [id, [field, value, ...]] entries. */
const isEntries: Shape = (v) =>
  Array.isArray(v) &&
  v.every((e) => Array.isArray(e) && e.length === 2 && typeof e[0] === "string" && STREAM_ID.test(e[0]) &&
    Array.isArray(e[1]) && e[1].every((f: unknown) => typeof f === "string"));


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

  const stream = redisKey("audit");
  /** The events of a page of entries; an entry that is not a whole event (written by something else) is skipped. */
  const eventsOf = (entries: [string, string[]][]): AuditEvent[] =>
    entries.flatMap(([, fields]) => {
      const at = fields.indexOf("event");
      if (at < 0 || at % 2) return [];
      try {
        const event = auditEventOf(JSON.parse(fields[at + 1]));
        return event ? [event] : [];
      } catch {
        return [];
      }
    });
  const range = async (reverse: boolean, from: string, to: string): Promise<[string, string[]][]> =>
    shaped(
      await (reverse ? client.xrevrange(stream, from, to, "COUNT", AUDIT_PAGE) : client.xrange(stream, from, to, "COUNT", AUDIT_PAGE)).catch(failure),
      isEntries,
    ) as [string, string[]][];
  const audit: AuditLog = {
    append: wrap(async (event) => {
      const checked = auditEventOf(event);
      if (!checked) throw new TypeError("Not an audit event");
      const id = await client.eval(AUDIT_ADD, 1, stream, String(Date.parse(checked.at)), String(auditCap), JSON.stringify(checked));
      shaped(id, (v) => typeof v === "string" && STREAM_ID.test(v));
    }),
    // Page by page from `since` (or the start); with a limit, from the newest back, only as far as needed.
    // Ids are at or after each event's time (at most a writer's clock skew after it): `before` bounds them so.
    read: wrap(async (query = {}) => {
      const start = query.since === undefined ? "-" : `${Math.max(0, Math.ceil(query.since))}-0`;
      const end = query.before === undefined ? "+" : `(${Math.max(0, Math.ceil(query.before + CLOCK_SKEW_MS))}-0`;
      const events: AuditEvent[] = [];
      if (query.limit === undefined) {
        for (let from = start; ;) {
          const page = await range(false, from, end);
          events.push(...eventsOf(page));
          if (page.length < AUDIT_PAGE) break;
          from = `(${page[page.length - 1][0]}`;
        }
      } else {
        // A page may hold some before `since` or not before `before`: they do not count.
        const wanted = (e: AuditEvent) => Date.parse(e.at) >= (query.since ?? -Infinity) && Date.parse(e.at) < (query.before ?? Infinity);
        let found = 0;
        for (let to = end; found < query.limit; ) {
          const page = await range(true, to, start);
          const got = eventsOf(page);
          events.unshift(...got.reverse());
          found += got.filter(wanted).length;
          if (page.length < AUDIT_PAGE) break;
          to = `(${page[page.length - 1][0]}`;
        }
      }
      return selectEvents(byTime(events), query);
    }),
  };

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
