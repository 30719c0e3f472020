/**
 * The key store, over any unstorage `Storage`. Layout:
 *
 *   keys:<id>            the key's record (public fields + SHA-256 of the secret)
 *   names:<sha256(name)> the id of the live key with that name   <- the commit point
 *   secrets:<sha256>     the id of the key with that secret
 *
 *   meta:revision        changes whenever a key is deleted, replaced or updated
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
 * - create claims a name only when it is absent; overwrite swaps it and deleteByName takes it without the
 *   key's lock, atomically. Every other removal of a name entry is compare-and-delete (`takeIf`), so
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
import { randomUUID } from "node:crypto";
import { generateSecret, isWellFormedSecret, sha256Hex } from "../core/secret.ts";
import { createLru } from "../core/_lru.ts";
import { checkKeyInput, checkKeyPatch, lookupName } from "./_input.ts";
import { isKeyId } from "../core/input.ts";
import { describeSystemError } from "./_system-errors.ts";
import { hashOf, isStoredKey, salvaged } from "./_record.ts";

export { type AtomicIndex, createLocalAtomicIndex } from "./atomic.ts";
import { createLocalAtomicIndex } from "./atomic.ts";
export type { CreateOptions, KeyBackend, KeyStore, KeyStoreOptions, VerifiedKey } from "./types.ts";
import type { KeyStore, KeyStoreOptions, VerifiedKey } from "./types.ts";

/** A revocation's first bump may fail on a full disk; the removal frees space and the bump after it must work. */
const tolerateNoSpace = (error: unknown) => {
  if (!["ENOSPC", "EDQUOT"].includes((error as { code?: string })?.code ?? "")) throw error;
};

