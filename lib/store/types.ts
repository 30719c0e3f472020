/**
 * The key store's contract: what `createKeyStore` takes and what every store (files, memory, Redis, and the
 * remote backend's subset) promises its callers.
 */
import type { RateLimiter } from "./rate-limiter.ts";
import type { CreditCounter } from "./credit-counter.ts";
import type { StoredCredits } from "../core/credits.ts";
import type { Storage } from "unstorage";
import type { Actor, ApiKeyInfo, AuditEvent, CreatedKey, CreateKeyInput, RotatedKey, KeyPatch, KeyUsage, KeyVerification, Permission, StoredKey } from "../core/model.ts";
import type { ExportedKey } from "./transfer.ts";
import type { AtomicIndex } from "./atomic.ts";
import type { KeyOrder } from "./_key-order.ts";
import type { AuditLog, AuditPage, AuditPageQuery, AuditQuery } from "./audit.ts";
import type { WebhookStore } from "./webhooks/endpoints.ts";

export interface KeyStoreOptions {
  /** Counts requests against keys' rate limits; defaults to one in this process (`createMemoryRateLimiter`). */
  rateLimiter?: RateLimiter;
  /** Counts keys' credits down; defaults to one in this process (`createMemoryCreditCounter`). */
  creditCounter?: CreditCounter;
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
  /** Where changes are recorded; defaults to one in memory (kept as long as the store object). */
  audit?: AuditLog;
  /** Who makes the changes, unless a call says otherwise; defaults to the local user at this host. */
  actor?: Actor;
  /** The clock, in ms since the epoch (default `Date.now`): expiry and grace are decided by it. */
  now?: () => number;
  /**
   * How long the hash of a secret that works no more (its key deleted, pruned or replaced) is kept with
   * its key's id and name, so that `refusal` can name the key when it is presented again (default 30
   * days). Entries this store writes get it as their Redis TTL; past it, reads ignore an entry and
   * `deleteExpired` removes it.
   */
  retiredRetentionMs?: number;
  /** What the store runs on (see `StoreTopology`), for `doctor` and `/readyz`; Redis backends give it. */
  topology?: () => Promise<StoreTopology>;
  /**
   * Called after every change (create, rotate, delete, update, import) before it is reported done; a
   * rejection reports it not done for sure. Redis backends wait there for a replica to hold the change.
   */
  confirmChange?: () => Promise<void>;
  /** How `verifyDetailed` writes the uses it counts (see `createUseRecorder`; default: within 5 s, then once a minute per key). */
  useRecorder?: UseRecorderOptions;
}

/** How a use recorder (`createUseRecorder`, last-use.ts) writes. */
export interface UseRecorderOptions {
  /** How often pending uses are looked at (default 5,000 ms): the longest wait for a first write. */
  tickMs?: number;
  /** Shortest time between two writes of one key by this server (default 60,000 ms). */
  intervalMs?: number;
  now?: () => number;
  /** A failed write is kept pending and retried at the next tick; this hears about it (never with a secret). */
  onError?: (error: unknown) => void;
}

/** Options every change takes. */
export interface ChangeOptions {
  /** Who makes this change, for the audit trail (default: the store's actor). */
  actor?: Actor;
  /** Why, for the audit trail (a scan's revocation says where the secret was found); at most 500 characters kept. */
  reason?: string;
}

/** A key as `verify` vouches for it: its public fields and the token of this verification. */
export interface VerifiedKey extends ApiKeyInfo {
  /** Same token, same verification (see `KeyStore.verify`); opaque, unique to this store instance. */
  validity: string;
  /** The key's credits as its record held them when verified (see credit-counter.ts); absent: none. */
  creditState?: StoredCredits;
}

export interface CreateOptions extends ChangeOptions {
  /** Replace a key of the same name: new id, new secret, the old secret stops working. */
  overwrite?: boolean;
  /** With `overwrite`: the old secret keeps working this many ms more (at most 24 h), then stops. */
  graceMs?: number;
}

export interface RotateOptions extends ChangeOptions {
  /** The old secret keeps working this many ms more (at most 24 h), then stops; absent: it stops at once. */
  graceMs?: number;
}

/** What `importRecords` does with a key whose id, name or secret is already in the store. */
export type OnConflict = "fail" | "skip" | "overwrite";

export interface ImportOptions extends ChangeOptions {
  /** fail (default): import nothing; skip: leave the store's key; overwrite: delete it and import. */
  onConflict?: OnConflict;
  /** Check and report, change nothing. */
  dryRun?: boolean;
  /** Cancels the import (SIGINT, SIGTERM): what it wrote is rolled back, and it rejects with `CANCELLED`. */
  signal?: AbortSignal;
}

/** A key of an import, with the line of the file it came from. */
export interface ImportedKey {
  id: string;
  name: string;
  line: number;
  /** skipped, replaced: what was in the way. */
  reason?: string;
}

