/**
 * `verify` and `refusal`: the store's answer to "which key is this secret?", on every request the
 * service answers. Written without the store's error wrapper, and with a cache (see key-store.ts).
 */
import { isWellFormedSecret, sha256Hex } from "../core/secret.ts";
import { createLru, type Lru } from "../core/_lru.ts";
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

/** What a verifier is made from: the store's entries and revision, the cache's bounds, and the retired secrets. */
export interface VerifierOptions {
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
}

/** One verifier's state, shared by its steps: its options, the verifications it remembers, its tokens, its last revision read. */
interface Verifier extends VerifierOptions {
  verified: Lru<string, Remembered>;
  /** Validity tokens: this instance's random prefix and a count of full checks, so each is new. */
  instance: string;
  checks: number;
  /** The latest revision read, by when it began (see `revisionFor`). */
  latest: { at: number; revision: string };
  /** The read under way that began last, by when it began: requests that arrived before it wait for it. */
  pending?: { at: number; read: Promise<string> };
}

/**
 * The record a secret's hash leads to (when it is that record's hash, or its retiring one), until when it
 * authenticates, and whether it is the retiring secret of a rotated key.
 */
async function standing({ entries }: Verifier, hash: string) {
  const found = await entries.readRecord(await entries.readId(`secrets:${hash}`));
  const retiring = !!found && found.hash !== hash && found.retiring?.hash === hash;
  const record = found && (found.hash === hash || retiring) ? found : null;
  return { record, retiring, until: record ? await entries.acceptedUntil(record, hash) : null };
}

/** What a verified secret shows of its key: a retiring secret carries its end as `graceUntil` (it is temporary). */
function verifiedView(record: StoredKey, retiring: boolean, until: number, now: number) {
  if (retiring) return { ...publicView(record, false, now), graceUntil: record.retiring!.until };
  return publicView(record, until !== Infinity && !!record.graceUntil, now);
}

/** The full check, after a miss: reads the key's records (always asynchronous). */
async function check(v: Verifier, hash: string, revision: string): Promise<VerifiedKey | null> {
  try {
    const { record, retiring, until } = await standing(v, hash);
    // A disabled key is refused like an expired one, by either secret; enabling it is an update, which bumps the revision.
    if (!record || until === null || v.now() >= until || record.disabled) {
      v.verified.delete(hash);
      return null;
    }
    const info: VerifiedKey = { ...verifiedView(record, retiring, until, v.now()), validity: `${v.instance}.${++v.checks}` };
    if (record.credits) info.creditState = record.credits; // what the credit counter starts from
    if (v.cacheSize > 0) v.verified.set(hash, { info, revision, at: performance.now(), until });
    return info;
  } catch (error) {
    return v.onError(error);
  }
}

/** A remembered verification still standing under `revision`, else the full check. */
function decide(v: Verifier, hash: string, revision: string): VerifiedKey | Promise<VerifiedKey | null> {
  const hit = v.verified.get(hash);
  // The clock is read on a hit too: an expiry takes effect on the first request after it, remembered or not.
  if (hit && hit.revision === revision && performance.now() - hit.at < v.cacheTtl && v.now() < hit.until) return hit.info;
  return check(v, hash, revision);
}

/**
 * The latest revision read, by when it began. A request that arrived before a read began is served by
 * that read's token, also while the read is under way (the requests a server takes in one turn of its
 * event loop share one read); one that arrived later reads again. Strictly earlier: `performance.now()` never goes back, so `since < at`
 * means the read began after the request had arrived. No time window: a request is never answered from
 * a read that began before it arrived, so a revocation by another process is seen by every request
 * sent after it finished.
 */
function revisionFor(v: Verifier, since: number | undefined): string | Promise<string> {
  if (since !== undefined && since < v.latest.at) return v.latest.revision;
  if (since !== undefined && v.pending && since < v.pending.at) return v.pending.read;
  const at = performance.now();
  const read = v.readRevision();
  const keep = (revision: string) => {
    if (at > v.latest.at) v.latest = { at, revision }; // reads may settle out of order: the later-begun one wins
    return revision;
  };
  if (typeof read === "string") return keep(read);
  const pending = { at, read: read.then(keep) };
  v.pending = pending;
  const settled = () => void (v.pending === pending && (v.pending = undefined));
  pending.read.then(settled, settled);
  return pending.read;
}

/** `verifyNow` for a secret its caller has already found well formed (the service's handler does, for its message). */
function verifyFormed(v: Verifier, secret: string, since?: number): VerifiedKey | null | Promise<VerifiedKey | null> {
  const hash = sha256Hex(secret);
  let revision: string | Promise<string>;
  try {
    // Read the revision before checking, so a revocation during the check is noticed next time.
    revision = v.cacheSize > 0 ? revisionFor(v, since) : "";
  } catch (error) {
    return v.onError(error);
  }
  if (typeof revision === "string") return decide(v, hash, revision);
  return revision.then((r) => decide(v, hash, r), v.onError);
}

/**
 * Why `verify` refuses a secret, and the key it belongs to when it was issued and still stands (expired
 * or disabled). A secret this store retired names its key, and is reported (`onRetired`: the audit event
 * `reuse`) unless `reportReuse` is false (a scan looking secrets up is no presentation to the service).
 */
async function explain(v: Verifier, secret: string, { reportReuse = true }: RefusalOptions = {}): Promise<{ why: Refusal; key?: StoredKey }> {
  if (!isWellFormedSecret(secret)) return { why: { reason: "unknown" } };
  try {
    const hash = sha256Hex(secret);
    const { record, retiring, until } = await standing(v, hash);
    const working = until !== null && v.now() < until; // live, or replaced with grace between the two reads
    const reason = until !== null && !working ? "expired" : working && record?.disabled ? "disabled" : "unknown";
    const key = reason === "unknown" ? undefined : record ?? undefined;
    // A record its name no longer points at was replaced (its grace period over, or never given one), and a
    // rotated key's retiring secret past its time was replaced by the key's new one: retired though not yet
    // removed. Without a record, the retired entry says which key it was.
    const retired = record
      ? (working || (!retiring && (await v.entries.live(record))) ? null : { id: record.id, name: record.name })
      : await v.findRetired(hash);
    if (!retired) return { why: { reason }, key };
    if (reportReuse) await v.onRetired(retired);
    return { why: { reason, retired }, key };
  } catch (error) {
    return v.onError(error);
  }
}

/** `verify`, `verifyNow`, `refusal` and `explain` over one verifier's state (its cache and tokens). */
export function createVerifier(options: VerifierOptions) {
  const v: Verifier = {
    ...options,
    verified: createLru<string, Remembered>(options.cacheSize),
    instance: crypto.randomUUID().slice(0, 8),
    checks: 0,
    latest: { at: -Infinity, revision: "" },
  };
  // A malformed secret is refused without a hash or a read (a lookup could not match it anyway).
  const verifyNow: VerifyNow = (secret) => (isWellFormedSecret(secret) ? verifyFormed(v, secret) : null);
  const verifyFormedNow: VerifyNow = (secret, since) => verifyFormed(v, secret, since);

  return {
    verify: async (secret: string): Promise<VerifiedKey | null> => await verifyNow(secret),
    // A malformed secret matches no hash: the form is the caller's check (the service's, for its message).
    verifyNow: verifyFormedNow,

    refusal: async (secret: string, options?: RefusalOptions): Promise<Refusal> => (await explain(v, secret, options)).why,
    explain: (secret: string, options?: RefusalOptions) => explain(v, secret, options),
  };
}
