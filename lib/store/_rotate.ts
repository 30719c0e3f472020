/**
 * Rotating a key: a new secret for the same key. The record is copied whole and only its secret's hash is
 * replaced, so the id and every setting it holds (name, description, roles, permissions, expiry, and any
 * field a record gains later) carry over by construction.
 *
 * With a grace period the key has two secrets for that long: the record keeps the old one's hash as its
 * `retiring` secret, with the time it stops, and its secrets entry keeps pointing at the key. It is one key
 * either way: a disable, a role cut, an expiry, its credits, rate limits, usage and last use, and a delete
 * apply to both secrets at once. A key has at most one retiring secret: a rotation ends the one an earlier
 * rotation left (with or without a new grace period). A key of the same name in an overwrite's grace period
 * is another key, and a rotation leaves it alone: ending it would be a delete, which rotating (an update's
 * permission) does not grant.
 *
 * Steps, under the key's lock (so never between an update's, a delete's or an overwrite's clean-up steps,
 * nor between an overwrite's grace marking and its swap of the name, which it makes in one hold of the lock):
 *   1. the new secret's entry, pointing at the key (durable before anything refers to it);
 *   2. the event (write-ahead, like every change);
 *   3. the commit point: the record rewritten with the new hash (and the old one as `retiring`, with grace);
 *   4. the secrets that stop: the earlier retiring one, and without a grace period the old one (their
 *      entries removed, each retired, so that one coming back is reported as a sign of a leak).
 * The result says which earlier old secret step 4 stopped while it still worked (`ended`), as read under the
 * lock: of two rotations at once, only the second ends the first one's old secret, and only it can tell.
 * The revision is bumped before step 3 and after it, as for every revocation, so no server trusts a
 * remembered verification of the old secret once `rotate` has returned. A step 3 that fails is undone (the
 * new secret's entry removed). A process that dies before step 3 leaves the key as it was, plus its event;
 * after it, the secrets of step 4 no longer match the record (verify refuses them), only their entries stay.
 */
import type { RotatedKey, StoredKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { isKeyId } from "../core/input.ts";
import { MAX_GRACE_MS, untilOf } from "../core/lifecycle.ts";
import { generateSecret, sha256Hex } from "../core/secret.ts";
import { publicView } from "./_entries.ts";
import { iso, type StoreContext } from "./_context.ts";
import type { RotateOptions } from "./types.ts";

export function createRotate(ctx: StoreContext) {
  const { storage, atomic, entries, audit, bumpRevision, debug, now } = ctx;
  const { readRecord, live, inGrace } = entries;

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

  return (id: string, { graceMs, actor }: RotateOptions = {}): Promise<RotatedKey> => {
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
      const { graceUntil: _grace, retiring: earlier, ...kept } = old;
      const until = graceMs ? iso(Math.min(now() + graceMs, untilOf(old.expiresAt))) : undefined;
      const next: StoredKey = { ...kept, hash: sha256Hex(secret), ...(until ? { retiring: { hash: old.hash, until } } : {}) };
      await storage.setItem(`secrets:${next.hash}`, id);
      try {
        await audit("rotate", next, { actor });
      } catch (error) {
        await storage.removeItem(`secrets:${next.hash}`).catch(() => {});
        throw error;
      }
      try {
        await bumpRevision(); // before too, in case this process dies mid-way
        await storage.setItem(`keys:${id}`, next);
      } catch (error) {
        await storage.removeItem(`secrets:${next.hash}`).catch(() => {});
        throw error;
      }
      await bumpRevision();
      // The earlier old secret this ends, if it still worked: read under the lock, so it is this rotation's to report.
      const ended = earlier && untilOf(earlier.until) > now() ? { until: earlier.until } : null;
      // A secret that comes back after a rotation is a sign of a leak: each one that stops is retired.
      if (earlier) await entries.endRetiring(old, earlier);
      if (!until) await entries.endRetiring(old, { hash: old.hash, until: iso(now()) });
      debug(`rotate: key ${id} has a new secret${until ? `; the old one works until ${until}` : ""}${earlier ? "; the earlier old one stopped" : ""}`);
      return { ...publicView(next, false, now()), key: secret, ended };
    });
  };
}
