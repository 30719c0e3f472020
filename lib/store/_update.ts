/**
 * Updating a key: its fields, a rename, a disable or enable. Under the key's lock; the event is appended
 * before the commit point (the record rewritten), and a rename's after its new name is claimed. How a
 * rename races an overwrite or a delete of its old name is reasoned, with every other pair, at the top
 * of key-store.ts.
 */
import type { ApiKeyInfo, KeyPatch, StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { isKeyId } from "../core/input.ts";
import { checkKeyPatch } from "./_input.ts";
import { publicView } from "./_entries.ts";
import type { StoreContext } from "./_context.ts";
import { settleControls } from "./_credits.ts";
import type { ChangeOptions } from "./types.ts";

/** The fields an update may change; those it changed are named in its event. */
const UPDATABLE = ["name", "description", "roles", "permissions", "expiresAt", "labels", "disabled", "disabledReason", "rateLimits", "credits", "allowFrom"] as const;

/** The live key `id`, or NOT_FOUND saying why not (absent, or replaced and in its grace period). */
async function liveKey({ entries }: StoreContext, id: string): Promise<StoredKey> {
  const found = await entries.readRecord(id);
  const record = await entries.live(found);
  if (record) return record;
  if (await entries.inGrace(found)) {
    throw new ServiceError("NOT_FOUND", `API key ${id} was replaced and only works until ${found!.graceUntil} (its grace period): it can be deleted, not changed`);
  }
  throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
}

/** `record` with `patch` applied: fields emptied are removed, and the rules a whole key keeps are checked. */
function patched(record: StoredKey, patch: KeyPatch, now: number): StoredKey {
  const next = { ...record, ...patch, id: record.id, hash: record.hash, createdAt: record.createdAt } as StoredKey;
  if (patch.description !== undefined && !patch.description) delete next.description;
  if (patch.expiresAt === null) delete next.expiresAt;
  if (patch.labels !== undefined && Object.keys(patch.labels).length === 0) delete next.labels;
  if (patch.allowFrom?.length === 0) delete next.allowFrom;
  settleControls(next, patch, now, record.credits); // rate limits [] and credits null: none; credits given: a new count
  // Kept only while disabled: `disabled: true` and the reason given with the disable (none given: none kept).
  if (patch.disabled === true && patch.disabledReason === undefined) delete next.disabledReason;
  if (patch.disabled === false) delete next.disabled, delete next.disabledReason;
  if (next.roles.length + next.permissions.length === 0) {
    throw new ServiceError("INVALID_INPUT", "Please add at least one role or permission to the key.");
  }
  return next;
}

/** `KeyStore.update`: changes the live key `id` by `rawPatch` (checked by the CLI's and GraphQL's rules, whoever calls). */
export function updateKey(ctx: StoreContext, id: string, rawPatch: unknown, options: ChangeOptions = {}): Promise<ApiKeyInfo> {
  const { storage, atomic, audit, bumpRevision, now } = ctx;
  const { nameKey, discard } = ctx.entries;
  const patch = checkKeyPatch(rawPatch, now()); // the CLI's and GraphQL's rules, whoever calls
  if (!isKeyId(id)) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
  return atomic.exclusive(`keys:${id}`, async () => {
    const record = await liveKey(ctx, id);
    const next = patched(record, patch, now());
    const changed = UPDATABLE.filter((field) => JSON.stringify(next[field]) !== JSON.stringify(record[field]));
    if (!changed.length) return publicView(record);
    const renamed = next.name !== record.name;
    // The event follows the claim of a new name (a refused rename writes none); if it fails, the claim is given back.
    if (renamed && !(await atomic.claim(nameKey(next.name), id))) {
      throw new ServiceError("NAME_TAKEN", `API key with name '${next.name}' already exists.`);
    }
    const action = next.disabled === record.disabled ? "update" : next.disabled ? "disable" : "enable";
    await audit(action, next, options, { changed }).catch(async (error) => {
      if (renamed) await atomic.takeIf(nameKey(next.name), id).catch(() => {});
      throw error;
    });
    await bumpRevision(); // before too, in case this process dies mid-way
    await storage.setItem(`keys:${id}`, next);
    // Compare and delete: an overwrite or delete of the old name took the key away meanwhile (they do not
    // hold this key's lock for that step). Then the rename loses: release the new name and remove the key;
    // the overwrite or delete finds nothing left to clean up once it gets the lock.
    if (renamed && !(await atomic.takeIf(nameKey(record.name), id))) {
      await atomic.takeIf(nameKey(next.name), id);
      await bumpRevision();
      await discard(next);
      throw new ServiceError("NOT_FOUND", `No API key found with id: ${id} (it was replaced or deleted meanwhile)`);
    }
    await bumpRevision();
    return publicView(next, false, now());
  });
}
