/**
 * The key store, over any unstorage `Storage`. Creating and replacing keys is in `_create.ts`, removing them in
 * `_remove.ts`, verifying in `_verify.ts`; updates, reads and last use are here. The rules they keep together:
 *
 * Layout:
 *
 *   keys:<id>            the key's record (public fields + SHA-256 of the secret)
 *   names:<sha256(name)> the id of the live key with that name   <- the commit point
 *   secrets:<sha256>     the id of the key with that secret
 *
 *   grace:<sha256(name)> the id of the key that name had before an overwrite with a grace period:
 *                        accepted until its record's `graceUntil` (one per name; a second overwrite
 *                        with grace ends the first one's period)
 *   meta:revision        changes whenever a key is deleted, replaced or updated
 *
 * The audit trail is kept beside it (`AuditLog`): each change appends its event before the change's
 * commit point (a name entry claimed, swapped or taken), so no change is ever without its event.
 *
 * Lifecycle. A record may carry `expiresAt`: from that instant `verify` refuses it (and remembered
 * verifications lapse, the clock being read on every hit) until `deleteExpired` removes it. An
 * overwrite with a grace period first marks the old record with `graceUntil` and points its name's
 * grace entry at it (under the old key's lock), then swaps the name: the old secret authenticates
 * without a gap until then, through the grace entry. Everything that removes a key removes that entry
 * first. `lastUsedAt` is rewritten in the record under the key's lock (`recordUse`), so it neither
 * revives a deleted key nor loses an update made meanwhile; it changes no verification and bumps nothing.
 *
 * Every lookup is one read by a known key, so cost does not grow with the number of keys.
 * A key exists exactly when its name entry points at it: records are written before the name entry
 * is claimed or swapped, and the name entry is removed before anything else on delete. A process
 * that dies between the steps leaves at most an unreferenced record, never a half-made key, and a
 * secret only authenticates while its key's name entry points at its record.
 *
 * Races on one key (reasoned per pair; tests/races.test.ts runs them in a loop on files and Redis):
 * - update, deleteById and the clean-up after an overwrite or deleteByName hold the key's lock
 *   (`exclusive("keys:<id>")`), so they never interleave: two renames of one key run one after the other.
 * - create claims a name only when it is absent; overwrite swaps it only while it holds the key read
 *   before (compare and swap, so its audit event names the key it replaces), and deleteByName takes it
 *   the same way (compare and delete), both without the key's lock, atomically. Every other removal of a name entry is compare-and-delete (`takeIf`), so
 *   nothing removes an entry that has moved on to another key.
 * - A rename claims the new name, rewrites the record, then takes the old name only if it still points
 *   at this key. If an overwrite or delete took it first, the rename loses: it releases the new name and
 *   removes the key (NOT_FOUND); the overwrite's or delete's clean-up then finds nothing (it waits for
 *   the lock). If the rename wins, an overwrite finds no old entry to replace, or a key still live under
 *   its new name, and leaves it alone. So a returned secret always authenticates, a record never loses
 *   its secrets entry while a name points at it, and a listed key is whole (list shows a key only under
 *   the name its record holds).
 *
 * `verify` remembers keys it has verified, tagged with the revision it read first. A hit costs one
 * read (the revision) instead of three, and any revocation by any process sharing the storage changes
 * the revision before that process returns, so the next verify anywhere checks again. Revocations
 * bump it before they act as well, so a process killed mid-way still leaves remembered verifications
 * stale (short of one made in the instant between the two); entries also expire after `verifyCacheTtlMs`.
 * Each full check mints a new validity token (see `KeyStore.verify`), so callers that remember what a
 * key allowed (the service's answers) key on it and lapse exactly when this cache does.
 * The revision is a random token; on files it is rewritten in place (`bump`) and read as content, so it
 * changes on every bump whatever the file system's timestamps, and needs no free space: a delete works
 * on a full disk. The first create makes the revision file, so later bumps always find it. Should a bump
 * before a delete still fail for lack of space (a store from an older version), the delete proceeds and
 * the bump after it, once the delete has freed space, is the one that counts.
 * On a full disk the fs driver cannot make its lock files and runs take, takeIf and exclusive unlocked:
 * concurrent deletes still remove each key exactly once (an unlink that finds nothing loses), but a
 * create or overwrite that finds room at that very moment is not serialized against them.
 */
