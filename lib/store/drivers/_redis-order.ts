/**
 * The creation-ordered index on Redis (see lib/store/_key-order.ts): a sorted set, `<prefix>:order`,
 * every member at score 0 so that Redis orders them by name, which is listing order. A page is one
 * ZRANGEBYLEX from the cursor's entry (O(log n + page)) and a read of its own records.
 *
 * A record and its entry change in one MULTI transaction (SET with ZADD, DEL with ZREM), so no client
 * ever sees one without the other, whichever process writes. A store written before the index existed
 * has records without entries: the first page a process reads finds no `<prefix>:order-built` marker,
 * adds an entry for every record (SCAN of `keys:*`, read in batches of 500) and sets the marker. A key
 * created or deleted meanwhile changes its own entry, so at worst an extra entry is left, which readers skip.
 */
import type { Redis } from "ioredis";
import { type KeyOrder, orderOfRecord, recordId } from "../_key-order.ts";

type Exec = Promise<[Error | null, unknown][] | null>;

export interface RedisOrder {
  /** The storage driver's setItem and removeItem for records, with the record's entry in the same transaction. */
  setItem(key: string, value: string): Promise<void> | undefined;
  removeItem(key: string): Promise<void> | undefined;
  order: KeyOrder;
}

/**
 * The index of the store under `prefix`; `check` throws when a transaction's replies are not what was sent
 * (an error, or replies out of step), as the backend's own transactions do.
 */
export function createRedisOrder(client: Redis, prefix: string, check: (exec: Exec, count: number) => Promise<void>): RedisOrder {
  const zset = `${prefix}:order`;
  const marker = `${prefix}:order-built`;

  const build = async () => {
    if (await client.exists(marker)) return;
    let cursor = "0";
    do {
      const [next, found] = await client.scan(cursor, "MATCH", `${prefix}:keys:*`, "COUNT", 500);
      cursor = next;
      const ids = found.map((key) => recordId(key.slice(prefix.length + 1))).filter((id): id is string => !!id);
      if (!ids.length) continue;
      const values = await client.mget(ids.map((id) => `${prefix}:keys:${id}`));
      const names = ids.flatMap((id, i) => orderOfRecord(id, values[i]) ?? []);
      if (names.length) await client.zadd(zset, ...names.flatMap((name) => [0, name]));
    } while (cursor !== "0");
    await client.set(marker, "1");
  };
  let built: Promise<void> | undefined;

  return {
    setItem(key, value) {
      const id = recordId(key);
      const name = id && orderOfRecord(id, value);
      if (!name) return undefined;
      return check(client.multi().set(`${prefix}:${key}`, value).zadd(zset, 0, name).exec(), 2);
    },
    removeItem(key) {
      const id = recordId(key);
      if (!id) return undefined;
      return (async () => {
        const name = orderOfRecord(id, await client.get(`${prefix}:${key}`));
        const multi = client.multi().del(`${prefix}:${key}`);
        await check((name ? multi.zrem(zset, name) : multi).exec(), name ? 2 : 1);
      })();
    },
    order: async function* (after, size) {
      await (built ??= build().catch((error) => {
        built = undefined; // tried again by the next page
        throw error;
      }));
      for (let from = after === undefined ? "-" : `(${after}`; ;) {
        const names = await client.zrangebylex(zset, from, "+", "LIMIT", 0, size);
        if (!Array.isArray(names) || !names.every((name) => typeof name === "string")) throw new Error("Redis answered ZRANGEBYLEX out of step");
        if (names.length) yield names;
        if (names.length < size) return;
        from = `(${names[names.length - 1]}`;
      }
    },
  };
}