export interface ImportReport {
  imported: ImportedKey[];
  skipped: ImportedKey[];
  replaced: ImportedKey[];
}

/**
 * Why `verify` refused a secret: `reason` for the message of a 401 ("disabled": `--update --disable`), and
 * `retired` when the secret is one this store issued and retired (its key deleted, pruned, or replaced and
 * past any grace period).
 */
export interface Refusal {
  reason: "expired" | "disabled" | "unknown";
  /** The key the secret belonged to: its reuse is the usual sign of a leak or of a missed rotation. */
  retired?: { id: string; name: string };
}

export interface RefusalOptions {
  /** Report a retired secret (the audit event `reuse`): true for what is presented to the service. */
  reportReuse?: boolean;
}

/** A key's uses to record: the latest time (ms), and how many requests it authenticated per UTC day (`YYYY-MM-DD`). */
export interface KeyUse {
  at: number;
  days?: Readonly<Record<string, number>>;
}

export interface VerifyOptions {
  /** The permissions the key must hold (its roles count): else the answer is INSUFFICIENT_PERMISSIONS. */
  permissions?: readonly Permission[];
  /**
   * Notes the verified key's use instead of the store's own recorder: the service passes its last-use
   * recorder's `seen` (or a no-op when it records no use), so one server writes each key's use once.
   */
  onUse?: (id: string) => void;
  /**
   * The address the request being judged came from. A key with an IP allow-list is IP_NOT_ALLOWED when it
   * is outside the list, and also when it is not given or not an address: the list cannot be checked.
   */
  address?: string;
}

/** What a store runs on, for `doctor` and `/readyz`. */
export interface StoreTopology {
  /** One Redis, or the master a Sentinel group names. */
  mode: "single" | "sentinel";
  /** The address of the Redis in use, `host:port` (with a Sentinel group: the master's name before it). */
  master: string;
  /** Replicas connected to it; null when INFO is not permitted. */
  replicas: number | null;
  /** Whether it writes an append-only file; null when INFO is not permitted. */
  aof: boolean | null;
  /** What an operator should know: persistence that loses deletes on a restart, INFO refused. */
  warnings: string[];
}

