/**
 * The creation-ordered index on files (see lib/store/_key-order.ts): `order/`, one empty file per key,
 * named `<creation ms + 10^14>-<id>`, so that the directory's names, sorted, are the listing order. A
 * page reads only its own records, from the directory's names, sorted; those are kept while the
 * directory's mtime stays the same, so they are listed again only after a change.
 *
 * The entry is created (O_EXCL, then the directory fsynced) before the record is renamed into place and
 * unlinked after the record is, so a crash leaves at most an extra entry, which readers skip. Creation is
 * O_EXCL on a name of its own, so two processes creating keys at once never clash, and a rewrite of a
 * record (rename, last use) finds its entry there and changes nothing.
 *
 * A store written before the index existed, or whose `order/` was removed, has records without entries:
 * the first page each process reads compares `keys/` with `order/` (names only) and adds the missing
 * entries, reading just those records. Migrating 100,000 keys so costs one read of each, once.
 */
import { join } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import { isKeyId } from "../../core/input.ts";
import { firstAfter, idOfOrder, isOrderName, type KeyOrder, orderOfRecord, type OrderHooks } from "../_key-order.ts";
import type { FileOps } from "./_fs-ops.ts";

export interface FsOrderOptions {
  base: string;
  trust: { directory(path: string, create: boolean): Promise<boolean>; adopt(fd: number): Promise<void> };
  files: FileOps;
  /** Reads a store file's text (null when missing), as the driver does for many at once. */
  read(path: string): Promise<string | null>;
  syncDir(dir: string): Promise<void>;
}

/** The index's hooks for `withKeyOrder` and its reader for the store. */
export function createFsOrder({ base, trust, files, read, syncDir }: FsOrderOptions): OrderHooks & { order: KeyOrder } {
  const dir = join(base, "order");

  const names = async (path: string): Promise<string[]> => {
    try {
      if (!(await trust.directory(path, false))) return [];
      return (await files.readdir(path, { withFileTypes: true })).map((entry) => entry.name);
    } catch (error) {
      if (isCode(error, "ENOENT", "ENOTDIR")) return [];
      throw error;
    }
  };

  const add = async (name: string, sync = true) => {
    await trust.directory(dir, true);
    let fd: number;
    try {
      fd = await files.open(join(dir, name), "wx", 0o600);
    } catch (error) {
      if (isCode(error, "EEXIST")) return; // the record is being rewritten, or another process made it
      throw error;
    }
    try {
      await trust.adopt(fd);
    } finally {
      await files.close(fd);
    }
    if (sync) await syncDir(dir);
  };

  let healed: Promise<void> | undefined;

  // The sorted names, listed again only when the directory has changed since (its mtime). A change within
  // the file system's timestamp granularity of a listing would leave mtime as it was: a listing made less
  // than a second after the last change is not reused.
  let cache: { names: string[]; mtimeMs: number; trusted: boolean } | undefined;
  const listing = async (): Promise<string[]> => {
    const mtimeMs = await files.lstat(dir).then((stat) => stat.mtimeMs, (error) => {
      if (isCode(error, "ENOENT", "ENOTDIR")) return -1;
      throw error;
    });
    if (cache?.trusted && cache.mtimeMs === mtimeMs) return cache.names;
    const started = Date.now();
    const sorted = (await names(dir)).filter(isOrderName).sort();
    cache = { names: sorted, mtimeMs, trusted: mtimeMs >= 0 && started - mtimeMs > 1_000 };
    return sorted;
  };

  /** Adds the entries of records that have none (a store from before the index, or entries removed by hand). */
  const heal = async () => {
    const indexed = new Set((await listing()).map(idOfOrder)); // kept for the page after it when nothing is missing
    const missing = (await names(join(base, "keys"))).filter((id) => isKeyId(id) && !indexed.has(id));
    for (let at = 0; at < missing.length; at += 64) {
      await Promise.all(missing.slice(at, at + 64).map(async (id) => {
        const name = orderOfRecord(id, await read(join(base, "keys", id)));
        if (name) await add(name, false);
      }));
    }
    if (missing.length) await syncDir(dir); // once for them all: 100,000 fsyncs would take minutes
  };

  return {
    add: (name) => add(name),
    // Not fsynced: an entry that comes back after a crash only names a key that is gone, which readers skip.
    remove: (name) =>
      files.unlink(join(dir, name)).catch((error) => {
        if (!isCode(error, "ENOENT")) throw error;
      }),
    order: async function* (after, size) {
      await (healed ??= heal().catch((error) => {
        healed = undefined; // tried again by the next page
        throw error;
      }));
      const sorted = await listing();
      for (let at = firstAfter(sorted, after); at < sorted.length; at += size) yield sorted.slice(at, at + size);
    },
  };
}
