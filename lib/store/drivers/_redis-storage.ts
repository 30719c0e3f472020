/**
 * The unstorage-compatible storage of the Redis backend: unstorage's Redis driver (ioredis) under the
 * key prefix, `service-api` by default or `?prefix=<name>` in the URL, so the store keeps to its own
 * namespace in a shared database.
 */
import { createStorage, type Driver, type Storage } from "unstorage";
import type { RedisConnection } from "./_redis-connection.ts";
import type { RedisOrder } from "./_redis-order.ts";

/** The storage over `connection`'s driver; records are written with their entry in `order`. */
export function createRedisStorage(connection: RedisConnection, order: RedisOrder): Storage {
  const { driver, failure, wrap } = connection;
  // Every storage call goes through `failure` too, so a lost connection reads the same everywhere.
  const methods = ["hasItem", "getItem", "getItems", "setItem", "removeItem", "getKeys", "clear"] as const;
  const guarded = { ...driver } as Record<string, unknown>;
  for (const method of methods) {
    const fn = driver[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    if (fn) guarded[method] = wrap((...args: unknown[]) => Promise.resolve().then(() => fn(...args)));
  }
  // Records go with their index entry in one transaction (_redis-order.ts); other entries as unstorage writes them.
  const { setItem, removeItem } = guarded as Required<Pick<Driver, "setItem" | "removeItem">>;
  guarded.setItem = (key: string, value: string, opts: object) => order.setItem(key, value)?.catch(failure) ?? setItem(key, value, opts);
  guarded.removeItem = (key: string, opts: object) => order.removeItem(key)?.catch(failure) ?? removeItem(key, opts);
  return createStorage({ driver: guarded as unknown as Driver });
}
