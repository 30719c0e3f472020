/**
 * The key store's contract: what `createKeyStore` takes and what every store (files, memory, Redis, and the
 * remote backend's subset) promises its callers.
 */
import type { Storage } from "unstorage";
import type { ApiKeyInfo, CreatedKey, CreateKeyInput } from "../core/model.ts";
import type { AtomicIndex } from "./atomic.ts";

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

/** A key as `verify` vouches for it: its public fields and the token of this verification. */
export interface VerifiedKey extends ApiKeyInfo {
  /** Same token, same verification (see `KeyStore.verify`); opaque, unique to this store instance. */
  validity: string;
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
  close(): Promise<void>;
}

/** What the command needs of a store: the local store and the remote (GraphQL) one both provide it. */
export type KeyBackend = Pick<KeyStore, "create" | "deleteByName" | "deleteById" | "list" | "isEmpty" | "getByName">;
