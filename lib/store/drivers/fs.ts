/**
 * An unstorage driver for a directory, written for a store of credentials: every write goes to a
 * temporary file that is fsynced and renamed into place (a process killed mid-write leaves the old
 * value or the new one, never half of one), files are mode 0600 in 0700 directories, and the
 * atomic index operations use link(2) and rename(2), which the file system performs atomically even
 * between processes, and a per-entry lock file for the read-then-change ones (swap, take, takeIf).
 * The exceptions to write-and-rename are the revision token (`bump`), rewritten in place so that a
 * revocation needs no free space, and the audit log (`_fs-audit.ts`), appended to. unstorage's own fs drivers write in place, which is why this one exists.
 * Which directories it trusts, and whose they are, is decided in `_fs-trust.ts`; the index pages read, `order/`, is `_fs-order.ts`.
 * This module is the public driver: its options and the unstorage methods, wired to the pieces that do
 * the work: `_fs-files.ts` (durable reads and writes of one path), `_fs-lock.ts` (the per-entry lock),
 * `_fs-atomic.ts` (the atomic index), `_fs-scan.ts` (listings) and `_fs-revision.ts` (the revision token).
 */
import { join, resolve } from "node:path";
import { defineDriver, type Driver } from "unstorage";
import type { AtomicIndex } from "../atomic.ts";
import type { AuditLog } from "../audit.ts";
import { withKeyOrder } from "../_key-order.ts";
import { createFsAtomic } from "./_fs-atomic.ts";
import { createFsAuditLog, type FsAuditOptions } from "./_fs-audit.ts";
import { createFsFiles, type FsContext, READS_AT_ONCE } from "./_fs-files.ts";
import { createFsLock } from "./_fs-lock.ts";
import { blockingOps, threadPoolOps } from "./_fs-ops.ts";
import { createFsOrder } from "./_fs-order.ts";
import { createRevisionFiles } from "./_fs-revision.ts";
import { walkKeys } from "./_fs-scan.ts";
import { createStoreTrust } from "./_fs-trust.ts";

export interface FsDriverOptions {
  /**
   * Directory holding the store; created with mode 0700 when missing. Its owner owns the store: see
   * `_fs-trust.ts` for what is tightened, adopted or refused.
   */
  base: string;
  /**
   * fsync files and directories before a write counts as done (default true). Only bulk loads that
   * can be redone from scratch (benchmarks seeding 100,000 keys) should turn this off.
   */
  sync?: boolean;
  /**
   * Do file operations on the calling thread (default false). Right for a process that makes one
   * change and exits, like the CLI; a server should leave it off so that a slow disk never stalls it.
   */
  blocking?: boolean;
  /** The audit log's rotation and reserve sizes (see `_fs-audit.ts`); the defaults suit every store. */
  audit?: FsAuditOptions;
  /** Detail for LOG_LEVEL=debug (the audit log says when it read a file only in its last part). */
  debug?: (message: string) => void;
}

/** The driver plus the atomic index operations over the same directory. */
export type FsDriver = Driver & {
  atomic: AtomicIndex;
  /** Checks the store's directory (when it exists), so that a bad one is reported before any work. */
  check(): Promise<void>;
  /** The store's audit trail, `audit/audit.log` and its rotated files (for `createKeyStore({ audit })`). */
  audit: AuditLog;
};

export const fsDriver: (options: FsDriverOptions) => FsDriver = defineDriver((options: FsDriverOptions) => {
  const base = resolve(options.base);
  const files = options.blocking ? blockingOps : threadPoolOps();
  const context: FsContext = { base, trust: createStoreTrust(base, files), files, durable: options.sync !== false };
  const { trust, durable } = context;
  const io = createFsFiles(context);
  const { pathOf, read, write, remove, syncDir } = io;

  const revision = createRevisionFiles({ files, pathOf, durable, create: write });
  const order = createFsOrder({ base, trust, files, read, syncDir });
  const lock = createFsLock({ files, io });
  const atomic = createFsAtomic({ ...context, io, lock, revision, order: order.order });

  return withKeyOrder({
    name: "service-api-fs",
    options,
    atomic,
    audit: createFsAuditLog({ dir: join(base, "audit"), trust, files, durable, debug: options.debug }, options.audit),
    check: async () => void (await trust.directory(base, false)),
    hasItem: async (key) => (await read(pathOf(key))) !== null,
    getItem: (key) => read(pathOf(key)),
    getItems: async (items: Array<{ key: string }>) => {
      const out = new Array<{ key: string; value: string | null }>(items.length);
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < items.length; i = next++) out[i] = { key: items[i].key, value: await read(pathOf(items[i].key)) };
      };
      await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, items.length) }, worker));
      return out;
    },
    setItem: (key, value) => write(pathOf(key), value),
    removeItem: (key) => remove(pathOf(key)),
    getKeys: async (prefix) => {
      const out: string[] = [];
      const start = prefix ? pathOf(prefix) : base;
      await walkKeys({ trust, files }, start, prefix.split(":").filter(Boolean).join(":"), out);
      return out;
    },
    clear: async (prefix) => {
      await files.rm(prefix ? pathOf(prefix) : base, { recursive: true, force: true });
    },
  } as FsDriver, order);
}) as (options: FsDriverOptions) => FsDriver;
