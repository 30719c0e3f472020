/**
 * The key store, over any unstorage `Storage`. Creating and replacing keys is in `_create.ts`, rotating them in
 * `_rotate.ts`, updating them in `_update.ts`, removing them in `_remove.ts`, reading them in `_read.ts`,
 * verifying in `_verify.ts`, their use in `_usage.ts`; this module makes the context they share and wires
 * them into a `KeyStore`, each behind the store's error wrapper (`_guard.ts`). The rules they keep together:
 *
 * Layout:
 *
 *   keys:<id>            the key's record (public fields + SHA-256 of the secret; after a rotation with a
 *                        grace period also `retiring`: the old secret's hash and when it stops)
 *   names:<sha256(name)> the id of the live key with that name   <- the commit point
 *   secrets:<sha256>     the id of the key with that secret (its current one, or its retiring one)
 *
 *   grace:<sha256(name)> the id of the key that name had before an overwrite with a grace period:
 *                        accepted until its record's `graceUntil` (one per name; a second overwrite
 *                        or a rotation with grace ends the first one's period)
 *   retired:<sha256>     { id, name, retiredAt } of a secret that works no more (`_retired.ts`): written
 *                        by `discard`, which every removal ends in; never read by `verify`
 *   meta:revision        changes whenever a key is deleted, replaced or updated
 *   meta:format          the layout, once an older one was brought up to it (`_migrate.ts`)
 *   meta:import          the journal of an import in progress (`_import-journal.ts`): rolled back by the
 *                        next open of the store when its process died
 *
 * The audit trail is kept beside it (`AuditLog`): each change appends its event before the change's
 * commit point (a name entry claimed, swapped or taken, or for an update its record rewritten), so no
 * change is ever without its event; a rename appends it only once its new name is claimed, so a rename
 * refused for a taken name leaves no event.
 *
 * Lifecycle. A record may carry `expiresAt`: from that instant `verify` refuses it (and remembered
 * verifications lapse, the clock being read on every hit) until `deleteExpired` removes it. An
 * overwrite with a grace period first marks the old record with `graceUntil` and points its name's
 * grace entry at it, then swaps the name, both in one hold of the old key's lock: the old secret authenticates
 * without a gap until then, through the grace entry. Everything that removes a key removes that entry
 * first. `lastUsedAt` and the use counts are rewritten in the record under the key's lock (`recordUse`,
 * _usage.ts), so they neither revive a deleted key nor lose an update made meanwhile; they change no
 * verification and bump nothing. A disable is an update: it bumps the revision, so every process
 * refuses the key from its next request, as after a revocation.
 *
 * Every lookup is one read by a known key, so cost does not grow with the number of keys.
 * A key exists exactly when its name entry points at it: records are written before the name entry
 * is claimed or swapped, and the name entry is removed before anything else on delete. A process
 * that dies between the steps leaves at most an unreferenced record, never a half-made key, and a
 * secret only authenticates while its key's name entry points at its record.
 *
 * Races on one key (reasoned per pair; tests/store/races.test.ts runs them in a loop on files and Redis):
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
import { createOrderedMemory } from "./_key-order.ts";
import { redactSecrets } from "../core/secret.ts";
import { isKeyId } from "../core/input.ts";
import { createEntries } from "./_entries.ts";
import { createVerifier } from "./_verify.ts";
import { createMemoryAuditLog, localActor, pageOf } from "./audit.ts";
import { iso, type StoreContext } from "./_context.ts";
import { createRemovals } from "./_remove.ts";
import { createCreate } from "./_create.ts";
import { createRotate } from "./_rotate.ts";
import { createTransfer } from "./_transfer.ts";
import { createRetired, createReuseAudit, DEFAULT_RETIRED_RETENTION_MS } from "./_retired.ts";
import { createUsage } from "./_usage.ts";
import { usageCounters } from "./_credits.ts";
import { guard, storeError } from "./_guard.ts";
import { updateKey } from "./_update.ts";
import { getKey, getKeyByName, keyPages, listKeys } from "./_read.ts";
import { migrateStore } from "./_migrate.ts";
import { confirmingChanges } from "./_confirm-change.ts";
import { createWebhookStore } from "./webhooks/endpoints.ts";

export { type AtomicIndex, createLocalAtomicIndex } from "./atomic.ts";
import { createLocalAtomicIndex } from "./atomic.ts";
export type {
  ChangeOptions,
  CreateOptions,
  ImportOptions,
  ImportReport,
  KeyBackend,
  KeyStore,
  KeyStoreOptions,
  KeyUse,
  OnConflict,
  Refusal,
  RotateOptions,
  StoreTopology,
  VerifiedKey,
  VerifyOptions,
} from "./types.ts";
import type { KeyStore, KeyStoreOptions } from "./types.ts";

const REVISION = "meta:revision";

/**
 * What a store is built on, from its options: the context its operations share, the in-memory storage
 * when none is given (with its key order), its retired secrets and its audit log.
 */
