/**
 * The audit trail's reserve on a full disk: `audit/reserve` holds `bytes` of zeros, so that an append refused
 * for lack of space can free them and try once more (every change appends its event before it is made, and a
 * delete must work on a full disk). It is made with the first event, and again by a later append that finds room.
 */
import { isCode } from "../../core/_error-code.ts";
import { type AuditFiles, CREATE_FLAGS, notRegular } from "./_fs-audit-files.ts";
import type { FileOps } from "./_fs-ops.ts";
import { READ_FLAGS, type StoreTrust } from "./_fs-trust.ts";

export interface AuditReserve {
  /** `audit/reserve` under the store's directory. */
  path: string;
  /** Its size. */
  bytes: number;
  files: FileOps;
  checks: AuditFiles;
  trust: StoreTrust;
  /** fsync the reserve when it is made. */
  durable: boolean;
}

/** True for an error that says the disk (or the user's quota) is full. */
export const noSpace = (error: unknown) => isCode(error, "ENOSPC", "EDQUOT");

/** True when the reserve is there in full. */
export async function reserveHasRoom({ path, files, bytes }: AuditReserve): Promise<boolean> {
  return ((await files.lstat(path).catch(() => undefined))?.size ?? 0) >= bytes;
}

/**
 * Makes the reserve when it is missing; on a full disk, leaves nothing behind and tries again next time.
 * One that is there is checked like the log (a loose one made 0600), by a descriptor, only when its mode is off.
 */
export async function keepReserve({ path, bytes, files, checks, trust, durable }: AuditReserve): Promise<void> {
  const { close, checkFile, openFile } = checks;
  const stat = await files.lstat(path).catch((error) => {
    if (!isCode(error, "ENOENT")) throw error;
    return undefined;
  });
  if (stat && !stat.isFile() && !stat.isSymbolicLink()) throw notRegular(path, stat); // a link is replaced below
  if (stat?.isFile() && ((stat.mode & 0o777) !== 0o600 || stat.uid !== (process.geteuid?.() ?? stat.uid))) {
    const fd = await openFile(path, READ_FLAGS);
    if (fd !== undefined) {
      try {
        await checkFile(fd, path, await files.fstat(fd), true);
      } finally {
        await close(fd);
      }
    }
  }
  if (stat?.isFile() && stat.size >= bytes) return;
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    const fd = await files.open(tmp, CREATE_FLAGS, 0o600);
    try {
      await trust.adopt(fd);
      await files.writeFile(fd, "\0".repeat(bytes), "utf8"); // real blocks: a sparse file would free nothing
      if (durable) await files.fsync(fd);
    } finally {
      await close(fd);
    }
    await files.rename(tmp, path);
  } catch (error) {
    await files.unlink(tmp).catch(() => {});
    if (!noSpace(error)) throw error;
  }
}

/** Frees the reserve's blocks; false when there was none. */
export async function useReserve({ path, files }: AuditReserve): Promise<boolean> {
  try {
    await files.unlink(path);
    return true;
  } catch (error) {
    if (isCode(error, "ENOENT")) return false;
    throw error;
  }
}
