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
 */
import { randomUUID } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { join } from "node:path";
import type { AuditEvent } from "../../core/model.ts";
import { type AuditLog, auditEventOf, byTime, selectEvents } from "../audit.ts";
import type { FileOps } from "./_fs-ops.ts";
import { plantedLink, READ_FLAGS, type StoreTrust } from "./_fs-trust.ts";

export interface FsAuditOptions {
  /** Size past which the log is rotated (default 4 MiB). */
  maxBytes?: number;
  /** Rotated files kept; older ones are removed (default 4). */
  keep?: number;
  /** Bytes kept in reserve for appends on a full disk (default 64 KiB). */
  reserveBytes?: number;
}

const LOG = "audit.log";
const RESERVE = "reserve";
const ROTATED = /^audit-\d{8}T\d{9}Z-[0-9a-f]{8}\.log$/;
/** O_NONBLOCK: a FIFO planted in place of the log fails (ENXIO) instead of blocking the writer. */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
/** Where an event starts: events are written with `at` first (see `auditEventOf`). */
const EVENT_START = /(?=\{"at":)/;

const isCode = (error: unknown, ...codes: string[]) => codes.includes((error as { code?: string })?.code ?? "");
const noSpace = (error: unknown) => isCode(error, "ENOSPC", "EDQUOT");

/** `audit-20261122T225943123Z-1a2b3c4d.log`: names sort in the order the files were rotated. */
const rotatedName = () => `audit-${new Date().toISOString().replace(/[-:.]/g, "")}-${randomUUID().slice(0, 8)}.log`;

/** The events in a log file's text, skipping torn and foreign lines. */
export function parseAuditText(text: string): AuditEvent[] {
  const events: AuditEvent[] = [];
  for (const line of text.split("\n")) {
    for (const piece of line.split(EVENT_START)) {
      if (!piece.startsWith("{")) continue;
      try {
        const event = auditEventOf(JSON.parse(piece));
        if (event) events.push(event);
      } catch {
        // a torn or foreign piece: not an event
      }
    }
  }
  return events;
}

export interface FsAuditContext {
  /** The store's `audit` directory. */
  dir: string;
  trust: StoreTrust;
  files: FileOps;
  /** fsync before an append counts as done. */
  durable: boolean;
}

/** The audit log of the file store whose `audit` directory is `dir`. */
export function createFsAuditLog({ dir, trust, files, durable }: FsAuditContext, options: FsAuditOptions = {}): AuditLog {
  const { maxBytes = 4 * 1024 * 1024, keep = 4, reserveBytes = 64 * 1024 } = options;
  const path = join(dir, LOG);
  const reservePath = join(dir, RESERVE);

  const close = (fd: number) => files.close(fd).catch(() => {});
  const syncDir = async () => {
    if (!durable) return;
    const fd = await files.open(dir, constants.O_RDONLY);
    try {
      await files.fsync(fd);
    } finally {
      await close(fd);
    }
  };

  /** Makes the reserve when it is missing; on a full disk, leaves nothing behind and tries again next time. */
  const keepReserve = async () => {
    try {
      if ((await files.lstat(reservePath)).size >= reserveBytes) return;
    } catch (error) {
      if (!isCode(error, "ENOENT")) throw error;
    }
    const tmp = `${reservePath}.${randomUUID()}.tmp`;
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

  /** Opens the log for appending; the store never makes a link or a FIFO there, so one is refused. */
  const openLog = async (): Promise<number> => {
    let fd;
    try {
      fd = await files.open(path, APPEND_FLAGS, 0o600);
    } catch (error) {
      if (isCode(error, "ELOOP")) throw plantedLink(path);
      throw error;
    }
    const stat = await files.fstat(fd).catch(async (error) => {
      await close(fd);
      throw error;
    });
    if (!stat.isFile()) {
      await close(fd);
      throw Object.assign(new Error(`${path} is not a regular file`), { code: "EISDIR", path, syscall: "open" });
    }
    trust.adopt(fd);
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
      // The current log first, held open: if it is rotated while the others are read, it is read once, here.
      let current: { fd: number; stat: Stats } | undefined;
      try {
        const fd = await files.open(path, READ_FLAGS);
        current = { fd, stat: await files.fstat(fd) };
      } catch (error) {
        if (isCode(error, "ELOOP")) throw plantedLink(path);
        if (!isCode(error, "ENOENT")) throw error;
      }
      try {
        const events: AuditEvent[] = [];
        const names = (await files.readdir(dir, { withFileTypes: true })).map((e) => e.name).filter((n) => ROTATED.test(n)).sort();
        for (const name of names) {
          let fd;
          try {
            fd = await files.open(join(dir, name), READ_FLAGS);
          } catch (error) {
            if (isCode(error, "ENOENT")) continue; // removed by a rotation meanwhile: the oldest go first
            if (isCode(error, "ELOOP")) throw plantedLink(join(dir, name));
            throw error;
          }
          try {
            const stat = await files.fstat(fd);
            if (!stat.isFile() || (current && stat.ino === current.stat.ino && stat.dev === current.stat.dev)) continue;
            events.push(...parseAuditText(await files.readFd(fd)));
          } finally {
            await close(fd);
          }
        }
        if (current?.stat.isFile()) events.push(...parseAuditText(await files.readFd(current.fd)));
        return selectEvents(byTime(events), query);
      } finally {
        if (current) await close(current.fd);
      }
    },
  };
}
