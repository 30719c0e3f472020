/**
 * The fs driver's durable file operations on one path: where a key lives, reads, and writes that go to
 * a temporary file that is fsynced and renamed into place (a process killed mid-write leaves the old
 * value or the new one, never half of one), files mode 0600 in 0700 directories (`_fs-trust.ts`).
 * The lock (`_fs-lock.ts`) and the atomic index (`_fs-atomic.ts`) are built from these.
 */
import { dirname, join } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import { type FileOps, inTurns, syncDir as syncDirectory, withPath } from "./_fs-ops.ts";
import { READ_FLAGS, type StoreTrust } from "./_fs-trust.ts";
import { plantedLink } from "./_fs-trust-dir.ts";

/** Entry reads in flight at once per store: enough to keep libuv's four threads busy, no more. */
export const READS_AT_ONCE = 64;

/** The suffix of temporary and lock files: never a key, skipped by every listing. */
export const TMP = ".tmp";

/** What every part of the fs driver works from: the store's directory, its trust checks and the file operations. */
export interface FsContext {
  /** The store's directory, absolute. */
  base: string;
  trust: StoreTrust;
  files: FileOps;
  /** fsync files and directories before a write counts as done. */
  durable: boolean;
}

/** The durable operations on one path, made by `createFsFiles`. */
export interface FsFiles {
  /** The file holding `key` (its `:`-separated segments as directories); throws for a key that could escape. */
  pathOf(key: string): string;
  /** The file's text, or null when it is missing. */
  read(path: string): Promise<string | null>;
  /** Writes `value` durably to a fresh temporary file beside `path` and returns its name. */
  writeTemp(path: string, value: string): Promise<string>;
  /** Replaces the file whole: temporary file, fsync, rename, directory fsync. */
  write(path: string, value: string): Promise<void>;
  /** Removes the file and syncs its directory; nothing when it is missing. */
  remove(path: string): Promise<void>;
  /** Removes a file if it is there, without syncing its directory. */
  removeFile(path: string): Promise<void>;
  /** Removes `path`; false when it was gone already (someone else removed it first). */
  unlinkOwn(path: string): Promise<boolean>;
  /** fsyncs a directory when the store is durable. */
  syncDir(dir: string): Promise<void>;
}

/** The file under `base` holding `key`: its `:`-separated segments as directories. */
function keyPath(base: string, key: string): string {
  const segments = key.split(":").filter(Boolean);
  if (segments.some((s) => s === "." || s === ".." || s.endsWith(TMP))) {
    throw new Error(`Invalid storage key: ${key}`);
  }
  return join(base, ...segments);
}

export function createFsFiles({ base, trust, files, durable }: FsContext): FsFiles {
  const pathOf = (key: string): string => keyPath(base, key);

  /** Removes a file if it is there (fs.rm would load its recursive-removal module for this). */
  const removeFile = (path: string): Promise<void> =>
    files.unlink(path).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
    });

  const syncDir = (dir: string) => syncDirectory(files, dir, durable);

  /** Writes `value` durably to a fresh temporary file beside `path` and returns its name. */
  const writeTemp = async (path: string, value: string): Promise<string> => {
    await trust.directory(dirname(path), true);
    const tmp = `${path}.${crypto.randomUUID()}${TMP}`;
    const fd = await files.open(tmp, "wx", 0o600);
    try {
      try {
        await trust.adopt(fd);
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

  // Through `files`: on the thread pool for a server, which never reads a file on its event loop (a read
  // is three trips, open, read, close); on the calling thread for the CLI. O_NOFOLLOW: an entry that is a
  // symbolic link (never made by the store) is refused, not followed. At most READS_AT_ONCE at a time, so
  // the revision reads of other requests (not counted here) wait behind a few reads, never thousands.
  const turn = inTurns(READS_AT_ONCE);
  const read = async (path: string): Promise<string | null> => {
    try {
      if (!(await trust.directory(dirname(path), false))) return null;
      return await turn(() => files.readText(path, READ_FLAGS));
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

  const remove = async (path: string) => {
    try {
      await files.unlink(path);
      await syncDir(dirname(path));
    } catch (error) {
      if (!isCode(error, "ENOENT", "ENOTDIR")) throw error;
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

  return { pathOf, read, writeTemp, write, remove, removeFile, unlinkOwn, syncDir };
}