const publicView = ({ hash: _hash, ...info }: StoredKey): ApiKeyInfo => info;
const REVISION = "meta:revision";
/** Name entries read per batch by `list`. */
const LIST_CHUNK = 256;

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
  const cacheSize = options.verifyCacheSize ?? 10_000;
  const cacheTtl = options.verifyCacheTtlMs ?? 5_000;
  const verified = createLru<string, { info: VerifiedKey; revision: string; at: number }>(cacheSize);
  // Validity tokens: this instance's random prefix and a count of full checks, so each is new.
  const instance = randomUUID().slice(0, 8);
  let checks = 0;

  /** Marks that some key was revoked or changed: every process's remembered verifications lapse. */
  const bumpRevision = () => (atomic.bump ? atomic.bump(REVISION) : storage.setItem(REVISION, randomUUID()));
  const readRevision = atomic.version
    ? () => atomic.version!(REVISION)
    : async () => String((await storage.getItem(REVISION)) ?? "");

  const nameKey = (name: string) => `names:${sha256Hex(name)}`;
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
  const live = async (record: StoredKey | null): Promise<StoredKey | null> =>
    record && (await readId(nameKey(record.name))) === record.id ? record : null;

  /** Removes what is left of a key once its name entry no longer points at it. */
  const discard = async (record: StoredKey | null) => {
    if (!record) return;
    if (record.hash && (await readId(`secrets:${record.hash}`)) === record.id) await storage.removeItem(`secrets:${record.hash}`);
    await storage.removeItem(`keys:${record.id}`);
  };

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

  return {
    create: (rawInput, { overwrite = false } = {}) =>
      guard("create a key", async () => {
        const input = checkKeyInput(rawInput); // the CLI's and GraphQL's rules, whoever calls
        const started = Date.now();
        const names = nameKey(input.name);
        const taken = () =>
          new ServiceError("NAME_TAKEN", `API key with name '${input.name}' already exists. Use --overwrite to replace it.`);
        if (!overwrite && (await storage.hasItem(names))) throw taken();

        // The revision file exists from the first key on, so that a later revocation can bump it in place
        // without new space (a delete must work on a full disk). One read; a write only the first time.
        if (!(await readRevision())) await bumpRevision();
        const secret = generateSecret();
        const record: StoredKey = {
          id: randomUUID(),
          name: input.name,
          ...(input.description ? { description: input.description } : {}),
          roles: [...input.roles],
          permissions: input.permissions.map((p) => ({ resource: p.resource, actions: [...p.actions] })),
          createdAt: new Date().toISOString(),
          hash: sha256Hex(secret),
        };
        // Both entries are durable before the name entry commits the key; they can be written together.
        await Promise.all([
          storage.setItem(`keys:${record.id}`, record),
          storage.setItem(`secrets:${record.hash}`, record.id),
        ]).catch(async (error) => {
          await discard(record).catch(() => {}); // one of the two may have been written (a full disk)
          throw error;
        });
        if (overwrite) {
          // Bumped before the swap as well as after: a process killed between the two must not leave
          // other processes trusting remembered verifications of the key it replaced.
          if (await storage.hasItem(names)) await bumpRevision();
          const previous = await atomic.swap(names, record.id);
          if (previous && previous !== record.id) {
            await bumpRevision();
            // Not if a rename moved it to another name first (update then overwrite): it lives on there.
            await atomic.exclusive(`keys:${previous}`, async () => {
              const replaced = await readRecord(previous);
              if (!(await live(replaced))) await discard(replaced);
            });
          }
          debug(`create: ${previous ? `replaced key ${previous} with` : "stored"} ${record.id}`);
        } else if (!(await atomic.claim(names, record.id))) {
          await discard(record);
          throw taken();
        }
        debug(`create: key ${record.id} committed in ${Date.now() - started} ms`);
        return { ...publicView(record), key: secret };
      }),

    deleteByName: (rawName) =>
      guard("delete a key", async () => {
        const name = lookupName(rawName);
        const names = nameKey(name);
        // Before too, in case this process dies mid-way. A store from before the revision was made at the first
        // create may have no revision file: on a full disk, remove the key first (freeing space), then bump.
        if (await storage.hasItem(names)) await bumpRevision().catch(tolerateNoSpace);
        const id = await atomic.take(names);
        const record = await readRecord(id);
        if (record) {
          await bumpRevision();
          await atomic.exclusive(`keys:${record.id}`, () => discard(record)); // after any rename in flight
        } else if (isKeyId(id)) {
          // The name led to a malformed or missing record: its name entry is gone; remove what is left of it.
          await bumpRevision();
          await atomic.exclusive(`keys:${id}`, async () => {
            const left = await storage.getItem(`keys:${id}`);
            if (!isStoredKey(left, id) || (await readId(nameKey(left.name))) !== id) {
              await discard({ id, hash: hashOf(left) ?? "" } as StoredKey);
            }
          });
          debug(`delete: removed what was left of key ${id}`);
          return salvaged(id, name);
        }
        debug(record ? `delete: removed key ${record.id}` : "delete: no key has that name");
        return record && publicView(record);
      }),

    deleteById: (id) =>
      // A malformed id names no key; it must not reach the lock either (it becomes a file name there).
      guard("delete a key", async () => !isKeyId(id) ? null : atomic.exclusive(`keys:${id}`, async () => {
        const record = await live(await readRecord(id));
        if (!record) return null;
        await bumpRevision().catch(tolerateNoSpace); // before too, in case this process dies mid-way
        // Compare and delete: an overwrite may have moved the name on meanwhile; then this key is gone already.
        if (!(await atomic.takeIf(nameKey(record.name), id))) return null;
        await bumpRevision();
        await discard(record);
        return publicView(record);
      })),

    update: (id, rawPatch) =>
      guard("update a key", () => {
        const patch = checkKeyPatch(rawPatch); // the CLI's and GraphQL's rules, whoever calls
        if (!isKeyId(id)) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
        return atomic.exclusive(`keys:${id}`, async () => {
          const record = await live(await readRecord(id));
          if (!record) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
          const next: StoredKey = { ...record, ...patch, id, hash: record.hash, createdAt: record.createdAt };
          if (patch.description !== undefined && !patch.description) delete next.description;
          if (next.roles.length + next.permissions.length === 0) {
            throw new ServiceError("INVALID_INPUT", "Please add at least one role or permission to the key.");
          }
          const renamed = next.name !== record.name;
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

    get: (id) => guard("read a key", async () => {
      const record = await live(await readRecord(id));
      return record && publicView(record);
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
          const entries = (await storage.getItems(names.slice(at, at + LIST_CHUNK)))
            .filter((entry): entry is { key: string; value: string } => isKeyId(entry.value));
          const values = await storage.getItems(entries.map(({ value }) => `keys:${value}`));
          values.forEach(({ value }, i) => {
            const record = checked(entries[i].value, value);
            // Only the entry of the record's own name: mid-rename a key has two, and it is listed once.
            if (record && entries[i].key === nameKey(record.name)) found.push(publicView(record));
          });
        }
        // ISO timestamps order as plain strings (localeCompare costs ~100 ms over 10,000 keys).
        return found.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.name.localeCompare(b.name)));
      }),

    isEmpty: () => guard("read the store", async () => !(await atomic.hasAny("names"))),

    // Written out rather than through `guard`: this runs on every request the service answers.
    verify: async (secret) => {
      if (!isWellFormedSecret(secret)) return null;
      const hash = sha256Hex(secret);
      try {
        // Read the revision before checking, so a revocation during the check is noticed next time.
        const revision = cacheSize > 0 ? await readRevision() : "";
        const hit = verified.get(hash);
        if (hit && hit.revision === revision && performance.now() - hit.at < cacheTtl) return hit.info;
        const record = await live(await readRecord(await readId(`secrets:${hash}`)));
        const info = record && record.hash === hash ? { ...publicView(record), validity: `${instance}.${++checks}` } : null;
        if (info && cacheSize > 0) verified.set(hash, { info, revision, at: performance.now() });
        else verified.delete(hash);
        return info;
      } catch (error) {
        throw storeError("verify a key", error);
      }
    },

    close: async () => {
      await options.dispose?.();
      await storage.dispose();
    },
  };
}
