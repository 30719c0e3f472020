/**
 * The store's revision token on files (`meta/revision`), which every revocation changes and every
 * request reads. It is a random token rewritten in place and read as content:
 * - inode, change time and size (the former token) did not identify a version on file systems with
 *   one-second timestamps (ext4 with 128-byte inodes), where a freed inode number comes back at once;
 * - rewriting the bytes of an existing file needs no new block or inode, so a revocation works on a
 *   full disk.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, readSync, writeSync } from "node:fs";
import { isCode } from "../../core/_error-code.ts";
import type { FileOps } from "./_fs-ops.ts";

/** The path's own stat, or undefined when nothing is there any more (the store removed or replaced by a file). */
function statOf(path: string) {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if (isCode(error, "ENOTDIR")) return undefined;
    throw error;
  }
}

export interface RevisionFilesOptions {
  files: FileOps;
  pathOf: (key: string) => string;
  durable: boolean;
  /** Writes a new file whole (temporary file, fsync, rename), for a token that does not exist yet. */
  create: (path: string, value: string) => Promise<void>;
}

export function createRevisionFiles({ files, pathOf, durable, create }: RevisionFilesOptions) {
  const buffer = Buffer.alloc(64);
  // read() is asked about the same key per request: the file stays open, known by its (dev, ino).
  const open = new Map<string, { path: string; fd: number; dev: number; ino: number }>();

  return {
    /**
     * Writes a fresh token over the file in place. One write(2) of 36 bytes at offset 0: a killed process
     * leaves the old token or the new one; a reader racing it may see a mix, which differs from the old
     * token all the same. A missing file is created whole, so it never exists empty.
     */
    async bump(key: string): Promise<void> {
      const path = pathOf(key);
      const token = crypto.randomUUID();
      let fd;
      try {
        fd = await files.open(path, constants.O_WRONLY | constants.O_NOFOLLOW); // never through a planted link
      } catch (error) {
        if (!isCode(error, "ENOENT")) throw error;
        return create(path, token);
      }
      try {
        writeSync(fd, token, 0, "latin1");
        if (fstatSync(fd).size > token.length) ftruncateSync(fd, token.length); // shrinking frees, never allocates
        if (durable) await files.fsync(fd);
      } finally {
        await files.close(fd);
      }
    },

    /**
     * The current token ("" while there is none). The file stays open: a stat of the path plus a pread cost
     * what one stat did (2.5 µs). When the path no longer names the open file (an older version renamed a
     * new one into place; the store was removed, or moved aside and restored by `mv` and `cp -a`, while a
     * hard-link backup keeps the old file alive), the open copy no longer changes: go back to the path.
     */
    read(key: string): string {
      const held = open.get(key);
      if (held) {
        const now = statOf(held.path);
        if (now && now.ino === held.ino && now.dev === held.dev) {
          return buffer.toString("latin1", 0, readSync(held.fd, buffer, 0, buffer.length, 0));
        }
        open.delete(key);
        closeSync(held.fd);
      }
      const path = held?.path ?? pathOf(key);
      let fd;
      try {
        fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (error) {
        if (isCode(error, "ENOENT", "ENOTDIR")) return "";
        throw error;
      }
      const { dev, ino } = fstatSync(fd);
      open.set(key, { path, fd, dev, ino });
      const length = readSync(fd, buffer, 0, buffer.length, 0);
      return buffer.toString("latin1", 0, length);
    },

    close(): void {
      for (const { fd } of open.values()) closeSync(fd);
      open.clear();
    },
  };
}
