/**
 * Pages of keys in listing order (oldest first, then by id) for GraphQL `apiKeys(first:, after:)`.
 * A first page (no `after`) reads every key once to build an index of their creation times and ids
 * (lib/core/_key-index.ts, 24 bytes a key), kept per store; the pages after it read only their own keys,
 * by id, from the cursor's position in that index. So a client paging through 100,000 keys pays for one
 * full read, not one per page. Every key that exists from the first page to the last is returned exactly
 * once: keys are never reordered, a deleted one is skipped, and one created after the index was built
 * may be left out (its creation time sorts after every key already paged; the next first page has it).
 */
import type { ApiKeyInfo } from "../core/model.ts";
import type { KeyFilter } from "../core/filter.ts";
import { KeyIndex } from "../core/_key-index.ts";
import type { KeyStore } from "./types.ts";

type Paged = Pick<KeyStore, "listPages" | "get">;

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
export async function pageKeys(
  store: Paged,
  query: { first: number; after?: { createdAt: string; id: string }; matches?: KeyFilter },
  now: number,
): Promise<ApiKeyInfo[]> {
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
