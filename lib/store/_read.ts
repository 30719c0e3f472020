/**
 * Reading keys: one by id or by name, and every key (whole, or a page at a time). A key in its grace period
 * is found by id and listed, with `graceUntil`; by name only the live key is found.
 */
import type { ApiKeyInfo, StoredKey } from "../core/model.ts";
import { lookupName } from "./_input.ts";
import { publicView } from "./_entries.ts";
import type { StoreContext } from "./_context.ts";

/** `KeyStore.get`: the key `id`, live or in its grace period (it can be read and deleted by id). */
export async function getKey({ entries, now }: StoreContext, id: string): Promise<ApiKeyInfo | null> {
  const record = await entries.readRecord(id);
  if (!record) return null;
  if (await entries.live(record)) return publicView(record, false, now());
  return (await entries.inGrace(record)) ? publicView(record, true, now()) : null;
}

/** `KeyStore.getByName`: the live key the name holds. */
export async function getKeyByName({ entries, now }: StoreContext, name: string): Promise<ApiKeyInfo | null> {
  const record = await entries.readRecord(await entries.readId(entries.nameKey(lookupName(name))));
  return record && publicView(record, false, now());
}

/** `KeyStore.list`: the live keys (`liveRecords`) and those in a grace period (`graced`), oldest first. */
export async function listKeys(
  { now }: StoreContext,
  liveRecords: () => Promise<StoredKey[]>,
  graced: () => Promise<StoredKey[]>,
): Promise<ApiKeyInfo[]> {
  // A chunk of names at a time, each read in one batch: 10,000 keys never hold up the requests served meanwhile.
  const found = (await liveRecords()).map((record) => publicView(record, false, now()));
  for (const record of await graced()) found.push(publicView(record, true, now()));
  // ISO timestamps order as plain strings (localeCompare costs ~100 ms over 10,000 keys).
  return found.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.name.localeCompare(b.name)));
}

/** `KeyStore.listPages`: the live keys a page at a time (`livePages`), then those in a grace period in one page. */
export async function* keyPages(
  { now }: StoreContext,
  livePages: () => AsyncGenerator<StoredKey[]>,
  graced: () => Promise<StoredKey[]>,
): AsyncGenerator<ApiKeyInfo[]> {
  for await (const page of livePages()) yield page.map((record) => publicView(record, false, now()));
  const found = await graced();
  if (found.length) yield found.map((record) => publicView(record, true, now()));
}
