/**
 * The key store's contract: what `createKeyStore` takes and what every store (files, memory, Redis, and the
 * remote backend's subset) promises its callers.
 */
import type { Storage } from "unstorage";
import type { Actor, ApiKeyInfo, AuditEvent, CreatedKey, CreateKeyInput, KeyPatch } from "../core/model.ts";
import type { AtomicIndex } from "./atomic.ts";
import type { AuditLog, AuditQuery } from "./audit.ts";

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
  /** Where changes are recorded; defaults to one in memory (kept as long as the store object). */
  audit?: AuditLog;
  /** Who makes the changes, unless a call says otherwise; defaults to the local user at this host. */
  actor?: Actor;
  /** The clock, in ms since the epoch (default `Date.now`): expiry and grace are decided by it. */
  now?: () => number;
}

/** Options every change takes. */
export interface ChangeOptions {
  /** Who makes this change, for the audit trail (default: the store's actor). */
  actor?: Actor;
}

/** A key as `verify` vouches for it: its public fields and the token of this verification. */
export interface VerifiedKey extends ApiKeyInfo {
  /** Same token, same verification (see `KeyStore.verify`); opaque, unique to this store instance. */
  validity: string;
}

export interface CreateOptions extends ChangeOptions {
  /** Replace a key of the same name: new id, new secret, the old secret stops working. */
  overwrite?: boolean;
  /** With `overwrite`: the old secret keeps working this many ms more (at most 24 h), then stops. */
  graceMs?: number;
}

/** Why `verify` refused a secret, for the message of a 401. */
export type Refusal = "expired" | "unknown";

export interface KeyStore {
  /** Creates a key and returns it with its secret, the only time the secret is available. */
  create(input: CreateKeyInput, options?: CreateOptions): Promise<CreatedKey>;
  /**
   * Deletes the key with this (validated) name, and any key it replaced that is still in its grace
   * period; returns the key, or null when none has the name.
   */
  deleteByName(name: string, options?: ChangeOptions): Promise<ApiKeyInfo | null>;
  /** Deletes the key with this id (a live one, or one in its grace period); returns it, or null when there is none. */
  deleteById(id: string, options?: ChangeOptions): Promise<ApiKeyInfo | null>;
  /** Deletes every key whose expiry or grace period has passed; returns them, oldest first. */
  deleteExpired(options?: ChangeOptions): Promise<ApiKeyInfo[]>;
  /** Replaces fields of a key (a rename keeps names unique); returns the updated key. */
  update(id: string, patch: KeyPatch, options?: ChangeOptions): Promise<ApiKeyInfo>;
  /** The key with this id: a live one, or one in its grace period (with `graceUntil`). */
  get(id: string): Promise<ApiKeyInfo | null>;
  getByName(name: string): Promise<ApiKeyInfo | null>;
  /**
   * All keys, oldest first: live ones (expired included, until deleted) and replaced ones still in
   * their grace period (`graceUntil`). Reads every key: for listing, not for hot paths.
   */
  list(): Promise<ApiKeyInfo[]>;
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
   * Why `verify` refused this secret: "expired" when it belongs to a key whose expiry or grace period
   * has passed, else "unknown". Reads the store; meant for the refusal path only.
   */
  refusal(secret: string): Promise<Refusal>;
  /**
   * Records that these keys authenticated requests at these times (ms): each key's `lastUsedAt`
   * becomes the latest of its stored time and the given one. A deleted key is left deleted. Not an
   * audited change. The service calls it through `createUseRecorder`, at most once a minute per key.
   */
  recordUse(uses: ReadonlyMap<string, number>): Promise<void>;
  /** The audit trail, oldest first. */
  audit(query?: AuditQuery): Promise<AuditEvent[]>;
  close(): Promise<void>;
}

/** What the command needs of a store: the local store and the remote (GraphQL) one both provide it. */
export type KeyBackend = Pick<
  KeyStore,
  "create" | "deleteByName" | "deleteById" | "deleteExpired" | "update" | "list" | "isEmpty" | "getByName" | "audit"
>;
