/**
 * The audit trail of a file store: `audit/audit.log` under the store's directory, one JSON event a line.
 *
 * - Append-only, by any number of processes at once, without a lock: each event is one write(2) on a
 *   descriptor opened O_APPEND, which the kernel places at the end of the file whole, so writers never
 *   interleave inside a line. It is fsynced (with the driver's `sync`) before `append` resolves.
 * - A write cut short (SIGKILL between two pages, a full disk) leaves at most a torn line: the next event
 *   may be glued to it, so the reader splits lines at `{"at":` as well (a JSON string cannot hold that
 *   text unescaped) and skips whatever does not parse as a whole event.
 * - Rotation, lock-free: once the file passes `maxBytes`, the writer that saw it renames it to
 *   `audit-<time>-<random>.log` (a unique name, so concurrent rotations never overwrite each other's) and
 *   removes the oldest such files beyond `keep`. On disk: at most `keep` + 1 files of about `maxBytes`.
 * - A full disk: every change appends its event before it is made, and a delete must work on a full disk.
 *   `audit/reserve` holds `reserveBytes` of zeros, made with the first event; an append refused for lack
 *   of space removes it and tries once more. It is made again by a later append that finds room. The log
 *   itself is made at the first event and again right after each rotation, so an append needs blocks,
 *   never a new inode.
 * - Reading (`_fs-audit-read.ts`) goes from the end back and stops once the answer is complete, and
 *   every file is checked first (`_fs-audit-files.ts`).
 */
import { constants, type Stats } from "node:fs";
import { join } from "node:path";
import { type AuditLog, auditEventOf } from "../audit.ts";
import { isCode } from "../../core/_error-code.ts";
import { auditFiles, notRegular } from "./_fs-audit-files.ts";
import { readTrail, ROTATED } from "./_fs-audit-read.ts";
import { type FileOps, syncDir as syncDirectory } from "./_fs-ops.ts";
import { READ_FLAGS, type StoreTrust } from "./_fs-trust.ts";

export interface FsAuditOptions {
  /** Size past which the log is rotated (default 4 MiB). */
  maxBytes?: number;
  /** Rotated files kept; older ones are removed (default 4). */
  keep?: number;
  /** Bytes kept in reserve for appends on a full disk (default 64 KiB). */
  reserveBytes?: number;
  /**
   * At most this many bytes of each file are read, its last ones (default 64 MiB, and never less than twice
   * `maxBytes`): a file the store wrote is never near it; the part before is skipped and said at debug level.
   */
  maxReadBytes?: number;
}

const LOG = "audit.log";
const RESERVE = "reserve";
/** O_NONBLOCK: a FIFO planted in place of the log fails (ENXIO) instead of blocking the writer. */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
const noSpace = (error: unknown) => isCode(error, "ENOSPC", "EDQUOT");

/**
 * `audit-20261122T225943123456Z-1a2b3c4d.log`: names sort in the order the files were rotated. Microseconds
 * (the wall clock through `performance`), since several rotations can fall in one millisecond under a burst
 * of writers, and one writer's events in two such files must still read in its order.
 */
const rotatedName = () => {
  const now = performance.timeOrigin + performance.now();
  const micros = String(Math.floor((now % 1) * 1000)).padStart(3, "0");
  return `audit-${new Date(Math.floor(now)).toISOString().replace(/[-:.]/g, "").replace("Z", `${micros}Z`)}-${crypto.randomUUID().slice(0, 8)}.log`;
};

export interface FsAuditContext {
  /** The store's `audit` directory. */
  dir: string;
  trust: StoreTrust;
  files: FileOps;
  /** fsync before an append counts as done. */
  durable: boolean;
  /** Detail for LOG_LEVEL=debug: a file read only in its last part, and what each read took. */
  debug?: (message: string) => void;
}

