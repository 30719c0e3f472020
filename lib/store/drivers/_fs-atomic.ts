/**
 * The fs driver's atomic index (see ../atomic.ts). `claim` uses link(2), which fails when the entry
 * exists and which the file system performs atomically even between processes; the read-then-change
 * operations (swap, swapIf, take, takeIf) and `exclusive` hold the entry's lock (`_fs-lock.ts`). The
 * revision token is `_fs-revision.ts`, the creation-ordered index `_fs-order.ts`, the listings `_fs-scan.ts`.
 */
import { dirname } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import type { KeyOrder } from "../_key-order.ts";
import type { AtomicIndex } from "../atomic.ts";
import type { FsContext, FsFiles } from "./_fs-files.ts";
import type { FsLock } from "./_fs-lock.ts";
import type { createRevisionFiles } from "./_fs-revision.ts";
import { hasEntries, scanDirectory } from "./_fs-scan.ts";

export interface FsAtomicOptions extends FsContext {
  io: FsFiles;
  lock: FsLock;
  revision: ReturnType<typeof createRevisionFiles>;
  order: KeyOrder;
}

export function createFsAtomic({ trust, files, io, lock, revision, order }: FsAtomicOptions): AtomicIndex {
  const { pathOf, read, write, writeTemp, removeFile, unlinkOwn, syncDir } = io;
  return {
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
    order,
    scan: (prefix, size) => scanDirectory({ trust, files, path: pathOf(prefix), prefix, size }),
    hasAny: async (prefix) => hasEntries({ trust, files }, pathOf(prefix)),
  };
}
