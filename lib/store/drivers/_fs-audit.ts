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
 * - Reading streams: each file is read in chunks of 1 MiB and each event, once parsed, is offered to a
 *   selector that keeps only what the query returns (`since`; with `limit`, the latest N by time), so a
 *   log far past its rotation size (appended to by hand, or kept from before) costs time, not memory.
 *   A file is read in its last `maxReadBytes` (64 MiB) at most: the store never makes one that big, and
 *   what is before is skipped (said at debug level), starting at the first whole event after the cut.
 * - Only regular files of the store's owner, 0600: a FIFO, socket, device or directory in place of the log
 *   (or a rotated file, or the reserve) is refused on reading and on appending, naming the path and the
 *   fix; a file of another user is refused as `_fs-trust.ts` refuses its folders; one of ours that is
 *   looser (or tighter, under a umask like 0277) is made 0600 again on its descriptor when opened.
 */
import { constants, type Stats } from "node:fs";
import { join } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import { ServiceError } from "../../core/errors.ts";
import type { AuditEvent } from "../../core/model.ts";
import { printable } from "../_system-errors.ts";
import { type AuditLog, auditEventOf, createEventSelector } from "../audit.ts";
import { type FileOps, syncDir as syncDirectory } from "./_fs-ops.ts";
import { plantedLink, READ_FLAGS, type StoreTrust } from "./_fs-trust.ts";

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
const ROTATED = /^audit-\d{8}T\d{9}(?:\d{3})?Z-[0-9a-f]{8}\.log$/;
/** O_NONBLOCK: a FIFO planted in place of the log fails (ENXIO) instead of blocking the writer. */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
/** Where an event starts: events are written with `at` first (see `auditEventOf`). */
const EVENT_OPEN = '{"at":';
const EVENT_START = /(?=\{"at":)/;
/** Bytes read at a time. */
const CHUNK = 1024 * 1024;
/** Longer than any event the store writes: a "line" past this without an event start is skipped, not held. */
const MAX_PIECE = 1024 * 1024;

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

/**
 * Finds events in a log's text given in pieces of any size, skipping torn and foreign lines: `push` each
 * piece in order, then `end`. Holds at most one unfinished line (a piece past `MAX_PIECE` without an event
 * start is dropped, as it could never be one whole event).
 */
export function createAuditScanner(
  emit: (event: AuditEvent) => void,
  { skipFirst = false, wants }: { skipFirst?: boolean; wants?: (time: number) => boolean } = {},
) {
  let carry = "";
  /** Dropping the text up to the next line or event start: after a cut (the start of a partial read, an overlong piece). */
  let skipping = skipFirst;
  const take = (piece: string) => {
    if (skipping) {
      skipping = false;
      if (!piece.startsWith(EVENT_OPEN)) return;
    }
    if (!piece.startsWith("{")) return;
    if (wants && piece.startsWith(EVENT_OPEN + '"')) {
      // The time, written first: an event the query would drop is not parsed (most of a big log, for --limit).
      const time = Date.parse(piece.slice(EVENT_OPEN.length + 1, piece.indexOf('"', EVENT_OPEN.length + 1)));
      if (Number.isFinite(time) && !wants(time)) return;
    }
    try {
      const event = auditEventOf(JSON.parse(piece));
      if (event) emit(event);
    } catch {
      // a torn or foreign piece: not an event
    }
  };
  return {
    push(text: string): void {
      text = carry + text;
      let from = 0;
      for (let nl = text.indexOf("\n"); nl !== -1; from = nl + 1, nl = text.indexOf("\n", from)) {
        const line = text.slice(from, nl);
        if (line.indexOf(EVENT_OPEN, 1) === -1) take(line); // one event (or none) on the line: the usual case
        else for (const piece of line.split(EVENT_START)) take(piece);
        skipping = false;
      }
      // In the unfinished line, a piece followed by an event start is whole; the last one may go on.
      const pieces = text.slice(from).split(EVENT_START);
      for (let i = 0; i < pieces.length - 1; i++) take(pieces[i]);
      carry = pieces[pieces.length - 1];
      if (carry.length > MAX_PIECE) {
        carry = carry.slice(-(EVENT_OPEN.length - 1)); // an event start cut in two is still found
        skipping = true;
      }
    },
    end(): void {
      const rest = carry;
      carry = "";
      for (const piece of rest.split(EVENT_START)) take(piece);
    },
  };
}

/** The events in a log file's text, skipping torn and foreign lines. */
export function parseAuditText(text: string): AuditEvent[] {
  const events: AuditEvent[] = [];
  const scanner = createAuditScanner((event) => events.push(event));
  scanner.push(text);
  scanner.end();
  return events;
}

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
function notRegular(path: string, stat: Stats): ServiceError {
  return new ServiceError(
    "STORE_UNAVAILABLE",
    printable(`Key store unavailable: ${path} is not a regular file but a ${kindOf(stat)}, which the store never makes: someone else may have planted it. Remove it.`),
  );
}

export interface FsAuditContext {
  /** The store's `audit` directory. */
  dir: string;
  trust: StoreTrust;
  files: FileOps;
  /** fsync before an append counts as done. */
  durable: boolean;
  /** Detail for LOG_LEVEL=debug: a file read only in its last part. */
  debug?: (message: string) => void;
}

/** The audit log of the file store whose `audit` directory is `dir`. */
export function createFsAuditLog({ dir, trust, files, durable, debug }: FsAuditContext, options: FsAuditOptions = {}): AuditLog {
  const { maxBytes = 4 * 1024 * 1024, keep = 4, reserveBytes = 64 * 1024 } = options;
  const maxReadBytes = options.maxReadBytes ?? Math.max(64 * 1024 * 1024, 2 * maxBytes);
  const path = join(dir, LOG);
  const reservePath = join(dir, RESERVE);

  const close = (fd: number) => files.close(fd).catch(() => {});
  const syncDir = () => syncDirectory(files, dir, durable);

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
      const selector = createEventSelector(query);
      const buffer = Buffer.allocUnsafe(CHUNK);
      /** Offers the events of the open file `fd` (of `size` bytes when opened) to the selector, a chunk at a time. */
      const scan = async (fd: number, file: string, size: number) => {
        const start = Math.max(0, size - maxReadBytes);
        if (start > 0) debug?.(`audit: ${file} is ${size} bytes, past the ${maxReadBytes} read of a file: skipped the first ${start} bytes (older events)`);
        const decoder = new TextDecoder();
        const scanner = createAuditScanner((event) => selector.offer(event), { skipFirst: start > 0, wants: selector.wants });
        // To the end, which may have moved on since (appends meanwhile), but never more than the bound.
        for (let at = start; at - start < maxReadBytes + CHUNK;) {
          const read = await files.readAt(fd, buffer, at);
          if (read === 0) break;
          scanner.push(decoder.decode(buffer.subarray(0, read), { stream: true }));
          at += read;
        }
        scanner.push(decoder.decode());
        scanner.end();
      };
      /** Opens a file of the log for reading and checks it; undefined when it is gone. */
      const open = async (file: string) => {
        const fd = await openFile(file, READ_FLAGS);
        if (fd === undefined) return undefined;
        try {
          const stat = await files.fstat(fd);
          await checkFile(fd, file, stat, false);
          return { fd, stat };
        } catch (error) {
          await close(fd);
          throw error;
        }
      };
      // The current log first, held open: if it is rotated while the others are read, it is read once, here.
      const current = await open(path);
      try {
        const names = (await files.readdir(dir, { withFileTypes: true })).map((e) => e.name).filter((n) => ROTATED.test(n)).sort();
        for (const name of names) {
          const file = join(dir, name);
          const rotated = await open(file); // gone: removed by a rotation meanwhile (the oldest go first)
          if (!rotated) continue;
          try {
            if (current && rotated.stat.ino === current.stat.ino && rotated.stat.dev === current.stat.dev) continue;
            await scan(rotated.fd, file, rotated.stat.size);
          } finally {
            await close(rotated.fd);
          }
        }
        if (current) await scan(current.fd, path, current.stat.size);
        return selector.result();
      } finally {
        if (current) await close(current.fd);
      }
    },
  };
}