export interface KeyStore {
  /** Optional: what the store runs on (see `StoreTopology`). */
  topology?: () => Promise<StoreTopology>;
  /** Counts requests against keys' rate limits (see rate-limiter.ts): the service asks it for keys that have limits. */
  rateLimiter?: RateLimiter;
  /** Counts keys' credits down (see credit-counter.ts): the service spends one per request of a key that has credits. */
  creditCounter?: CreditCounter;
  /** Creates a key and returns it with its secret, the only time the secret is available. */
  create(input: CreateKeyInput, options?: CreateOptions): Promise<CreatedKey>;
  /**
   * Deletes the key with this (validated) name, and any key it replaced that is still in its grace
   * period; returns the key, or null when none has the name.
   */
  deleteByName(name: string, options?: ChangeOptions): Promise<ApiKeyInfo | null>;
  /** Deletes the key with this id (a live one, or one in its grace period); returns it, or null when there is none. */
  deleteById(id: string, options?: ChangeOptions): Promise<ApiKeyInfo | null>;
  /**
   * Deletes every key whose expiry or grace period has passed; returns them, oldest first. Also removes
   * the retired secrets' entries older than `retiredRetentionMs`.
   */
  deleteExpired(options?: ChangeOptions): Promise<ApiKeyInfo[]>;
  /** Replaces fields of a key (a rename keeps names unique); returns the updated key. */
  update(id: string, patch: KeyPatch, options?: ChangeOptions): Promise<ApiKeyInfo>;
  /**
   * Issues a new secret for the live key `id`; returns the key with it, the only time it is available. The
   * key keeps its id and every setting (its record is copied, only the secret's hash replaced). The old
   * secret stops at once, or with `graceMs` works that much longer as a second secret of the same key
   * (`retiringUntil`); an old secret an earlier rotation left stops either way (`ended` says so). NOT_FOUND when there is no such live key; INVALID_INPUT when the key has expired.
   */
  rotate(id: string, options?: RotateOptions): Promise<RotatedKey>;
  /** The key with this id: a live one, or one in its grace period (with `graceUntil`). */
  get(id: string): Promise<ApiKeyInfo | null>;
  getByName(name: string): Promise<ApiKeyInfo | null>;
  /**
   * All keys, oldest first: live ones (expired included, until deleted) and replaced ones still in
   * their grace period (`graceUntil`). Reads every key: for listing, not for hot paths.
   */
  list(): Promise<ApiKeyInfo[]>;
  /**
   * Every key `list` returns, a page (at most a few hundred) at a time, read as the caller goes and in no
   * particular order: live keys, then those in a grace period. Memory stays bounded however many keys
   * there are; a key created, renamed or deleted meanwhile may or may not appear, any other appears exactly once.
   */
  listPages(): AsyncIterable<ApiKeyInfo[]>;
  /** Optional: the creation-ordered index (`_key-order.ts`) that `apiKeys` pages read instead of every key. */
  ordered?: KeyOrder;
  /** True when the store holds no key, without reading them all. */
  isEmpty(): Promise<boolean>;
  /**
   * The key a secret belongs to, or null for a malformed, unknown or revoked secret, with a `validity`
   * token: two verifies of a secret that return the same token vouch for the same verification, so a
   * caller may keep anything it derived from the key (the service's remembered answers) exactly while
   * the token stays the same. The token changes whenever the key's verification may have changed: any
   * update, revocation or replacement of any key in the storage, by any process (the revision), and
   * every re-check after `verifyCacheTtlMs`; with the cache off, every call returns a new one. It is
   * the only such promise: the object returned may be a new one on every call, or the same one.
   */
  verify(secret: string): Promise<VerifiedKey | null>;
  /**
   * `verify` without the promise when it needs none: a value exactly when the revision read is synchronous
   * (the files store) and the secret's verification is remembered under that revision, else what `verify`
   * would give. `since` (`performance.now()` once the request had arrived) lets requests share a revision
   * read begun after they arrived. The same answers as `verify`, but the secret's form (its checksum) is the
   * caller's to check: a malformed one matches no key, after a lookup. The service prefers it when present. Not
   * enumerable on `createKeyStore`'s stores, so a wrapper made with `{ ...store, verify }` goes without it.
   */
  verifyNow?(secret: string, since?: number): VerifiedKey | null | Promise<VerifiedKey | null>;
  /**
   * Why `verify` refused this secret: reason "expired" when it belongs to a key whose expiry or grace
   * period has passed, "disabled" for a disabled key, else "unknown"; with `retired` when it is a
   * secret this store retired. Appends an audit event `reuse` for such a secret (unless `reportReuse` is
   * false), at most one per key per minute in this process. Reads the store; meant for the refusal path only.
   */
  refusal(secret: string, options?: RefusalOptions): Promise<Refusal>;
  /**
   * `verify` for a service that is not ours: whether the secret is a working key holding `permissions`,
   * with a code saying why not (NOT_FOUND, EXPIRED, DISABLED, INSUFFICIENT_PERMISSIONS). A working key's
   * use is counted (last use, usage) through a recorder of this store, written off the call's path
   * (see `createUseRecorder`) and flushed by `close`. Never throws for a bad secret, only for a store failure.
   */
  verifyDetailed(secret: string, options?: VerifyOptions): Promise<KeyVerification>;
  /**
   * Records that these keys authenticated requests: each key's `lastUsedAt` becomes the latest of its
   * stored time and the given one (a number: that time alone), and its usage counts grow by `days`.
   * A deleted key is left deleted. Not an audited change. The service calls it through
   * `createUseRecorder`, at most once a minute per key.
   */
  recordUse(uses: ReadonlyMap<string, number | KeyUse>): Promise<void>;
  /** How many requests the key with this id authenticated (in all, and per day for the last 30), or null when there is none. */
  usage(id: string): Promise<KeyUsage | null>;
  /** The audit trail, oldest first. */
  audit(query?: AuditQuery): Promise<AuditEvent[]>;
  /** A page of the audit trail in the order it was written, from a cursor back (`AuditPage`): how a client lists it all. */
  auditPage(query: AuditPageQuery): Promise<AuditPage>;
  /** Every key with the hash of its secret (never a secret), live ones then replaced ones in a grace period: for export. */
  exportRecords(): Promise<StoredKey[]>;
  /**
   * Loads exported keys (see `parseExport`) as they were: same ids, names, hashes and times, so their
   * secrets keep working. All or nothing: a conflict (with the default `onConflict: "fail"`) or a failed
   * write leaves the store as it was. Each key imported is an audit event `import`. One import runs at a
   * time; one whose process died is rolled back by `recover` or the next import.
   */
  importRecords(keys: readonly ExportedKey[], options?: ImportOptions): Promise<ImportReport>;
  /**
   * Rolls back an import whose process died mid-way (killed, SIGKILL included), so that none of its keys
   * stays. `openKeyStore` calls it; a store made with `createKeyStore` should call it once after opening.
   */
  recover?(): Promise<void>;
  close(): Promise<void>;
  /** The webhook endpoints kept beside the keys (docs/webhooks.md); absent on a remote backend. */
  webhooks?: WebhookStore;
}

/** What the command needs of a store: the local store and the remote (GraphQL) one both provide it. */
export type KeyBackend = Pick<
  KeyStore,
  "create" | "rotate" | "deleteByName" | "deleteById" | "deleteExpired" | "update" | "list" | "isEmpty" | "getByName" | "audit" | "usage"
>;
