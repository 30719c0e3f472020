/**
 * An unstorage driver for a directory, written for a store of credentials: every write goes to a
 * temporary file that is fsynced and renamed into place (a process killed mid-write leaves the old
 * value or the new one, never half of one), files are mode 0600 in 0700 directories, and the
 * atomic index operations use link(2) and rename(2), which the file system performs atomically even
 * between processes, and a per-entry lock file for the read-then-change ones (swap, take, takeIf).
 * The exceptions to write-and-rename are the revision token (`bump`), rewritten in place so that a
 * revocation needs no free space, and the audit log (`_fs-audit.ts`), appended to. unstorage's own fs drivers write in place, which is why this one exists.
 * Which directories it trusts, and whose they are, is decided in `_fs-trust.ts`; the index pages read, `order/`, is `_fs-order.ts`.
 */
import * as fs from "node:fs";
import { dirname, join, resolve } from "node:path";
import { defineDriver, type Driver } from "unstorage";
import { isCode } from "../../core/_error-code.ts";
import type { AtomicIndex } from "../atomic.ts";
import type { AuditLog } from "../audit.ts";
import { createFsAuditLog, type FsAuditOptions } from "./_fs-audit.ts";
import { blockingOps, isAlive, syncDir as syncDirectory, threadPoolOps, withPath } from "./_fs-ops.ts";
import { createFsOrder } from "./_fs-order.ts";
import { withKeyOrder } from "../_key-order.ts";
import { createRevisionFiles } from "./_fs-revision.ts";
import { scanDirectory } from "./_fs-scan.ts";
import { createStoreTrust, READ_FLAGS } from "./_fs-trust.ts";
import { plantedLink } from "./_fs-trust-dir.ts";

const TMP = ".tmp";
/** Reads in flight at once when reading many entries: enough to keep libuv's four threads busy, no more. */
const READ_AHEAD = 64;

const { constants, readFileSync } = fs;

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
  /** Checks the store's directory now (when it exists), so that a bad one is reported before any work. */
  check(): void;
  /** The store's audit trail, `audit/audit.log` and its rotated files (for `createKeyStore({ audit })`). */
  audit: AuditLog;
};