import { createStorage } from "unstorage";
import type { ApiKeyInfo, StoredKey } from "../core/model.ts";
import { isServiceError, ServiceError } from "../core/errors.ts";
import { randomUUID } from "../core/_random.ts";
import { checkKeyPatch, lookupName } from "./_input.ts";
import { isKeyId } from "../core/input.ts";
import { describeSystemError } from "./_system-errors.ts";
import { createEntries, publicView } from "./_entries.ts";
import { createVerifier } from "./_verify.ts";
import { createMemoryAuditLog, localActor } from "./audit.ts";
import { iso, type StoreContext } from "./_context.ts";
import { createRemovals } from "./_remove.ts";
import { createCreate } from "./_create.ts";

export { type AtomicIndex, createLocalAtomicIndex } from "./atomic.ts";
import { createLocalAtomicIndex } from "./atomic.ts";
export type { ChangeOptions, CreateOptions, KeyBackend, KeyStore, KeyStoreOptions, Refusal, VerifiedKey } from "./types.ts";
import type { KeyStore, KeyStoreOptions } from "./types.ts";

const REVISION = "meta:revision";
/** Name entries read per batch by `list`. */
const LIST_CHUNK = 256;
const UPDATABLE = ["name", "description", "roles", "permissions", "expiresAt"] as const;

/**
 * Creates a key store over an unstorage `Storage`.
 *
 * @example
 * const store = createKeyStore(); // in memory
 * const { key, id } = await store.create({ name: "ci", roles: ["ADMIN"], permissions: [] });
 * (await store.verify(key))?.id === id; // true
 */
