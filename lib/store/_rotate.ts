/**
 * Rotating a key: a new secret for the same key. The record is copied whole and only its secret's hash is
 * replaced, so the id and every setting it holds (name, description, roles, permissions, expiry, and any
 * field a record gains later) carry over by construction.
 *
 * Steps, under the key's lock (so never between an update's, a delete's or an overwrite's clean-up steps,
 * nor between an overwrite's grace marking and its swap of the name, which it makes in one hold of the lock):
 *   1. the new secret's entry, pointing at the key (durable before anything refers to it);
 *   2. the event (write-ahead, like every change);
 *   3. with a grace period: a twin of the old record under a new id, with the old hash and `graceUntil`,
 *      made the name's grace entry (ending any earlier one, as an overwrite with grace does), and the old
 *      secret's entry moved to it, so the old secret authenticates through the grace entry without a gap;
 *   4. the commit point: the record rewritten with the new hash (the old secret no longer matches it);
 *   5. without a grace period, the old secret's entry removed.
 * The revision is bumped before step 4 and after it, as for every revocation, so no server trusts a
 * remembered verification of the old secret once `rotate` has returned. A step 3 or 4 that fails is undone
 * (the old secret's entry back on the key, the twin removed). A process that dies before step 4 leaves the
 * key as it was, plus its event; if it died after step 3, its old secret then works only until the twin's
 * grace period ends, as if the rotation had been made: running it again issues the new secret.
 */
import type { CreatedKey, StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { isKeyId } from "../core/input.ts";
import { MAX_GRACE_MS, untilOf } from "../core/lifecycle.ts";
import { generateSecret, sha256Hex } from "../core/secret.ts";
import { publicView } from "./_entries.ts";
import { iso, type StoreContext } from "./_context.ts";
import type { ChangeOptions, RotateOptions } from "./types.ts";

type RemoveById = (id: string, action: "delete", change: ChangeOptions) => Promise<unknown>;

export function createRotate(ctx: StoreContext, removeById: RemoveById) {
  const { storage, atomic, entries, audit, bumpRevision, debug, now } = ctx;
  const { graceKey, readRecord, readId, live, inGrace } = entries;

  /** The live key `id`, or NOT_FOUND saying why not (absent, or replaced and in its grace period). */
  const liveKey = async (id: string): Promise<StoredKey> => {
    const found = await readRecord(id);
    const record = await live(found);
    if (record) return record;
    if (await inGrace(found)) {
      throw new ServiceError("NOT_FOUND", `API key ${id} was replaced and only works until ${found!.graceUntil} (its grace period): it can be deleted, not rotated`);
    }
    throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
  };

  /** Step 3: the old secret keeps working until `until` (ms) as a twin of the old record in the name's grace entry. */
  const keepOldSecret = async (old: StoredKey, until: number, change: ChangeOptions) => {
    const twin: StoredKey = { ...old, id: crypto.randomUUID(), graceUntil: iso(Math.min(until, untilOf(old.expiresAt))) };
    await storage.setItem(`keys:${twin.id}`, twin);
    const earlier = await readId(graceKey(old.name));
    if (isKeyId(earlier) && earlier !== old.id) await removeById(earlier, "delete", change);
    await storage.setItem(graceKey(old.name), twin.id);
    await storage.setItem(`secrets:${old.hash}`, twin.id);
    return twin;
  };

  /** A rotation that failed before its commit point: the old secret back on the key, no twin. */
  const undo = async (old: StoredKey, twin: StoredKey | undefined) => {
    await storage.setItem(`secrets:${old.hash}`, old.id);
    if (twin) await entries.discard(twin, false); // its secret is the key's own again: nothing retired
  };

  return (id: string, { graceMs, actor }: RotateOptions = {}): Promise<CreatedKey> => {
    if (graceMs !== undefined && !(graceMs > 0 && graceMs <= MAX_GRACE_MS)) {
      throw new ServiceError("INVALID_INPUT", "A grace period is more than 0 and at most 24h");
    }
    if (!isKeyId(id)) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
    return atomic.exclusive(`keys:${id}`, async () => {
      const old = await liveKey(id);
      if (untilOf(old.expiresAt) <= now()) {
        throw new ServiceError("INVALID_INPUT", `API key '${old.name}' expired at ${old.expiresAt}: a new secret for it would be refused too. Give it a new expiry first (--update --expires-in).`);
      }
      const secret = generateSecret();
      const next: StoredKey = { ...old, hash: sha256Hex(secret) };
      delete next.graceUntil;
      await storage.setItem(`secrets:${next.hash}`, id);
      try {
        await audit("rotate", next, { actor });
      } catch (error) {
        await storage.removeItem(`secrets:${next.hash}`).catch(() => {});
        throw error;
      }
      let twin: StoredKey | undefined;
      try {
        if (graceMs) twin = await keepOldSecret(old, now() + graceMs, { actor });
        await bumpRevision(); // before too, in case this process dies mid-way
        await storage.setItem(`keys:${id}`, next);
      } catch (error) {
        await undo(old, twin).catch(() => {});
        await storage.removeItem(`secrets:${next.hash}`).catch(() => {});
        throw error;
      }
      await bumpRevision();
      if (!twin && (await readId(`secrets:${old.hash}`)) === id) {
        await entries.retire(old); // a secret that comes back after a rotation is a sign of a leak
        await storage.removeItem(`secrets:${old.hash}`);
      }
      debug(`rotate: key ${id} has a new secret${twin ? `; the old one works until ${twin.graceUntil} as ${twin.id}` : ""}`);
      return { ...publicView(next), key: secret };
    });
  };
}
