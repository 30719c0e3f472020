/**
 * A change is reported done only once the store confirms it (`KeyStoreOptions.confirmChange`): on Redis with
 * replicas, once a replica holds it, so a failover cannot bring back a key that was deleted or cut.
 */
import type { KeyStore } from "./types.ts";

/**
 * Every method that changes keys: each waits for the confirmation before it resolves. Not `recover`: it runs
 * on every open, and what it rolls back is an import never reported done, so no promise hangs on it.
 */
const CHANGES = ["create", "rotate", "deleteByName", "deleteById", "deleteExpired", "update", "importRecords"] as const;

/** A call that changes nothing: an import's dry run. */
const readsOnly = (name: string, args: unknown[]) => name === "importRecords" && (args[1] as { dryRun?: boolean } | undefined)?.dryRun === true;

/** `store` with each change followed by `confirm`; a rejection of `confirm` becomes the change's. */
export function confirmingChanges(store: KeyStore, confirm: () => Promise<void>): KeyStore {
  const methods = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const name of CHANGES) {
    const change = methods[name];
    methods[name] = async (...args) => {
      const result = await change(...args);
      if (!readsOnly(name, args)) await confirm();
      return result;
    };
  }
  return store;
}
