/** Redis-backed store (several hosts). Placeholder until the Redis issue lands: fails clearly. */
import type { Storage } from "unstorage";
import { ServiceError } from "../errors.ts";
import type { AtomicIndex } from "../store.ts";

export function openRedisBackend(_url: string): Promise<{ storage: Storage; atomic: AtomicIndex; dispose?: () => Promise<void> }> {
  return Promise.reject(new ServiceError("USAGE", "The Redis store is not available in this build yet"));
}
