/**
 * What the store's operations share: the storage, its atomic operations, entry reads, the clock, the
 * revision and the audit trail. Made once per store by `createKeyStore`; the invariants the operations
 * keep together are written at the top of key-store.ts.
 */
import type { Storage } from "unstorage";
import type { AuditAction, AuditEvent } from "../core/model.ts";
import type { AtomicIndex } from "./atomic.ts";
import type { Entries } from "./_entries.ts";
import type { ChangeOptions } from "./types.ts";

export interface StoreContext {
  storage: Storage;
  atomic: AtomicIndex;
  entries: Entries;
  now: () => number;
  debug: (message: string) => void;
  /** Marks that some key was revoked or changed: every process's remembered verifications lapse. */
  bumpRevision(): Promise<void>;
  readRevision(): Promise<string> | string;
  /** Appends the event of a change about to be made (write-ahead). */
  audit(action: AuditAction, key: { id: string; name: string }, change: ChangeOptions, extra?: Partial<AuditEvent>): Promise<void>;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/**
 * `new Date(ms).toISOString()`, written out from the UTC fields: V8's toISOString reads the local time
 * zone on its first call (/etc/localtime and its links, ~0.2 ms of a create) though its answer is UTC.
 * Years outside 0-9999 (written ±YYYYYY) and invalid times (a RangeError) are left to toISOString.
 */
export const iso = (ms: number): string => {
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) return date.toISOString();
  return `${pad(year, 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds(), 3)}Z`;
};

/** A revocation's first bump may fail on a full disk; the removal frees space and the bump after it must work. */
export const tolerateNoSpace = (error: unknown): void => {
  if (!["ENOSPC", "EDQUOT"].includes((error as { code?: string })?.code ?? "")) throw error;
};
