/**
 * Retired secrets: what the store keeps of a key once its secret stops working for good (deleted, pruned,
 * replaced by an overwrite, or at the end of its grace period), so that a later presentation of that
 * secret can be recognised as the reuse of a known key, which is the usual sign of a leak or of a
 * deployment that missed a rotation.
 *
 *   retired:<sha256>  { id, name, retiredAt }   the key the secret with that hash belonged to
 *
 * Nothing else is kept: no roles, no permissions, never the secret. `verify` never reads these entries
 * (it reads `secrets:<sha256>` only), so a retired hash can never authenticate; only `refusal` looks one
 * up, after `verify` has said no. An entry is kept `retentionMs` (default 30 days) from its writing: on
 * Redis it carries that TTL and the server drops it; on files and in memory `deleteExpired` removes the
 * entries past it, and reads ignore them meanwhile. So the store's size stays bounded by the keys
 * retired within one retention period.
 */
import type { Storage } from "unstorage";
import { isKeyId } from "../core/input.ts";
import { createLru } from "../core/_lru.ts";

/** How long a retired secret's entry is kept by default: 30 days. */
export const DEFAULT_RETIRED_RETENTION_MS = 30 * 86_400_000;

/** Which key a retired secret belonged to. */
export interface RetiredKey {
  id: string;
  name: string;
}

interface RetiredEntry extends RetiredKey {
  /** ISO 8601 time the entry was written. */
  retiredAt: string;
}

const entryOf = (value: unknown): RetiredEntry | null => {
  if (typeof value !== "object" || value === null) return null;
  const { id, name, retiredAt } = value as Record<string, unknown>;
  if (!isKeyId(id) || typeof name !== "string" || typeof retiredAt !== "string" || !Number.isFinite(Date.parse(retiredAt))) return null;
  return { id, name, retiredAt };
};

export type Retired = ReturnType<typeof createRetired>;

export function createRetired(storage: Storage, options: { retentionMs: number; now: () => number; iso: (ms: number) => string }) {
  const { retentionMs, now, iso } = options;
  const keyOf = (hash: string) => `retired:${hash}`;
  const stale = (entry: RetiredEntry) => now() - Date.parse(entry.retiredAt) >= retentionMs;
  // Redis takes whole seconds (EX); the other drivers ignore the option.
  const ttl = Math.max(1, Math.ceil(retentionMs / 1000));

  return {
    /** Records that the secret with this hash belonged to this key and works no more. */
    retire: async (key: { id: string; name: string; hash: string }): Promise<void> => {
      const entry: RetiredEntry = { id: key.id, name: key.name, retiredAt: iso(now()) };
      await storage.setItem(keyOf(key.hash), entry, { ttl });
    },
    /** The key a retired secret's hash belonged to, unless its entry is past the retention period. */
    find: async (hash: string): Promise<RetiredKey | null> => {
      const entry = entryOf(await storage.getItem(keyOf(hash)));
      return entry && !stale(entry) ? { id: entry.id, name: entry.name } : null;
    },
    /** Removes the entries past the retention period (and any that are not whole); returns how many. */
    prune: async (): Promise<number> => {
      let removed = 0;
      for (const { key, value } of await storage.getItems(await storage.getKeys("retired"))) {
        const entry = entryOf(value);
        if (entry && !stale(entry)) continue;
        await storage.removeItem(key);
        removed++;
      }
      return removed;
    },
  };
}

/** How often a reuse of one key is written to the audit trail, at most: once a minute. */
export const REUSE_AUDIT_EVERY_MS = 60_000;

/**
 * Decides which reuses of retired keys reach the audit trail: at most one per key per `everyMs` in this
 * process (each server keeps its own), remembering at most `capacity` keys (the least recently seen go
 * first), so a flood of retired secrets neither floods the trail nor grows memory.
 */
export function createReuseGate(options: { now: () => number; everyMs?: number; capacity?: number }) {
  const every = options.everyMs ?? REUSE_AUDIT_EVERY_MS;
  const last = createLru<string, number>(options.capacity ?? 10_000);
  return {
    /** True when a reuse of key `id` now is to be written (and remembers that it was). */
    due(id: string): boolean {
      const at = options.now();
      const before = last.get(id);
      if (before !== undefined && at - before < every && at >= before) return false;
      last.set(id, at);
      return true;
    },
  };
}

/**
 * The audit event `reuse` of a refused retired secret (the key itself its actor, as `append` writes it),
 * through `createReuseGate`. Best effort: the client gets its 401 whether or not the event was written.
 */
export function createReuseAudit(options: { now: () => number; debug: (message: string) => void; append: (key: RetiredKey) => Promise<void> }) {
  const gate = createReuseGate({ now: options.now });
  return async (key: RetiredKey): Promise<void> => {
    if (!gate.due(key.id)) return;
    await options.append(key).catch((error) =>
      options.debug(`store: the reuse of key ${key.id} was not audited (${error instanceof Error ? error.message : String(error)})`)
    );
  };
}
