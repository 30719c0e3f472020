/**
 * Removing keys: by id (a live key, or one in its grace period), by name (with the key it replaced, if in
 * grace), and every expired one. Each appends its event, then takes the key's commit entry by compare and
 * delete, then removes the rest (see the top of key-store.ts).
 */
import type { ApiKeyInfo, AuditAction, StoredKey } from "../core/model.ts";
import { isKeyId } from "../core/input.ts";
import { untilOf } from "../core/lifecycle.ts";
import { lookupName } from "./_input.ts";
import { hashOf, isStoredKey, salvaged } from "./_record.ts";
import { publicView } from "./_entries.ts";
import { type StoreContext, tolerateNoSpace } from "./_context.ts";
import type { ChangeOptions } from "./types.ts";

/**
 * Removes the key `id` (live, or in its grace period) if `wanted` still holds under its lock: the event,
 * then the commit point (its name or grace entry taken by compare-and-delete), then the rest.
 */
function removeById(ctx: StoreContext, id: string, action: AuditAction, options: ChangeOptions, wanted: (record: StoredKey) => boolean = () => true) {
  const { atomic, audit, bumpRevision } = ctx;
  const { nameKey, graceKey, readRecord, live, inGrace, discard } = ctx.entries;
  return atomic.exclusive(`keys:${id}`, async (): Promise<ApiKeyInfo | null> => {
    const record = await readRecord(id);
    if (!record || !wanted(record)) return null;
    const entry = (await live(record)) ? nameKey(record.name) : (await inGrace(record)) ? graceKey(record.name) : null;
    if (!entry) return null;
    await audit(action, record, options);
    await bumpRevision().catch(tolerateNoSpace); // before too, in case this process dies mid-way
    // Compare and delete: an overwrite may have moved the name on meanwhile; then this key is gone already.
    if (!(await atomic.takeIf(entry, id))) return null;
    await bumpRevision();
    await discard(record);
    return publicView(record, entry !== nameKey(record.name));
  });
}

/** Keys replaced by an overwrite whose grace entry stands, with their records (a listing: for list only). */
async function graced({ storage, entries }: StoreContext): Promise<StoredKey[]> {
  const ids = (await storage.getItems(await storage.getKeys("grace"))).map(({ value }) => value).filter(isKeyId);
  const records = await storage.getItems(ids.map((id) => `keys:${id}`));
  const found: StoredKey[] = [];
  for (const [i, { value }] of records.entries()) {
    const record = entries.checked(ids[i], value);
    if (record?.graceUntil && !(await entries.live(record))) found.push(record);
  }
  return found;
}

/**
 * Removes the rest of the key `id` once the name `name` no longer leads to it: its record as it is now (after
 * any rename or rotation in flight; a rotation's new secret entry goes too), or, when the name led to a
 * malformed or missing record, whatever is left of it.
 */
async function discardNamed(ctx: StoreContext, id: string, name: string, record: StoredKey | null): Promise<ApiKeyInfo | null> {
  const { storage, atomic, debug } = ctx;
  const { nameKey, readRecord, readId, discard } = ctx.entries;
  if (record) {
    await atomic.exclusive(`keys:${record.id}`, async () => discard((await readRecord(record.id)) ?? record));
    return publicView(record);
  }
  if (!isKeyId(id)) return null;
  await atomic.exclusive(`keys:${id}`, async () => {
    const left = await storage.getItem(`keys:${id}`);
    if (!isStoredKey(left, id) || (await readId(nameKey(left.name))) !== id) {
      await discard({ id, hash: hashOf(left) ?? "" });
    }
  });
  debug(`delete: removed what was left of key ${id}`);
  return salvaged(id, name);
}

/** Removes the key named `rawName`, and the key it replaced if that one is still in its grace period. */
async function deleteByName(ctx: StoreContext, rawName: string, options: ChangeOptions = {}): Promise<ApiKeyInfo | null> {
  const { atomic, audit, bumpRevision, debug } = ctx;
  const { nameKey, graceKey, readRecord, readId } = ctx.entries;
  const name = lookupName(rawName);
  const names = nameKey(name);
  let deleted: ApiKeyInfo | null = null;
  // The event first, for the id the name holds now; then compare-and-delete that id. Lost to a concurrent
  // overwrite or rename: read the name again.
  for (let id = await readId(names); id !== null; id = await readId(names)) {
    const record = await readRecord(id);
    await audit("delete", { id, name: record?.name ?? name }, options);
    // Before too, in case this process dies mid-way. A store from before the revision was made at the first
    // create may have no revision file: on a full disk, remove the key first (freeing space), then bump.
    await bumpRevision().catch(tolerateNoSpace);
    if (!(await atomic.takeIf(names, id))) continue;
    await bumpRevision();
    deleted = await discardNamed(ctx, id, name, record);
    break;
  }
  // The key it replaced, if still in its grace period: deleting a name stops every secret it had.
  const old = await readId(graceKey(name));
  if (isKeyId(old)) {
    const gone = await removeById(ctx, old, "delete", options);
    deleted ??= gone;
  }
  debug(deleted ? `delete: removed key ${deleted.id}` : "delete: no key has that name");
  return deleted;
}

/**
 * Removes every key whose expiry or grace period has passed (`list` is the store's own: live keys and keys
 * in grace), stray grace entries, and the retired secrets past their retention (`pruneRetired`).
 */
async function deleteExpired(
  ctx: StoreContext,
  pruneRetired: () => Promise<number>,
  list: () => Promise<ApiKeyInfo[]>,
  options: ChangeOptions = {},
): Promise<ApiKeyInfo[]> {
  const { storage, atomic, entries, debug, now } = ctx;
  /** True when a key's expiry or grace period has passed. */
  const ended = (key: ApiKeyInfo) => now() >= Math.min(untilOf(key.expiresAt), untilOf(key.graceUntil));
  const removed: ApiKeyInfo[] = [];
  // Checked again under each key's lock: an update may have moved its expiry meanwhile.
  for (const key of (await list()).filter(ended)) {
    const gone = await removeById(ctx, key.id, "prune", options, (record) => ended(publicView(record, true)));
    if (gone) removed.push(gone);
  }
  // Grace entries of keys that are live again (an overwrite killed before its swap) carry no key: drop them.
  for (const { key, value } of await storage.getItems(await storage.getKeys("grace"))) {
    const record = await entries.readRecord(typeof value === "string" ? value : null);
    if (record && (await entries.live(record)) && ended(publicView(record, true))) await atomic.takeIf(key, record.id);
  }
  const pruned = await pruneRetired();
  if (pruned) debug(`delete: removed ${pruned} retired secret${pruned === 1 ? "" : "s"} past their retention`);
  return removed;
}

/** The removals of the store of `ctx`; `pruneRetired` removes the retired secrets' entries past their retention (`_retired.ts`). */
export function createRemovals(ctx: StoreContext, pruneRetired: () => Promise<number> = async () => 0) {
  return {
    removeById: (id: string, action: AuditAction, options: ChangeOptions, wanted?: (record: StoredKey) => boolean) =>
      removeById(ctx, id, action, options, wanted),
    graced: () => graced(ctx),
    deleteByName: (rawName: string, options?: ChangeOptions) => deleteByName(ctx, rawName, options),
    deleteExpired: (list: () => Promise<ApiKeyInfo[]>, options?: ChangeOptions) => deleteExpired(ctx, pruneRetired, list, options),
  };
}
