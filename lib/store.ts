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
 * `verify` remembers keys it has verified, tagged with the revision it read first. A hit costs one
 * read (the revision) instead of three, and any revocation by any process sharing the storage changes
 * the revision before that process returns, so the next verify anywhere checks again. Revocations
 * bump it before they act as well, so a process killed mid-way still leaves remembered verifications
 * stale (short of one made in the instant between the two); entries also expire after `verifyCacheTtlMs`.
 */
import { createStorage, type Storage } from "unstorage";
import type { ApiKeyInfo, CreatedKey, CreateKeyInput, StoredKey } from "./model.ts";
import { ServiceError } from "./errors.ts";
import { randomUUID } from "node:crypto";
import { generateSecret, isWellFormedSecret, sha256Hex } from "./secret.ts";
import { createLru } from "./_lru.ts";
import { describeSystemError } from "./_system-errors.ts";

/**
 * The few operations unstorage has no atomic form of. Each backend provides them with its own
 * primitive (link/rename on files, SET NX / SET GET / GETDEL on Redis, a mutex in memory).
 */
export interface AtomicIndex {
  /** Sets `key` to `value` only if it is absent; true when this call set it. */
  claim(key: string, value: string): Promise<boolean>;
  /** Sets `key` to `value` and returns the value it replaced, if any. */
  swap(key: string, value: string): Promise<string | null>;
  /** Removes `key` and returns its value; of concurrent callers exactly one gets it. */
  take(key: string): Promise<string | null>;
  /** True when at least one key lies under `prefix` (without listing them all). */
  hasAny(prefix: string): Promise<boolean>;
  /**
   * Optional: a token that differs whenever `key` has been rewritten, cheaper than reading it (the
   * fs driver answers from one stat). Without it the store reads the entry itself.
   */
  version?(key: string): string | Promise<string>;
}

/** Atomic operations for a store used by one process only (memory, tests): a promise-chain mutex. */
export function createLocalAtomicIndex(storage: Storage): AtomicIndex {
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
  };
  const read = async (key: string) => (await storage.getItem<string>(key)) ?? null;
  return {
    claim: (key, value) =>
      serial(async () => {
        if (await storage.hasItem(key)) return false;
        await storage.setItem(key, value);
        return true;
      }),
    swap: (key, value) =>
      serial(async () => {
        const previous = await read(key);
        await storage.setItem(key, value);
        return previous;
      }),
    take: (key) =>
      serial(async () => {
        const previous = await read(key);
        if (previous !== null) await storage.removeItem(key);
        return previous;
      }),
    hasAny: async (prefix) => (await storage.getKeys(prefix)).length > 0,
  };
}

export interface KeyStoreOptions {
  /** Where keys live; defaults to an in-memory storage. */
  storage?: Storage;
  /** Atomic index operations for that storage; defaults to an in-process mutex. */
  atomic?: AtomicIndex;
  /** Called with short debug lines (never secrets). */
  debug?: (message: string) => void;
  /** Releases connections when the store is closed. */
  dispose?: () => Promise<void> | void;
  /** How many verified keys `verify` remembers (default 10,000; 0 turns the cache off). */
  verifyCacheSize?: number;
  /** Longest time a remembered key is trusted without a full check (default 5,000 ms). */
  verifyCacheTtlMs?: number;
}

export interface CreateOptions {
  /** Replace a key of the same name: new id, new secret, the old secret stops working. */
  overwrite?: boolean;
}

export interface KeyStore {
  /** Creates a key and returns it with its secret, the only time the secret is available. */
  create(input: CreateKeyInput, options?: CreateOptions): Promise<CreatedKey>;
  /** Deletes the key with this (validated) name; returns it, or null when none has the name. */
  deleteByName(name: string): Promise<ApiKeyInfo | null>;
  /** Deletes the key with this id; returns it, or null when there is none. */
  deleteById(id: string): Promise<ApiKeyInfo | null>;
  /** Replaces fields of a key (a rename keeps names unique); returns the updated key. */
  update(id: string, patch: Partial<CreateKeyInput>): Promise<ApiKeyInfo>;
  get(id: string): Promise<ApiKeyInfo | null>;
  getByName(name: string): Promise<ApiKeyInfo | null>;
  /** All live keys, oldest first. Reads every key: for listing, not for hot paths. */
  list(): Promise<ApiKeyInfo[]>;
  /** True when the store holds no key, without reading them all. */
  isEmpty(): Promise<boolean>;
  /** The key a secret belongs to, or null for a malformed, unknown or revoked secret. */
  verify(secret: string): Promise<ApiKeyInfo | null>;
  close(): Promise<void>;
}