function openContext(options: KeyStoreOptions) {
  const memory = options.storage ? undefined : createOrderedMemory(); // in memory: with the index pages read
  const storage = options.storage ?? memory!.storage;
  const atomic = options.atomic ?? createLocalAtomicIndex(storage);
  const debug = options.debug ?? (() => {});
  const auditLog = options.audit ?? createMemoryAuditLog();
  const now = options.now ?? Date.now;
  const retired = createRetired(storage, { retentionMs: options.retiredRetentionMs ?? DEFAULT_RETIRED_RETENTION_MS, now, iso });
  // A retired secret's entry is best effort: on a disk that filled up, the room goes to the audit events.
  const retire: typeof retired.retire = async (key) => {
    if (auditLog.hasRoom && !(await auditLog.hasRoom())) return debug(`store: the secret of key ${key.id} is not retired: the disk was full`);
    await retired.retire(key);
  };
  const entries = createEntries(storage, debug, retire);

  const ctx: StoreContext = {
    storage,
    atomic,
    entries,
    now,
    debug,
    bumpRevision: () => (atomic.bump ? atomic.bump(REVISION) : storage.setItem(REVISION, crypto.randomUUID())),
    readRevision: atomic.version ? () => atomic.version!(REVISION) : async () => String((await storage.getItem(REVISION)) ?? ""),
    audit: (action, key, change, extra) =>
      auditLog.append({ at: iso(now()), action, id: key.id, name: key.name, actor: change.actor ?? options.actor ?? localActor(), ...extra,
        // A reason may quote a path or a line that holds another key's secret: never into the trail.
        ...(change.reason ? { reason: redactSecrets(change.reason).slice(0, 500) } : {}) }),
  };
  return { ctx, memory, retired, auditLog };
}

/** The store's verifier (`_verify.ts`): its cache bounds from `options`, refusals of retired secrets audited as `reuse`. */
function openVerifier(ctx: StoreContext, retired: ReturnType<typeof createRetired>, options: KeyStoreOptions) {
  const { entries, readRevision, now, debug, audit } = ctx;
  return createVerifier({
    entries,
    readRevision,
    cacheSize: options.verifyCacheSize ?? 10_000,
    cacheTtl: options.verifyCacheTtlMs ?? 5_000,
    now,
    onError: (error) => {
      throw storeError("verify a key", error);
    },
    findRetired: retired.find,
    onRetired: createReuseAudit({ now, debug, append: (key) => audit("reuse", key, { actor: { kind: "key", ...key } }) }),
  });
}

/**
 * Creates a key store over an unstorage `Storage`.
 *
 * @example
 * const store = createKeyStore(); // in memory
 * const { key, id } = await store.create({ name: "ci", roles: ["ADMIN"], permissions: [] });
 * (await store.verify(key))?.id === id; // true
 */
export function createKeyStore(options: KeyStoreOptions = {}): KeyStore {
  return buildStore(openContext(options), options);
}

