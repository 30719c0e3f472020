/**
 * Pages of keys in listing order (oldest first, then by id) for GraphQL `apiKeys(first:, after:)`.
 *
 * A store with a creation-ordered index (`ordered`: memory, files and Redis, see `_key-order.ts`) reads
 * the index from the cursor's position and only the records of the page: a page of 50 reads about 50
 * records however many keys there are (a filter reads on until it has its page, or to the end). A key is
 * returned where its own entry is, and an entry whose key is gone is skipped, so every key that exists
 * from the first page to the last is returned exactly once: a key created meanwhile sorts after every key
 * already there and shows up on a later page, a deleted one is skipped.
 *
 * A store without one (a storage given without its driver's atomic operations) reads every key once on a
 * first page to build an index of their creation times and ids (lib/core/_key-index.ts, 24 bytes a key),
 * kept per store; the pages after it read only their own keys from the cursor's position in that index.
 * There a key created after the first page may be left out (the next first page has it).
 */
import type { ApiKeyInfo } from "../core/model.ts";
import type { KeyFilter } from "../core/filter.ts";
import { KeyIndex } from "../core/_key-index.ts";
import type { KeyStore } from "./types.ts";
import { idOfOrder, orderName } from "./_key-order.ts";
import { isServiceError, ServiceError } from "../core/errors.ts";
import { describeSystemError } from "./_system-errors.ts";

type Paged = Pick<KeyStore, "listPages" | "get" | "ordered">;
type Query = { first: number; after?: { createdAt: string; id: string }; matches?: KeyFilter };

const indexes = new WeakMap<Paged, KeyIndex>();

async function buildIndex(store: Paged): Promise<KeyIndex> {
  const index = new KeyIndex();
  for await (const page of store.listPages()) for (const key of page) index.add(key);
  indexes.set(store, index);
  return index;
}

/**
 * The `first` keys after the cursor position `after` that `matches` keeps, oldest first.
 * @example await pageKeys(store, { first: 100 }, Date.now()) // the 100 oldest keys
 */
export async function pageKeys(store: Paged, query: Query, now: number): Promise<ApiKeyInfo[]> {
  if (store.ordered) {
    return await pageOrdered(store, store.ordered, query, now).catch((error) => {
      if (isServiceError(error)) throw error;
      const reason = describeSystemError(error) ?? (error instanceof Error ? error.message : String(error));
      throw new ServiceError("STORE_UNAVAILABLE", `Key store unavailable while trying to list keys: ${reason}`, { cause: error });
    });
  }
  const { first, after, matches } = query;
  const index = (after && indexes.get(store)) || (await buildIndex(store));
  const found: ApiKeyInfo[] = [];
  for (let at = after ? index.after(Date.parse(after.createdAt), after.id) : 0; at < index.size && found.length < first;) {
    const take = Math.min(index.size - at, Math.max(32, first - found.length));
    const ids = Array.from({ length: take }, (_, i) => index.idAt(at + i));
    at += take;
    for (const key of await Promise.all(ids.map((id) => store.get(id)))) {
      if (key && (!matches || matches(key, now)) && found.length < first) found.push(key);
    }
  }
  return found;
}

/** A page from the index: entries a chunk at a time, each kept when its key is there and the entry is its own. */
async function pageOrdered(store: Paged, ordered: NonNullable<Paged["ordered"]>, query: Query, now: number): Promise<ApiKeyInfo[]> {
  const { first, after, matches } = query;
  const found: ApiKeyInfo[] = [];
  // A filter may keep few: read on in bigger chunks (at most a page's worth of records in flight at once).
  const size = matches ? Math.max(100, first) : Math.min(first + 8, 1000);
  for await (const names of ordered(after && orderName(Date.parse(after.createdAt), after.id), size)) {
    const keys = await Promise.all(names.map((name) => store.get(idOfOrder(name))));
    for (const [i, key] of keys.entries()) {
      if (!key || orderName(Date.parse(key.createdAt), key.id) !== names[i] || (matches && !matches(key, now))) continue;
      found.push(key);
      if (found.length === first) return found;
    }
  }
  return found;
}