export function createKeyStore(options: KeyStoreOptions = {}): KeyStore {
  const storage = options.storage ?? createStorage();
  const atomic = options.atomic ?? createLocalAtomicIndex(storage);
  const debug = options.debug ?? (() => {});
  const auditLog = options.audit ?? createMemoryAuditLog();
  const now = options.now ?? Date.now;
  const entries = createEntries(storage, debug);
  const { nameKey, readRecord, readId, live, discard } = entries;

  const ctx: StoreContext = {
    storage,
    atomic,
    entries,
    now,
    debug,
    bumpRevision: () => (atomic.bump ? atomic.bump(REVISION) : storage.setItem(REVISION, randomUUID())),
    readRevision: atomic.version ? () => atomic.version!(REVISION) : async () => String((await storage.getItem(REVISION)) ?? ""),
    audit: (action, key, change, extra) =>
      auditLog.append({ at: iso(now()), action, id: key.id, name: key.name, actor: change.actor ?? options.actor ?? localActor(), ...extra }),
  };
  const { bumpRevision, readRevision, audit } = ctx;
  const removals = createRemovals(ctx);
  const create = createCreate(ctx, removals.removeById);

  const storeError = (what: string, error: unknown): ServiceError => {
    if (isServiceError(error)) return error;
    const reason = describeSystemError(error) ?? (error instanceof Error ? error.message : String(error));
    return new ServiceError("STORE_UNAVAILABLE", `Key store unavailable while trying to ${what}: ${reason}`, {
      cause: error,
    });
  };
  const guard = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw storeError(what, error);
    }
  };

  const { verify, verifyNow, refusal } = createVerifier({
    entries,
    readRevision,
    cacheSize: options.verifyCacheSize ?? 10_000,
    cacheTtl: options.verifyCacheTtlMs ?? 5_000,
    now,
    onError: (error) => {
      throw storeError("verify a key", error);
    },
  });



  const store: KeyStore = {
    create: (input, options) => guard("create a key", () => create(input, options)),

    deleteByName: (name, options) => guard("delete a key", () => removals.deleteByName(name, options)),

    deleteById: (id, options = {}) =>
      // A malformed id names no key; it must not reach the lock either (it becomes a file name there).
      guard("delete a key", async () => (isKeyId(id) ? removals.removeById(id, "delete", options) : null)),

    deleteExpired: (options) => guard("delete expired keys", () => removals.deleteExpired(store.list, options)),

    update: (id, rawPatch, options = {}) =>
      guard("update a key", () => {
        const patch = checkKeyPatch(rawPatch, now()); // the CLI's and GraphQL's rules, whoever calls
        if (!isKeyId(id)) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
        return atomic.exclusive(`keys:${id}`, async () => {
          const found = await readRecord(id);
          const record = await live(found);
          if (!record) {
            if (await entries.inGrace(found)) {
              throw new ServiceError("NOT_FOUND", `API key ${id} was replaced and only works until ${found!.graceUntil} (its grace period): it can be deleted, not changed`);
            }
            throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
          }
          const next = { ...record, ...patch, id, hash: record.hash, createdAt: record.createdAt } as StoredKey;
          if (patch.description !== undefined && !patch.description) delete next.description;
          if (patch.expiresAt === null) delete next.expiresAt;
          if (next.roles.length + next.permissions.length === 0) {
            throw new ServiceError("INVALID_INPUT", "Please add at least one role or permission to the key.");
          }
          const changed = UPDATABLE.filter((field) => JSON.stringify(next[field]) !== JSON.stringify(record[field]));
          if (!changed.length) return publicView(record);
          const renamed = next.name !== record.name;
          await audit("update", next, options, { changed });
          if (renamed && !(await atomic.claim(nameKey(next.name), id))) {
            throw new ServiceError("NAME_TAKEN", `API key with name '${next.name}' already exists.`);
          }
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
          return publicView(next);
        });
      }),

    // A key in its grace period is found too (with `graceUntil`): it can be read and deleted by id.
    get: (id) => guard("read a key", async () => {
      const record = await readRecord(id);
      if (!record) return null;
      if (await live(record)) return publicView(record);
      return (await entries.inGrace(record)) ? publicView(record, true) : null;
    }),

    getByName: (name) =>
      guard("read a key", async () => {
        const record = await readRecord(await readId(nameKey(lookupName(name))));
        return record && publicView(record);
      }),

    list: () =>
      guard("list keys", async () => {
        // A chunk at a time, each read in one batch (getItems; in a server the fs driver reads a batch a few files at
        // a time off the event loop): 10,000 keys never hold up the requests served meanwhile.
        const names = await storage.getKeys("names");
        const found: ApiKeyInfo[] = [];
        for (let at = 0; at < names.length; at += LIST_CHUNK) {
          const ids = (await storage.getItems(names.slice(at, at + LIST_CHUNK)))
            .filter((entry): entry is { key: string; value: string } => isKeyId(entry.value));
          const values = await storage.getItems(ids.map(({ value }) => `keys:${value}`));
          values.forEach(({ value }, i) => {
            const record = entries.checked(ids[i].value, value);
            // Only the entry of the record's own name: mid-rename a key has two, and it is listed once.
            if (record && ids[i].key === nameKey(record.name)) found.push(publicView(record));
          });
        }
        for (const record of await removals.graced()) found.push(publicView(record, true));
        // ISO timestamps order as plain strings (localeCompare costs ~100 ms over 10,000 keys).
        return found.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.name.localeCompare(b.name)));
      }),

    isEmpty: () => guard("read the store", async () => !(await atomic.hasAny("names"))),

    verify,
    refusal,

    recordUse: (uses) =>
      guard("record when keys were used", async () => {
        for (const [id, at] of uses) {
          if (!isKeyId(id)) continue;
          // Under the key's lock, like every rewrite of a record: a delete's clean-up runs before or after,
          // never between the read and the write, so a deleted key is never written back.
          await atomic.exclusive(`keys:${id}`, async () => {
            const record = await readRecord(id);
            if (!record || (record.lastUsedAt && Date.parse(record.lastUsedAt) >= at)) return; // gone, or a later use is there
            await storage.setItem(`keys:${id}`, { ...record, lastUsedAt: iso(at) });
          });
        }
      }),

    audit: (query) => guard("read the audit trail", () => auditLog.read(query)),

    close: async () => {
      await options.dispose?.();
      await storage.dispose();
    },
  };

  // Not enumerable: a wrapper made with `{ ...store, verify }` must not keep a verifyNow that bypasses its verify.
  Object.defineProperty(store, "verifyNow", { value: verifyNow, enumerable: false });
  return store;
}
