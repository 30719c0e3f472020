/**
 * Reading and removing a key's entries (the layout is described in key-store.ts), shared by the
 * store's changes and its verification.
 */
import type { Storage } from "unstorage";
import type { ApiKeyInfo, StoredKey } from "../core/model.ts";
import { isKeyId } from "../core/input.ts";
import { sha256Hex } from "../core/secret.ts";
import { untilOf } from "../core/lifecycle.ts";
import { isStoredKey } from "./_record.ts";
import { creditsView } from "../core/credits.ts";

export type Entries = ReturnType<typeof createEntries>;

/** Records that a key's secret works no more (see `_retired.ts`). */
export type Retire = (key: { id: string; name: string; hash: string }) => Promise<void>;

export function createEntries(storage: Storage, debug: (message: string) => void, retire: Retire = async () => {}) {
  const nameKey = (name: string) => `names:${sha256Hex(name)}`;
  /** The entry of the key a name had before an overwrite with a grace period (one per name). */
  const graceKey = (name: string) => `grace:${sha256Hex(name)}`;
  // A malformed id names no key: not found, never a store error (see isKeyId). Nor does a malformed record.
  const checked = (id: string, value: unknown): StoredKey | null => {
    if (value === null || value === undefined) return null;
    if (isStoredKey(value, id)) return value;
    debug(`store: the record keys:${id} is malformed (truncated or edited?): read as no key`);
    return null;
  };
  const readRecord = async (id: string | null): Promise<StoredKey | null> =>
    isKeyId(id) ? checked(id, await storage.getItem(`keys:${id}`)) : null;
  const readId = async (key: string): Promise<string | null> => {
    const value = await storage.getItem(key);
    return typeof value === "string" ? value : null;
  };
  const isLive = async (record: StoredKey) => (await readId(nameKey(record.name))) === record.id;
  const live = async (record: StoredKey | null): Promise<StoredKey | null> => record && (await isLive(record)) ? record : null;
  /** A replaced key whose grace entry still stands (its period may have ended; see `acceptedUntil`). */
  const inGrace = async (record: StoredKey | null): Promise<boolean> =>
    !!record?.graceUntil && (await readId(graceKey(record.name))) === record.id;

  /**
   * Records that a key's secret (by its hash) works no more, for `refusal` to name the key when it comes
   * back (`_retired.ts`). `discard` calls it; a change that drops a secret without discarding its record
   * (a new secret for the same key) calls it itself. Best effort: never fails the change.
   */
  const retireSecret = (key: { id: string; name: string; hash: string }): Promise<void> =>
    retire(key).catch((error) =>
      debug(`store: the secret of key ${key.id} was not retired (${error instanceof Error ? error.message : String(error)})`)
    );

  return {
    retire: retireSecret,
    nameKey,
    graceKey,
    checked,
    readRecord,
    readId,
    live,
    inGrace,
    /**
     * Until when (ms) the record's secret `hash` authenticates. Its own secret: its expiry while its name
     * points at it, the earlier of expiry and grace while it is in a grace period, else null (revoked or
     * replaced). Its retiring secret (a rotation's old one): the earlier of expiry and the retiring time,
     * while the key is live, so never once an overwrite replaced it; else null. Any other hash: null.
     */
    acceptedUntil: async (record: StoredKey, hash = record.hash): Promise<number | null> => {
      if (hash !== record.hash) {
        return record.retiring?.hash === hash && (await isLive(record)) ? Math.min(untilOf(record.expiresAt), untilOf(record.retiring.until)) : null;
      }
      if (await isLive(record)) return untilOf(record.expiresAt);
      if (await inGrace(record)) return Math.min(untilOf(record.expiresAt), untilOf(record.graceUntil));
      return null;
    },
    /**
     * Stops the retiring secret `retiring` of key `record` (its secrets entry, if it still leads to the key),
     * and retires it. The record is the caller's to rewrite without it (or to remove).
     */
    endRetiring: async (record: Pick<StoredKey, "id" | "name">, retiring: StoredKey["retiring"]) => {
      if (!retiring) return;
      if ((await readId(`secrets:${retiring.hash}`)) === record.id) await storage.removeItem(`secrets:${retiring.hash}`);
      await retireSecret({ id: record.id, name: record.name, hash: retiring.hash });
    },
    /**
     * Removes what is left of a key once neither its name entry nor its grace entry points at it. Its
     * secret is retired last (every removal comes through here), unless `issued` is false: a record
     * whose key was never committed, so no one holds its secret. Retiring is best effort: a delete must
     * work on a full disk, and a store that is down fails the removal's next step anyway.
     */
    discard: async (record: Pick<StoredKey, "id" | "hash" | "retiring"> & { name?: string } | null, issued = true) => {
      if (!record) return;
      if (record.name !== undefined && (await readId(graceKey(record.name))) === record.id) await storage.removeItem(graceKey(record.name));
      const hashes = [record.hash, record.retiring?.hash].filter((hash): hash is string => !!hash);
      for (const hash of hashes) if ((await readId(`secrets:${hash}`)) === record.id) await storage.removeItem(`secrets:${hash}`);
      await storage.removeItem(`keys:${record.id}`);
      // Last, into the room the removal freed: on a full disk the next change's audit event needs it first.
      if (issued && record.name !== undefined) for (const hash of hashes) await retireSecret({ id: record.id, name: record.name, hash });
    },
  };
}

/**
 * What callers see of a record: no hash, no use counts (see `usage`), no grace time on a key that is live
 * again, and of a retiring secret only when it stops (`retiringUntil`), while it has not.
 */
export const publicView = ({ hash: _hash, usage: _usage, retiring, credits, ...info }: StoredKey, graced = false, now = Date.now()): ApiKeyInfo => {
  if (!graced && info.graceUntil) delete info.graceUntil;
  if (retiring && !graced && Date.parse(retiring.until) > now) info.retiringUntil = retiring.until;
  return credits ? { ...info, credits: creditsView(credits, now) } : info; // a refill due by `now` shown
};
