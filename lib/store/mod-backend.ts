/**
 * `service-api-keys/backend`: what a store is built on and where it lives, for storage of your own and for
 * tools that work with a local store and a remote one alike. `createLocalAtomicIndex` is the atomic index a
 * store over a single process's storage uses (`KeyStoreOptions.atomic`); `createUpgradedKeyStore` is `createKeyStore`
 * over storage an older release may have written (it migrates it first); `KeyBackend` is the part of a store
 * the CLI needs, which `createRemoteBackend` (`service-api-keys/client`) also provides.
 *
 * @example
 * import { parseStoreSpec } from "service-api-keys";
 * import { defaultStoreDir, describeStore } from "service-api-keys/backend";
 * describeStore(parseStoreSpec("redis://:secret@cache:6379")); // "redis://***@cache:6379": no password in logs
 * defaultStoreDir(); // where the files store lives when nothing says otherwise
 */
export { type AtomicIndex, createLocalAtomicIndex } from "./atomic.ts";
export { createUpgradedKeyStore } from "./key-store.ts";
export type { KeyBackend } from "./types.ts";
export { defaultStoreDir, describeStore } from "./config.ts";