/** The audit log of the file store whose `audit` directory is `dir`. */
export function createFsAuditLog({ dir, trust, files, durable, debug }: FsAuditContext, options: FsAuditOptions = {}): AuditLog {
  const { maxBytes = 4 * 1024 * 1024, keep = 4, reserveBytes = 64 * 1024 } = options;
  const maxReadBytes = options.maxReadBytes ?? Math.max(64 * 1024 * 1024, 2 * maxBytes);
  const path = join(dir, LOG);
  const reservePath = join(dir, RESERVE);

  const { close, checkFile, openFile, openChecked } = auditFiles(files);
  const syncDir = () => syncDirectory(files, dir, durable);

  /**
   * Makes the reserve when it is missing; on a full disk, leaves nothing behind and tries again next time.
   * One that is there is checked like the log (a loose one made 0600), by a descriptor, only when its mode is off.
   */
  const keepReserve = async () => {
    const stat = await files.lstat(reservePath).catch((error) => {
      if (!isCode(error, "ENOENT")) throw error;
      return undefined;
    });
    if (stat && !stat.isFile() && !stat.isSymbolicLink()) throw notRegular(reservePath, stat); // a link is replaced below
    if (stat?.isFile() && ((stat.mode & 0o777) !== 0o600 || stat.uid !== (process.geteuid?.() ?? stat.uid))) {
      const fd = await openFile(reservePath, READ_FLAGS);
      if (fd !== undefined) {
        try {
          await checkFile(fd, reservePath, await files.fstat(fd), true);
        } finally {
          await close(fd);
        }
      }
    }
    if (stat?.isFile() && stat.size >= reserveBytes) return;
    const tmp = `${reservePath}.${crypto.randomUUID()}.tmp`;
    try {
      const fd = await files.open(tmp, CREATE_FLAGS, 0o600);
      try {
        trust.adopt(fd);
        await files.writeFile(fd, "\0".repeat(reserveBytes), "utf8"); // real blocks: a sparse file would free nothing
        if (durable) await files.fsync(fd);
      } finally {
        await close(fd);
      }
      await files.rename(tmp, reservePath);
    } catch (error) {
      await files.unlink(tmp).catch(() => {});
      if (!noSpace(error)) throw error;
    }
  };

  /** Frees the reserve's blocks; false when there was none. */
  const useReserve = async (): Promise<boolean> => {
    try {
      await files.unlink(reservePath);
      return true;
    } catch (error) {
      if (isCode(error, "ENOENT")) return false;
      throw error;
    }
  };

  /** Opens the log for appending: only a regular file of ours, made 0600 (see `checkFile`). */
  const openLog = async (): Promise<number> => {
    const fd = await openFile(path, APPEND_FLAGS, 0o600);
    if (fd === undefined) throw Object.assign(new Error(`cannot open ${path}`), { code: "ENOENT", path, syscall: "open" }); // its folder went away
    try {
      await checkFile(fd, path, await files.fstat(fd), true);
    } catch (error) {
      await close(fd);
      throw error;
    }
    return fd;
  };

  /** One write(2) of the whole line; a short one (no room for all of it) counts as no room. */
  const writeLine = async (line: Buffer): Promise<Stats> => {
    const fd = await openLog();
    try {
      const written = await files.write(fd, line);
      if (written < line.length) throw Object.assign(new Error(`short write to ${path}`), { code: "ENOSPC", path, syscall: "write" });
      if (durable) await files.fsync(fd);
      return await files.fstat(fd);
    } catch (error) {
      if (error instanceof Error && (error as { path?: unknown }).path === undefined) Object.assign(error, { path });
      throw error;
    } finally {
      await close(fd);
    }
  };

  /**
   * Renames the log the line went into (`appended`) aside, if it is still the current one and past the
   * size; then makes the next one and removes the oldest rotated files beyond `keep`. Best effort: the
   * event is already safe, and a later append rotates if this one could not.
   */
  const rotate = async (appended: Stats) => {
    try {
      const now = await files.lstat(path);
      if (now.ino !== appended.ino || now.dev !== appended.dev) return; // another writer rotated it already
      await files.rename(path, join(dir, rotatedName()));
      await files.open(path, CREATE_FLAGS, 0o600).then(close, (error) => {
        if (!isCode(error, "EEXIST")) throw error;
      });
      await syncDir();
      const rotated = (await files.readdir(dir, { withFileTypes: true })).map((e) => e.name).filter((n) => ROTATED.test(n)).sort();
      // Oldest first; a concurrent writer removing the same ones finds them gone.
      for (const name of rotated.slice(0, Math.max(0, rotated.length - keep))) await files.unlink(join(dir, name)).catch(() => {});
    } catch {
      // ENOENT (rotated meanwhile), or no room for the new file: the next append makes it (O_CREAT)
    }
  };

  return {
    hasRoom: async () => ((await files.lstat(reservePath).catch(() => undefined))?.size ?? 0) >= reserveBytes,

    async append(event) {
      const checked = auditEventOf(event);
      if (!checked) throw new TypeError("Not an audit event");
      const line = Buffer.from(`${JSON.stringify(checked)}\n`, "utf8");
      trust.directory(dir, true);
      await keepReserve(); // one lstat while it is there
      let appended: Stats | undefined;
      for (let attempt = 0; !appended; attempt++) {
        try {
          // A retry starts a new line, in case the attempt before left part of its line behind.
          appended = await writeLine(attempt ? Buffer.concat([Buffer.from("\n"), line]) : line);
        } catch (error) {
          // A full disk: spend the reserve and try again. Again only if another writer made a new reserve
          // meanwhile and so took the room back (a few times at most).
          if (!noSpace(error) || attempt >= 3 || !(await useReserve())) throw error;
        }
      }
      if (appended.size > maxBytes) await rotate(appended);
    },

    async read(query = {}) {
      if (!trust.directory(dir, false)) return [];
      return readTrail({ dir, path, files, maxReadBytes, debug, close, open: (file) => openChecked(file, READ_FLAGS, false) }, query);
    },
  };
}
