/**
 * The checks every file of a file store's audit trail passes (the log, the rotated files, the reserve):
 * only regular files of the store's owner. A FIFO, socket, device or directory in place of one is refused,
 * naming the path and the fix; a file of another user is refused as `_fs-trust.ts` refuses its folders;
 * one of ours that is looser (or tighter, under a umask like 0277) is made 0600 again on its descriptor.
 */
import { constants, type Stats } from "node:fs";
import { ServiceError } from "../../core/errors.ts";
import { printable } from "../_system-errors.ts";
import type { FileOps } from "./_fs-ops.ts";
import { plantedLink } from "./_fs-trust-dir.ts";
import { isCode } from "../../core/_error-code.ts";

/** Flags that make a new file of the trail (the next log, the reserve): never one that is there, never through a link. */
export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/** What a path holds, in a message. */
const kindOf = (stat: Stats) =>
  stat.isFIFO() ? "fifo"
  : stat.isSocket() ? "socket"
  : stat.isDirectory() ? "directory"
  : stat.isCharacterDevice() ? "character device"
  : stat.isBlockDevice() ? "block device"
  : stat.isSymbolicLink() ? "symbolic link"
  : "special file";

/** The error for something in place of a log file, the reserve or a rotated file that the store never makes. */
export function notRegular(path: string, stat: Stats): ServiceError {
  return new ServiceError(
    "STORE_UNAVAILABLE",
    printable(`Key store unavailable: ${path} is not a regular file but a ${kindOf(stat)}, which the store never makes: someone else may have planted it. Remove it.`),
  );
}

/** Opening and checking the trail's files through `files`. */
export function auditFiles(files: FileOps) {
  const close = (fd: number) => files.close(fd).catch(() => {});

  /**
   * Checks a file of the log just opened (or about to be used) as `fd`: a regular file of the store's owner
   * (this process acts as the owner once its folders are trusted: `_fs-trust.ts`), made 0600 when it is ours
   * and not. `strict`: for writing, where a mode that cannot be fixed is an error; a reader goes on.
   */
  const checkFile = async (fd: number, path: string, stat: Stats, strict: boolean) => {
    if (!stat.isFile()) throw notRegular(path, stat);
    const euid = process.geteuid?.() ?? -1; // -1: no Unix users (Windows), nothing to compare
    if (euid !== -1 && stat.uid !== euid) {
      throw new ServiceError("STORE_UNAVAILABLE", printable(
        `Key store unavailable: ${path} belongs to uid ${stat.uid}, not to the store's owner (uid ${euid}): someone else may have planted it. Remove it, or if it is yours: chown ${euid} ${path}`,
      ));
    }
    if ((stat.mode & 0o777) === 0o600) return;
    try {
      await files.fchmod(fd, 0o600);
    } catch (error) {
      if (strict) throw Object.assign(error as Error, { path });
    }
  };

  /** Opens `path` with `flags`; undefined when it is missing. Links and what cannot be opened as a file are refused. */
  const openFile = async (target: string, flags: number, mode?: number): Promise<number | undefined> => {
    try {
      return await files.open(target, flags, mode);
    } catch (error) {
      if (isCode(error, "ENOENT")) return undefined;
      if (isCode(error, "ELOOP")) throw plantedLink(target);
      // A FIFO without a reader or a socket (ENXIO), a directory opened for writing (EISDIR): say what it is.
      if (isCode(error, "ENXIO", "EISDIR", "EOPNOTSUPP", "ENODEV")) {
        const stat = await files.lstat(target).catch(() => undefined);
        if (stat && !stat.isFile()) throw notRegular(target, stat);
      }
      throw error;
    }
  };

  /** Opens a file of the log with `flags` and checks it (`strict` as for `checkFile`); undefined when it is gone. */
  const openChecked = async (file: string, flags: number, strict: boolean) => {
    const fd = await openFile(file, flags);
    if (fd === undefined) return undefined;
    try {
      const stat = await files.fstat(fd);
      await checkFile(fd, file, stat, strict);
      return { fd, stat };
    } catch (error) {
      await close(fd);
      throw error;
    }
  };

  return { close, checkFile, openFile, openChecked };
}

/** The trail's file checks, as `auditFiles` makes them. */
export type AuditFiles = ReturnType<typeof auditFiles>;
