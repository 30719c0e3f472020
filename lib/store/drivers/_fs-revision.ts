/**
 * The store's revision token on files (`meta/revision`), which every revocation changes and every
 * request reads. It is a random token rewritten in place and read as content:
 * - inode, change time and size (the former token) did not identify a version on file systems with
 *   one-second timestamps (ext4 with 128-byte inodes), where a freed inode number comes back at once;
 * - rewriting the bytes of an existing file needs no new block or inode, so a revocation works on a
 *   full disk.
 * Both go through the driver's file operations: a server reads and writes it on the thread pool, never on
 * its event loop (requests that arrive while a read is under way share it: see `_verify.ts`).
 */
import { constants } from "node:fs";
import { isCode } from "../../core/_error-code.ts";
import type { FileOps } from "./_fs-ops.ts";
import { READ_FLAGS } from "./_fs-trust.ts";

export interface RevisionFilesOptions {
  files: FileOps;
  pathOf: (key: string) => string;
  durable: boolean;
  /** Writes a new file whole (temporary file, fsync, rename), for a token that does not exist yet. */
  create: (path: string, value: string) => Promise<void>;
}

export function createRevisionFiles({ files, pathOf, durable, create }: RevisionFilesOptions) {
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
        await files.write(fd, Buffer.from(token, "latin1"));
        if ((await files.fstat(fd)).size > token.length) await files.ftruncate(fd, token.length); // shrinking frees, never allocates
        if (durable) await files.fsync(fd);
      } finally {
        await files.close(fd);
      }
    },

    /** The current token ("" while there is none), read whole through the path each time (never a link). */
    async read(key: string): Promise<string> {
      try {
        return await files.readText(pathOf(key), READ_FLAGS);
      } catch (error) {
        if (isCode(error, "ENOENT", "ENOTDIR")) return "";
        throw error;
      }
    },
  };
}
