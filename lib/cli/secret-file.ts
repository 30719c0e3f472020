/**
 * `--output <file>`: a new key's secret written to a file that is never readable by anyone else, not
 * even for an instant. A new file is made with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 (an existing
 * file or a symbolic link in its place is refused, never followed or truncated); with `--force` the
 * text goes to a new 0600 temporary file beside it that is then renamed over the old one, so readers
 * see the old file or the new one, never a partial or loose one.
 */
import { accessSync, closeSync, constants, existsSync, fchmodSync, fsyncSync, lstatSync, openSync, renameSync, rmSync, type Stats, statSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { ServiceError } from "../core/errors.ts";

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/**
 * Refuses, before anything is created (or, with `--overwrite`, replaced): a target that exists when
 * `--force` was not given, a directory, and a folder the file cannot be made in (missing, not a folder,
 * not writable by this user, read-only). What only the write can tell (a full disk) still undoes the
 * create afterwards (`deliver`).
 */
export function checkOutputTarget(path: string, force: boolean): void {
  const refuse = (why: string) => new ServiceError("USAGE", `--output ${shown(path)}: ${why}`);
  if (path === "" || path.endsWith("/")) throw refuse("name a file, not a folder");
  let stat;
  try {
    stat = lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    throw refuse(reasonOf(error)); // a folder on the way that cannot be searched, or is a file
  }
  if (stat?.isDirectory()) throw new ServiceError("USAGE", `--output ${shown(path)} is a directory: name a file`);
  if (stat && !force) throw new ServiceError("USAGE", `--output ${shown(path)} already exists: pass --force to replace it, or choose a new file`);
  const folder = dirname(path);
  let folderStat;
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
    folderStat = statSync(folder);
    if (!writerMayCreateIn(folderStat)) throw Object.assign(new Error("EACCES"), { code: "EACCES" });
  } catch (error) {
    throw refuse(`cannot create a file in ${shown(folder)} (${reasonOf(error)})`);
  }
  // In a sticky folder (/tmp) only the owner of a file, or of the folder, may rename over it.
  const uid = process.geteuid?.();
  if (stat && uid !== undefined && uid !== 0 && (folderStat.mode & 0o1000) !== 0 && stat.uid !== uid && folderStat.uid !== uid) {
    throw refuse(`it belongs to another user in a sticky folder (${shown(folder)}), so it cannot be replaced`);
  }
}

/**
 * Whether the user who writes the file may make one in a folder of this owner and mode. access(2) asks as
 * the real user; root working on another user's store writes as that user (its effective ids, see
 * lib/store/drivers/_fs-owner.ts), so then the folder's mode is read as the kernel would for those ids.
 */
function writerMayCreateIn(folder: Stats): boolean {
  const euid = process.geteuid?.();
  if (euid === undefined || euid === process.getuid?.() || euid === 0) return true; // access(2) asked as the writer
  const groups = [process.getegid?.(), ...(process.getgroups?.() ?? [])];
  const shift = folder.uid === euid ? 6 : groups.includes(folder.gid) ? 3 : 0;
  return ((folder.mode >> shift) & 0o3) === 0o3; // write and search
}

/** A path for a one-line message: control characters (a newline, an escape) as JSON escapes. */
const shown = (path: string) => (/[\x00-\x1f\x7f]/.test(path) ? JSON.stringify(path) : path);

/**
 * A file system error as the user of `--output` can act on it (`describeSystemError` in the store layer
 * words its fixes for `--store`).
 */
const REASONS: Record<string, string> = {
  ENOENT: "no such folder",
  ENOTDIR: "a part of the path is not a folder",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "read-only file system",
  ENAMETOOLONG: "name too long",
  ELOOP: "too many symbolic links",
};
const reasonOf = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException).code;
  return REASONS[code ?? ""] ?? code ?? String(error);
};

/** Makes `path` with `text`; a file this made and could not fill (a full disk) is removed again. */
function writeNew(path: string, text: string): void {
  const fd = openSync(path, CREATE_NEW, 0o600);
  let written = false;
  try {
    fchmodSync(fd, 0o600); // the umask can only take bits away; this makes sure of the rest
    const bytes = new TextEncoder().encode(text);
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
    written = true;
  } finally {
    closeSync(fd);
    if (!written) rmSync(path, { force: true });
  }
}

/**
 * Writes `text` to `path` with mode 0600. Returns undefined when written, else the error code
 * (EEXIST when the file appeared meanwhile without `force`, EACCES, ENOSPC, ...).
 */
export function writeSecretFile(path: string, text: string, force: boolean): string | undefined {
  try {
    if (!force) {
      writeNew(path, text);
      return;
    }
    // A name of fixed length: one built on the target's could pass the file system's limit (255 bytes).
    const temp = join(dirname(path), `.service-api-${crypto.randomUUID().slice(0, 8)}.tmp`);
    try {
      writeNew(temp, text);
      renameSync(temp, path);
    } catch (error) {
      if (existsSync(temp)) rmSync(temp, { force: true });
      throw error;
    }
  } catch (error) {
    return (error as { code?: string }).code ?? "EIO";
  }
}
