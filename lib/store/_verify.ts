/**
 * `verify` and `refusal`: the store's answer to "which key is this secret?", on every request the
 * service answers. Written without the store's error wrapper, and with a cache (see key-store.ts).
 */
import { randomUUID } from "node:crypto";
import { isWellFormedSecret, sha256Hex } from "../core/secret.ts";
import { createLru } from "../core/_lru.ts";
import type { Entries } from "./_entries.ts";
import { publicView } from "./_entries.ts";
import type { Refusal, VerifiedKey } from "./types.ts";

interface Remembered {
  info: VerifiedKey;
  revision: string;
  /** performance.now() of the full check. */
  at: number;
  /** Wall-clock ms at which the key stops authenticating (expiry, end of grace), Infinity if never. */
  until: number;
}

export function createVerifier(options: {
  entries: Entries;
  readRevision: () => Promise<string> | string;
  cacheSize: number;
  cacheTtl: number;
  now: () => number;
  onError: (error: unknown) => never;
}) {
  const { entries, readRevision, cacheSize, cacheTtl, now, onError } = options;
  const verified = createLru<string, Remembered>(cacheSize);
  // Validity tokens: this instance's random prefix and a count of full checks, so each is new.
  const instance = randomUUID().slice(0, 8);
  let checks = 0;

  /** The record a secret's hash leads to, when it is that record's hash. */
  const recordOf = async (hash: string) => {
    const record = await entries.readRecord(await entries.readId(`secrets:${hash}`));
    return record && record.hash === hash ? record : null;
  };

  return {
    verify: async (secret: string): Promise<VerifiedKey | null> => {
      if (!isWellFormedSecret(secret)) return null;
      const hash = sha256Hex(secret);
      try {
        // Read the revision before checking, so a revocation during the check is noticed next time.
        const revision = cacheSize > 0 ? await readRevision() : "";
        const hit = verified.get(hash);
        // The clock is read on a hit too: an expiry takes effect on the first request after it, remembered or not.
        if (hit && hit.revision === revision && performance.now() - hit.at < cacheTtl && now() < hit.until) return hit.info;
        const record = await recordOf(hash);
        const until = record ? await entries.acceptedUntil(record) : null;
        if (!record || until === null || now() >= until) {
          verified.delete(hash);
          return null;
        }
        const info: VerifiedKey = { ...publicView(record, until !== Infinity && !!record.graceUntil), validity: `${instance}.${++checks}` };
        if (cacheSize > 0) verified.set(hash, { info, revision, at: performance.now(), until });
        return info;
      } catch (error) {
        return onError(error);
      }
    },

    refusal: async (secret: string): Promise<Refusal> => {
      if (!isWellFormedSecret(secret)) return "unknown";
      try {
        const record = await recordOf(sha256Hex(secret));
        const until = record ? await entries.acceptedUntil(record) : null;
        return until !== null && now() >= until ? "expired" : "unknown";
      } catch (error) {
        return onError(error);
      }
    },
  };
}
