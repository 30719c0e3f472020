/**
 * Which store a list read, for its "No API keys stored in ..." line. A directory store that does not exist
 * lists as empty only where this user could create it (the first create would work); otherwise the
 * store is unavailable, and the message says why.
 */
import { ServiceError } from "../core/errors.ts";
import { describeStore, type StoreSpec } from "../store/config.ts";
import { fsPresence } from "../store/drivers/_fs-presence.ts";

/** "fs:/srv/keys", or for a missing directory "fs:/srv/keys (it does not exist yet; uid 0 may create it in /srv)". */
export function listedStore(spec: StoreSpec): string {
  const where = describeStore(spec);
  if (spec.kind !== "fs") return where;
  const found = fsPresence(spec.dir);
  if (found.exists) return where;
  if (!found.creatable) {
    throw new ServiceError("STORE_UNAVAILABLE", `Key store unavailable: ${where} does not exist, and it cannot be created: ${found.why}`);
  }
  return `${where} (it does not exist yet; ${found.why})`;
}