const publicView = ({ hash: _hash, ...info }: StoredKey): ApiKeyInfo => info;
const REVISION = "meta:revision";

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
  const verified = createLru<string, { info: ApiKeyInfo; revision: string; at: number }>(cacheSize);

  /** Marks that some key was revoked or changed: every process's remembered verifications lapse. */
  const bumpRevision = () => storage.setItem(REVISION, randomUUID());
  const readRevision = atomic.version
    ? () => atomic.version!(REVISION)
    : async () => String((await storage.getItem(REVISION)) ?? "");

  const nameKey = (name: string) => `names:${sha256Hex(name)}`;
  const readRecord = async (id: string | null): Promise<StoredKey | null> =>
    id ? ((await storage.getItem<StoredKey>(`keys:${id}`)) ?? null) : null;
  const readId = async (key: string): Promise<string | null> => {
    const value = await storage.getItem(key);
    return typeof value === "string" ? value : null;
  };
  const live = async (record: StoredKey | null): Promise<StoredKey | null> =>
    record && (await readId(nameKey(record.name))) === record.id ? record : null;

  /** Removes what is left of a key once its name entry no longer points at it. */
  const discard = async (record: StoredKey | null) => {
    if (!record) return;
    if ((await readId(`secrets:${record.hash}`)) === record.id) await storage.removeItem(`secrets:${record.hash}`);
    await storage.removeItem(`keys:${record.id}`);
  };

  const storeError = (what: string, error: unknown): ServiceError => {
    if (error instanceof ServiceError) return error;
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
    create: (input, { overwrite = false } = {}) =>
      guard("create a key", async () => {
        const started = Date.now(); // not performance.now(): that global loads perf_hooks on a cold start
        const names = nameKey(input.name);
        const taken = () =>
          new ServiceError("NAME_TAKEN", `API key with name '${input.name}' already exists. Use --overwrite to replace it.`);
        if (!overwrite && (await storage.hasItem(names))) throw taken();

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
        ]);
        if (overwrite) {
          // Bumped before the swap as well as after: a process killed between the two must not leave
          // other processes trusting remembered verifications of the key it replaced.
          if (await storage.hasItem(names)) await bumpRevision();
          const previous = await atomic.swap(names, record.id);
          if (previous && previous !== record.id) {
            await bumpRevision();
            await discard(await readRecord(previous));
          }
          debug(`create: ${previous ? `replaced key ${previous} with` : "stored"} ${record.id}`);
        } else if (!(await atomic.claim(names, record.id))) {
          await discard(record);
          throw taken();
        }
        debug(`create: key ${record.id} committed in ${Date.now() - started} ms`);
        return { ...publicView(record), key: secret };
      }),

    deleteByName: (name) =>
      guard("delete a key", async () => {
        const names = nameKey(name);
        if (await storage.hasItem(names)) await bumpRevision(); // before too, in case this process dies mid-way
        const record = await readRecord(await atomic.take(names));
        if (record) await bumpRevision();
        await discard(record);
        debug(record ? `delete: removed key ${record.id}` : "delete: no key has that name");
        return record && publicView(record);
      }),

    deleteById: (id) =>
      guard("delete a key", async () => {
        const record = await live(await readRecord(id));
        if (!record) return null;
        const names = nameKey(record.name);
        await bumpRevision(); // before too, in case this process dies mid-way
        const taken = await atomic.take(names);
        // Lost a race with an overwrite: put the newer key's name entry back and report nothing deleted.
        if (taken !== id) {
          if (taken) await atomic.claim(names, taken);
          return null;
        }
        await bumpRevision();
        await discard(record);
        return publicView(record);
      }),

    update: (id, patch) =>
      guard("update a key", async () => {
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
        if (renamed) await atomic.take(nameKey(record.name));
        await bumpRevision();
        return publicView(next);
      }),

    get: (id) => guard("read a key", async () => {
      const record = await live(await readRecord(id));
      return record && publicView(record);
    }),

    getByName: (name) =>
      guard("read a key", async () => {
        const record = await readRecord(await readId(nameKey(name)));
        return record && publicView(record);
      }),

    list: () =>
      guard("list keys", async () => {
        const entries = await storage.getKeys("names");
        const records = await Promise.all(entries.map(async (entry) => readRecord(await readId(entry))));
        return records
          .filter((r): r is StoredKey => r !== null)
          .map(publicView)
          .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
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
        const info = record && record.hash === hash ? publicView(record) : null;
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