export const fsDriver: (options: FsDriverOptions) => FsDriver = defineDriver((options: FsDriverOptions) => {
  const base = resolve(options.base);
  const trust = createStoreTrust(base);

  const pathOf = (key: string): string => {
    const segments = key.split(":").filter(Boolean);
    if (segments.some((s) => s === "." || s === ".." || s.endsWith(TMP))) {
      throw new Error(`Invalid storage key: ${key}`);
    }
    return join(base, ...segments);
  };

  const durable = options.sync !== false;
  const files = options.blocking ? blockingOps : threadPoolOps();
  /** Removes a file if it is there (fs.rm would load its recursive-removal module for this). */
  const removeFile = (path: string): Promise<void> =>
    files.unlink(path).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
    });

  const syncDir = (dir: string) => syncDirectory(files, dir, durable);

  /** Writes `value` durably to a fresh temporary file beside `path` and returns its name. */
  const writeTemp = async (path: string, value: string): Promise<string> => {
    trust.directory(dirname(path), true);
    const tmp = `${path}.${crypto.randomUUID()}${TMP}`;
    const fd = await files.open(tmp, "wx", 0o600);
    try {
      try {
        trust.adopt(fd);
        await files.writeFile(fd, value, "utf8");
        if (durable) await files.fsync(fd);
      } finally {
        await files.close(fd);
      }
    } catch (error) {
      await removeFile(tmp).catch(() => {}); // a full disk must not leave half-written temporaries behind
      throw withPath(error, path); // a write or fsync by descriptor names no file: say which one
    }
    return tmp;
  };

  // Entries are a few hundred bytes on a local disk: one blocking read costs microseconds, where the
  // promise API makes four trips through the thread pool (open, stat, read, close) per entry.
  // O_NOFOLLOW: an entry that is a symbolic link (never made by the store) is refused, not followed.
  // (Node takes numeric flags here, and keeps its one-call fast path for utf8; the types say string.)
  const readOptions = { encoding: "utf8" as const, flag: READ_FLAGS as unknown as string };
  // Reading many at once (list) goes through `files` instead, a few at a time: on the thread pool for a
  // server, where 20,000 blocking reads would stall every other request for half a second.
  const read = async (path: string, many = false): Promise<string | null> => {
    try {
      if (!trust.directory(dirname(path), false)) return null;
      return many ? await files.readText(path, READ_FLAGS) : readFileSync(path, readOptions);
    } catch (error) {
      if (isCode(error, "ENOENT", "ENOTDIR")) return null;
      if (isCode(error, "ELOOP")) throw plantedLink(path);
      throw error;
    }
  };

  const write = async (path: string, value: string) => {
    const tmp = await writeTemp(path, value);
    try {
      await files.rename(tmp, path);
    } catch (error) {
      await removeFile(tmp);
      throw error;
    }
    await syncDir(dirname(path));
  };

  const revision = createRevisionFiles({ files, pathOf, durable, create: write });
  const order = createFsOrder({ base, trust, files, read: (path) => read(path, true), syncDir });

  const remove = async (path: string) => {
    try {
      await files.unlink(path);
      await syncDir(dirname(path));
    } catch (error) {
      if (!isCode(error, "ENOENT", "ENOTDIR")) throw error;
    }
  };

  const walk = async (dir: string, prefix: string, out: string[]) => {
    let entries;
    try {
      if (!trust.directory(dir, false)) return;
      entries = await files.readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (isCode(error, "ENOENT", "ENOTDIR")) return;
      throw error;
    }
    for (const entry of entries) {
      if (entry.name.endsWith(TMP)) continue;
      const key = prefix ? `${prefix}:${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(dir, entry.name), key, out);
      else out.push(key);
    }
  };

  /**
   * A short-lived lock beside `path`: a file holding the owner's pid, claimed with link(2). A lock whose
   * owner is gone (killed mid-swap) or that is held implausibly long is broken, so a crash never blocks.
   */
  const lock = async (path: string): Promise<() => Promise<void>> => {
    const lockPath = `${path}.lock${TMP}`;
    let mine: string;
    try {
      mine = await writeTemp(path, String(process.pid));
    } catch (error) {
      // A full disk: no room for the pid file, nor reliably for any new directory entry (ext4 refuses even
      // link(2) there). Deletes must still work, so go on unlocked: nothing that needs the lock and writes
      // can succeed now anyway, and take/takeIf stay safe against each other (see `unlinkOwn`).
      if (isCode(error, "ENOSPC", "EDQUOT")) return async () => {};
      throw error;
    }
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await files.link(mine, lockPath);
          return () => removeFile(lockPath);
        } catch (error) {
          if (!isCode(error, "EEXIST")) throw error;
        }
        const owner = Number(await read(lockPath));
        if (attempt >= 400 || (owner > 0 && !isAlive(owner))) {
          const stale = `${lockPath}.${crypto.randomUUID()}${TMP}`;
          // ENOENT: someone else broke it first. Anything else would make this loop spin: give up.
          await files.rename(lockPath, stale).then(() => removeFile(stale), (error) => {
            if (!isCode(error, "ENOENT")) throw error;
          });
          continue;
        }
        await new Promise((done) => setTimeout(done, 1 + Math.random() * 4));
      }
    } finally {
      await removeFile(mine);
    }
  };

  /** Removes `path`; false when it was gone already (someone else removed it first). */
  const unlinkOwn = async (path: string): Promise<boolean> => {
    try {
      await files.unlink(path);
    } catch (error) {
      if (isCode(error, "ENOENT")) return false;
      throw error;
    }
    await syncDir(dirname(path));
    return true;
  };

  const atomic: AtomicIndex = {
    async claim(key, value) {
      const path = pathOf(key);
      const tmp = await writeTemp(path, value);
      try {
        await files.link(tmp, path);
      } catch (error) {
        if (isCode(error, "EEXIST")) return false;
        throw error;
      } finally {
        await removeFile(tmp);
      }
      await syncDir(dirname(path));
      return true;
    },
    async swap(key, value) {
      const path = pathOf(key);
      // Serialized per key, so each swap returns the value it really replaced: unlocked, two concurrent
      // overwrites read the same old id and the record renamed over first is never cleaned up.
      const release = await lock(path);
      try {
        const previous = await read(path);
        await write(path, value);
        return previous;
      } finally {
        await release();
      }
    },
    async swapIf(key, expected, value) {
      const path = pathOf(key);
      const release = await lock(path);
      try {
        if ((await read(path)) !== expected) return false;
        await write(path, value);
        return true;
      } finally {
        await release();
      }
    },
    // take and takeIf hold the same per-entry lock as swap, so a value read under it is the value
    // removed: nothing can replace the entry between the read and the unlink (claim fails while it exists).
    async take(key) {
      const path = pathOf(key);
      if ((await read(path)) === null) return null;
      const release = await lock(path);
      try {
        const value = await read(path);
        return value !== null && (await unlinkOwn(path)) ? value : null;
      } finally {
        await release();
      }
    },
    async takeIf(key, value) {
      const path = pathOf(key);
      if ((await read(path)) !== value) return false;
      const release = await lock(path);
      try {
        return (await read(path)) === value && (await unlinkOwn(path));
      } finally {
        await release();
      }
    },
    bump: (key) => revision.bump(key),
    async exclusive(key, fn) {
      const release = await lock(pathOf(key));
      try {
        return await fn();
      } finally {
        await release();
      }
    },
    version: (key) => revision.read(key),
    order: order.order,
    scan: (prefix, size) => scanDirectory({ trust, files, path: pathOf(prefix), prefix, size }),
    async hasAny(prefix) {
      let dir;
      try {
        if (!trust.directory(pathOf(prefix), false)) return false;
        dir = await files.opendir(pathOf(prefix));
      } catch (error) {
        if (isCode(error, "ENOENT", "ENOTDIR")) return false;
        throw error;
      }
      try {
        for await (const entry of dir) if (!entry.name.endsWith(TMP)) return true;
        return false;
      } finally {
        await dir.close().catch(() => {});
      }
    },
  };

  return withKeyOrder({
    name: "service-api-fs",
    options,
    atomic,
    audit: createFsAuditLog({ dir: join(base, "audit"), trust, files, durable, debug: options.debug }, options.audit),
    check: () => void trust.directory(base, false),
    hasItem: async (key) => (await read(pathOf(key))) !== null,
    getItem: (key) => read(pathOf(key)),
    getItems: async (items: Array<{ key: string }>) => {
      const out = new Array<{ key: string; value: string | null }>(items.length);
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < items.length; i = next++) out[i] = { key: items[i].key, value: await read(pathOf(items[i].key), true) };
      };
      await Promise.all(Array.from({ length: Math.min(READ_AHEAD, items.length) }, worker));
      return out;
    },
    setItem: (key, value) => write(pathOf(key), value),
    removeItem: (key) => remove(pathOf(key)),
    getKeys: async (prefix) => {
      const out: string[] = [];
      const start = prefix ? pathOf(prefix) : base;
      await walk(start, prefix.split(":").filter(Boolean).join(":"), out);
      return out;
    },
    dispose: () => revision.close(),
    clear: async (prefix) => {
      await files.rm(prefix ? pathOf(prefix) : base, { recursive: true, force: true });
    },
  } as FsDriver, order);
}) as (options: FsDriverOptions) => FsDriver;
