/**
 * The audit trail of a file store: `audit/audit.log` under the store's directory, one JSON event a line.
 *
 * - Append-only, by any number of processes at once, without a lock: each event is one write(2) on a
 *   descriptor opened O_APPEND, which the kernel places at the end of the file whole, so writers never
 *   interleave inside a line. It is fsynced (with the driver's `sync`) before `append` resolves.
 * - A write cut short (SIGKILL between two pages, a full disk) leaves at most a torn line: the next event
 *   may be glued to it, so the reader splits lines at `{"at":` as well (a JSON string cannot hold that
 *   text unescaped) and skips whatever does not parse as a whole event.
 * - Rotation, lock-free (`_fs-audit-rotate.ts`): once the file passes `maxBytes`, the writer that saw it
 *   renames it to `audit-<time>-<random>.log` (a unique name, so concurrent rotations never overwrite each
 *   other's) and removes the oldest such files beyond `keep`. On disk: at most `keep` + 1 files of about `maxBytes`.
 * - A full disk (`_fs-audit-reserve.ts`): every change appends its event before it is made, and a delete
 *   must work on a full disk. `audit/reserve` holds `reserveBytes` of zeros, made with the first event; an
 *   append refused for lack of space removes it and tries once more. It is made again by a later append
 *   that finds room. The log itself is made at the first event and again right after each rotation, so an
 *   append needs blocks, never a new inode.
 * - Reading (`_fs-audit-read.ts`) goes from the end back and stops once the answer is complete, and
 *   every file is checked first (`_fs-audit-files.ts`). A page in trail order (`page`) starts at a cursor
 *   `<inode>-<offset>`: the file by its inode, which a rotation's rename keeps, and the byte an event starts at.
 */
import { constants, type Stats } from "node:fs";
import { join } from "node:path";
import { type AuditLog, auditEventOf } from "../audit.ts";
import { type AuditFiles, auditFiles } from "./_fs-audit-files.ts";
import { readTrail, readTrailPage, type TrailReader } from "./_fs-audit-read.ts";
import { type AuditReserve, keepReserve, noSpace, reserveHasRoom, useReserve } from "./_fs-audit-reserve.ts";
import { rotateLog } from "./_fs-audit-rotate.ts";
import { type FileOps, syncDir } from "./_fs-ops.ts";
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

/** What appending a line to the current log needs. */
interface LogWriter {
  /** The current log. */
  path: string;
  files: FileOps;
  checks: AuditFiles;
  durable: boolean;
}

/** Opens the log for appending: only a regular file of ours, made 0600 (see `checkFile`). */
async function openLog({ path, files, checks }: LogWriter): Promise<number> {
  const fd = await checks.openFile(path, APPEND_FLAGS, 0o600);
  if (fd === undefined) throw Object.assign(new Error(`cannot open ${path}`), { code: "ENOENT", path, syscall: "open" }); // its folder went away
  try {
    await checks.checkFile(fd, path, await files.fstat(fd), true);
  } catch (error) {
    await checks.close(fd);
    throw error;
  }
  return fd;
}

/** One write(2) of the whole line; a short one (no room for all of it) counts as no room. */
async function writeLine(log: LogWriter, line: Buffer): Promise<Stats> {
  const { path, files, checks, durable } = log;
  const fd = await openLog(log);
  try {
    const written = await files.write(fd, line);
    if (written < line.length) throw Object.assign(new Error(`short write to ${path}`), { code: "ENOSPC", path, syscall: "write" });
    if (durable) await files.fsync(fd);
    return await files.fstat(fd);
  } catch (error) {
    if (error instanceof Error && (error as { path?: unknown }).path === undefined) Object.assign(error, { path });
    throw error;
  } finally {
    await checks.close(fd);
  }
}

/**
 * Appends `line` to the log, spending the reserve on a full disk; resolves with the log's state after it.
 * A retry starts a new line, in case the attempt before left part of its line behind.
 */
async function appendLine(log: LogWriter, reserve: AuditReserve, line: Buffer): Promise<Stats> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await writeLine(log, attempt ? Buffer.concat([Buffer.from("\n"), line]) : line);
    } catch (error) {
      // A full disk: spend the reserve and try again. Again only if another writer made a new reserve
      // meanwhile and so took the room back (a few times at most).
      if (!noSpace(error) || attempt >= 3 || !(await useReserve(reserve))) throw error;
    }
  }
}

/** The audit log of the file store whose `audit` directory is `dir`. */
export function createFsAuditLog({ dir, trust, files, durable, debug }: FsAuditContext, options: FsAuditOptions = {}): AuditLog {
  const { maxBytes = 4 * 1024 * 1024, keep = 4, reserveBytes = 64 * 1024 } = options;
  const maxReadBytes = options.maxReadBytes ?? Math.max(64 * 1024 * 1024, 2 * maxBytes);
  const path = join(dir, LOG);
  const checks = auditFiles(files);
  const log: LogWriter = { path, files, checks, durable };
  const reserve: AuditReserve = { path: join(dir, RESERVE), bytes: reserveBytes, files, checks, trust, durable };
  const open = (file: string) => checks.openChecked(file, READ_FLAGS, false);
  const reader: TrailReader = { dir, path, files, maxReadBytes, debug, close: checks.close, open };
  const rotation = { dir, path, keep, files, close: checks.close, syncDir: () => syncDir(files, dir, durable) };

  return {
    hasRoom: () => reserveHasRoom(reserve),

    async append(event) {
      const checked = auditEventOf(event);
      if (!checked) throw new TypeError("Not an audit event");
      const line = Buffer.from(`${JSON.stringify(checked)}\n`, "utf8");
      await trust.directory(dir, true);
      await keepReserve(reserve); // one lstat while it is there
      const appended = await appendLine(log, reserve, line);
      if (appended.size > maxBytes) await rotateLog(rotation, appended);
    },

    async read(query = {}) {
      return (await trust.directory(dir, false)) ? readTrail(reader, query) : [];
    },

    async page(query) {
      return (await trust.directory(dir, false)) ? readTrailPage(reader, query) : { events: [], cursor: null };
    },
  };
}