/**
 * `createKeyStore` over storage that an older release may have written (files, Redis, your own): first
 * brings it to the current layout (`_migrate.ts`: a key rotated with a grace period becomes one key with two
 * secrets). Idempotent, and cheap once done (one read); a migration that cannot be made now (a read-only
 * disk) is left for a later open. `openKeyStore` opens files and Redis through it.
 *
 * @example
 * const store = await createUpgradedKeyStore({ storage, atomic });
 */
export async function createUpgradedKeyStore(options: KeyStoreOptions): Promise<KeyStore> {
  const opened = openContext(options);
  // Best effort: a store not yet migrated still works as before (a twin authenticates through its grace
  // entry), so a read-only or full disk, or a store that is down, fails only the operations that need it.
  await migrateStore(opened.ctx).catch((error: unknown) =>
    opened.ctx.debug(`store: not brought to the current layout this time (${error instanceof Error ? error.message : String(error)})`)
  );
  return buildStore(opened, options);
}

/** The store's operations over what `openContext` made. */
function buildStore({ ctx, memory, retired, auditLog }: ReturnType<typeof openContext>, options: KeyStoreOptions): KeyStore {
  const { atomic, storage } = ctx;
  const removals = createRemovals(ctx, retired.prune);
  const create = createCreate(ctx, removals.removeById);
  const rotate = createRotate(ctx);
  const transfer = createTransfer(ctx, removals.removeById, removals.graced);
  const { verify, verifyNow, refusal, explain } = openVerifier(ctx, retired, options);
  const usage = createUsage(ctx, { verify, explain, ...usageCounters(options) }, options.useRecorder);

  const store: KeyStore = {
    ...usage.counters,
    create: (input, options) => guard("create a key", () => create(input, options)),
    rotate: (id, options) => guard("rotate a key", () => rotate(id, options)),
    deleteByName: (name, options) => guard("delete a key", () => removals.deleteByName(name, options)),
    deleteById: (id, options = {}) =>
      // A malformed id names no key; it must not reach the lock either (it becomes a file name there).
      guard("delete a key", async () => (isKeyId(id) ? removals.removeById(id, "delete", options) : null)),
    deleteExpired: (options) => guard("delete expired keys", () => removals.deleteExpired(store.list, options)),
    update: (id, patch, options) => guard("update a key", () => updateKey(ctx, id, patch, options)),
    get: (id) => guard("read a key", () => getKey(ctx, id)),
    getByName: (name) => guard("read a key", () => getKeyByName(ctx, name)),
    list: () => guard("list keys", () => listKeys(ctx, transfer.liveRecords, removals.graced)),
    listPages: async function* () {
      try {
        yield* keyPages(ctx, transfer.livePages, removals.graced);
      } catch (error) {
        throw storeError("list keys", error);
      }
    },
    ordered: options.atomic ? options.atomic.order : memory?.order,
    isEmpty: () => guard("read the store", async () => !(await atomic.hasAny("names"))),
    verify,
    refusal,
    recordUse: (uses) => guard("record when keys were used", () => usage.recordUse(uses)),
    usage: (id) => guard("read a key's usage", () => usage.usage(id)),
    verifyDetailed: (secret, options) => guard("verify a key", () => usage.verifyDetailed(secret, options)),
    audit: (query) => guard("read the audit trail", () => auditLog.read(query)),
    auditPage: (query) => guard("read the audit trail", () => pageOf(auditLog, query)),
    exportRecords: () => guard("export keys", transfer.exportRecords),
    webhooks: createWebhookStore(storage, atomic, ctx.now),
    importRecords: (keys, options) => guard("import keys", () => transfer.importRecords(keys, options)),
    recover: () => guard("roll back an interrupted import", transfer.recover),
    close: async () => {
      await usage.close().catch(() => {}); // the uses verifyDetailed counted, written while the storage is open
      await options.dispose?.();
      await storage.dispose();
    },
  };

  // Not enumerable: a wrapper made with `{ ...store, verify }` must not keep a verifyNow that bypasses its verify.
  Object.defineProperty(store, "verifyNow", { value: verifyNow, enumerable: false });
  if (options.topology) store.topology = options.topology;
  return options.confirmChange ? confirmingChanges(store, options.confirmChange) : store;
}
