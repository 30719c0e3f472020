/**
 * `verify` and `refusal`: the store's answer to "which key is this secret?", on every request the
 * service answers. Written without the store's error wrapper, and with a cache (see key-store.ts).
 */
import { isWellFormedSecret, sha256Hex } from "../core/secret.ts";
import { createLru } from "../core/_lru.ts";
import type { Entries } from "./_entries.ts";
import { publicView } from "./_entries.ts";
import type { RetiredKey } from "./_retired.ts";
import type { Refusal, RefusalOptions, VerifiedKey } from "./types.ts";
import type { StoredKey } from "../core/model.ts";

interface Remembered {
  info: VerifiedKey;
  revision: string;
  /** performance.now() of the full check. */
  at: number;
  /** Wall-clock ms at which the key stops authenticating (expiry, end of grace), Infinity if never. */
  until: number;
}

/**
 * `KeyStore.verifyNow`. `since`: when (`performance.now()`) the request asking had arrived whole enough to
 * be read, i.e. after its sender sent it. A revision read that began later than that is as fresh as one
 * made now for this request: any revocation finished before the request was sent is in it.
 */
export type VerifyNow = (secret: string, since?: number) => VerifiedKey | null | Promise<VerifiedKey | null>;

export function createVerifier(options: {
  entries: Entries;
  readRevision: () => Promise<string> | string;
  cacheSize: number;
  cacheTtl: number;
  now: () => number;
  onError: (error: unknown) => never;
  /** The key a retired secret's hash belonged to (`_retired.ts`); read on the refusal path only. */
  findRetired: (hash: string) => Promise<RetiredKey | null>;
  /** Told of each refusal of a retired secret (the audit event `reuse`); its failure is its own business. */
  onRetired: (key: RetiredKey) => Promise<void>;
}) {
  const { entries, readRevision, cacheSize, cacheTtl, now, onError, findRetired, onRetired } = options;
  const verified = createLru<string, Remembered>(cacheSize);
  // Validity tokens: this instance's random prefix and a count of full checks, so each is new.
  const instance = crypto.randomUUID().slice(0, 8);
  let checks = 0;

  /** The record a secret's hash leads to (when it is that record's hash), and until when it authenticates. */
  const standing = async (hash: string) => {
    const found = await entries.readRecord(await entries.readId(`secrets:${hash}`));
    const record = found && found.hash === hash ? found : null;
    return { record, until: record ? await entries.acceptedUntil(record) : null };
  };

  /** The full check, after a miss: reads the key's records (always asynchronous). */
  const check = async (hash: string, revision: string): Promise<VerifiedKey | null> => {
    try {
      const { record, until } = await standing(hash);
      // A disabled key is refused like an expired one; enabling it is an update, which bumps the revision.
      if (!record || until === null || now() >= until || record.disabled) {
        verified.delete(hash);
        return null;
      }
      const info: VerifiedKey = { ...publicView(record, until !== Infinity && !!record.graceUntil), validity: `${instance}.${++checks}` };
      if (record.credits) info.creditState = record.credits; // what the credit counter starts from
      if (cacheSize > 0) verified.set(hash, { info, revision, at: performance.now(), until });
      return info;
    } catch (error) {
      return onError(error);
    }
  };

  /** A remembered verification still standing under `revision`, else the full check. */
  const decide = (hash: string, revision: string): VerifiedKey | Promise<VerifiedKey | null> => {
    const hit = verified.get(hash);
    // The clock is read on a hit too: an expiry takes effect on the first request after it, remembered or not.
    if (hit && hit.revision === revision && performance.now() - hit.at < cacheTtl && now() < hit.until) return hit.info;
    return check(hash, revision);
  };

  /**
   * The latest revision read, by when it began. A request that arrived before a read began is served by
   * that read's token (the requests a server takes in one turn of its event loop share one read); one that
   * arrived later reads again. Strictly earlier: `performance.now()` never goes back, so `since < at`
   * means the read began after the request had arrived. No time window: a request is never answered from
   * a read that began before it arrived, so a revocation by another process is seen by every request
   * sent after it finished.
   */
  let latest = { at: -Infinity, revision: "" };
  const revisionFor = (since: number | undefined): string | Promise<string> => {
    if (since !== undefined && since < latest.at) return latest.revision;
    const at = performance.now();
    const read = readRevision();
    const keep = (revision: string) => {
      if (at > latest.at) latest = { at, revision }; // reads may settle out of order: the later-begun one wins
      return revision;
    };
    return typeof read === "string" ? keep(read) : read.then(keep);
  };

  /** `verifyNow` for a secret its caller has already found well formed (the service's handler does, for its message). */
  const verifyFormed: VerifyNow = (secret, since) => {
    const hash = sha256Hex(secret);
    let revision: string | Promise<string>;
    try {
      // Read the revision before checking, so a revocation during the check is noticed next time.
      revision = cacheSize > 0 ? revisionFor(since) : "";
    } catch (error) {
      return onError(error);
    }
    if (typeof revision === "string") return decide(hash, revision);
    return revision.then((r) => decide(hash, r), onError);
  };

  /**
   * Why `verify` refuses a secret, and the key it belongs to when it was issued and still stands (expired
   * or disabled). A secret this store retired names its key, and is reported (`onRetired`: the audit event
   * `reuse`) unless `reportReuse` is false (a scan looking secrets up is no presentation to the service).
   */
  const explain = async (secret: string, { reportReuse = true }: RefusalOptions = {}): Promise<{ why: Refusal; key?: StoredKey }> => {
    if (!isWellFormedSecret(secret)) return { why: { reason: "unknown" } };
    try {
      const hash = sha256Hex(secret);
      const { record, until } = await standing(hash);
      const working = until !== null && now() < until; // live, or replaced with grace between the two reads
      const reason = until !== null && !working ? "expired" : working && record?.disabled ? "disabled" : "unknown";
      const key = reason === "unknown" ? undefined : record ?? undefined;
      // A record its name no longer points at was replaced (its grace period over, or never given one):
      // retired though not yet removed. Without a record, the retired entry says which key it was.
      const retired = record
        ? (working || (await entries.live(record)) ? null : { id: record.id, name: record.name })
        : await findRetired(hash);
      if (!retired) return { why: { reason }, key };
      if (reportReuse) await onRetired(retired);
      return { why: { reason, retired }, key };
    } catch (error) {
      return onError(error);
    }
  };

  // A malformed secret is refused without a hash or a read (a lookup could not match it anyway).
  const verifyNow: VerifyNow = (secret) => (isWellFormedSecret(secret) ? verifyFormed(secret) : null);

  return {
    verify: async (secret: string): Promise<VerifiedKey | null> => await verifyNow(secret),
    // A malformed secret matches no hash: the form is the caller's check (the service's, for its message).
    verifyNow: verifyFormed,

    refusal: async (secret: string, options?: RefusalOptions): Promise<Refusal> => (await explain(secret, options)).why,
    explain,
  };
}
