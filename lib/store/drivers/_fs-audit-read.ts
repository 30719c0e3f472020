/**
 * Reading a file store's audit trail: from the end back, the current log first and then the rotated files
 * newest first, each in chunks of 64 KiB, offering each event to a selector that keeps only what the query
 * returns. Reading stops as soon as what is older cannot change the answer (`createEventSelector().done`):
 * the latest `limit` events cost about their own bytes, not the trail's; `since` stops at that time; a page
 * `before` an instant skips the files written after it, judged by the rotated files' names (the time each
 * was set aside, after which the next one began). Memory follows the answer, never the log.
 *
 * A file is read in its last `maxReadBytes` at most: the store never makes one that big, and what is before
 * is skipped (said at debug level), starting at the first whole event after the cut.
 */
import type { Stats } from "node:fs";
import { join } from "node:path";
import type { AuditEvent } from "../../core/model.ts";
import { type AuditPage, type AuditPageQuery, type AuditQuery, badCursor, CLOCK_SKEW_MS, createEventSelector, createPageCollector } from "../audit.ts";
import { createBackwardScanner, type ScanTarget } from "./_fs-audit-scan.ts";
import type { FileOps } from "./_fs-ops.ts";

export const ROTATED = /^audit-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(\d{3})(?:\d{3})?Z-[0-9a-f]{8}\.log$/;
/** Bytes read at a time. */
const CHUNK = 64 * 1024;

/** When a rotated file was set aside, from its name (ms since the epoch). */
export function rotatedAt(name: string): number {
  const [, y, mo, d, h, mi, s, ms] = ROTATED.exec(name)!.map(Number);
  return Date.UTC(y, mo - 1, d, h, mi, s, ms);
}

export interface TrailReader {
  /** The store's `audit` directory and the current log in it. */
  dir: string;
  path: string;
  files: FileOps;
  maxReadBytes: number;
  /** Opens a file of the trail for reading and checks it; undefined when it is gone. */
  open(file: string): Promise<{ fd: number; stat: Stats } | undefined>;
  close(fd: number): Promise<void>;
  debug?: (message: string) => void;
}

/** One file read from its end back (see `scanBack`), and what the reads of one answer add up to. */
interface Scan {
  reader: TrailReader;
  buffer: Buffer;
  bytes: number;
  scanned: number;
}

/**
 * Offers the events of the open file `fd` (its first `size` bytes) to `target`, newest first, checking
 * `done` with the latest time of each chunk; true once it says the answer is complete.
 */
async function scanBack(scan: Scan, fd: number, file: string, size: number, target: ScanTarget, done: (latest: number) => boolean): Promise<boolean> {
  const { files, maxReadBytes, debug } = scan.reader;
  scan.scanned++;
  const start = Math.max(0, size - maxReadBytes);
  if (start > 0) debug?.(`audit: ${file} is ${size} bytes, past the ${maxReadBytes} read of a file: skipped the first ${start} bytes (older events)`);
  const scanner = createBackwardScanner(target);
  const complete = () => {
    const { latest } = scanner.state;
    scanner.state.latest = -Infinity;
    return latest !== -Infinity && done(latest);
  };
  for (let at = size; at > start;) {
    const from = Math.max(start, at - CHUNK);
    const read = await files.readAt(fd, scan.buffer.subarray(0, at - from), from);
    if (read === 0) break; // cut short since it was opened
    scan.bytes += read;
    scanner.push(scan.buffer.subarray(0, read), from);
    at = from;
    if (complete()) return true;
  }
  scanner.end(start > 0);
  return complete();
}

/** The rotated files of the trail, newest first. */
const rotatedNames = async ({ files, dir }: TrailReader) =>
  (await files.readdir(dir, { withFileTypes: true })).map((e) => e.name).filter((n) => ROTATED.test(n)).sort().reverse();

/** The events of the trail that `query` asks for, oldest first. */
export async function readTrail(reader: TrailReader, query: AuditQuery): Promise<AuditEvent[]> {
  const { dir, path, open, close, debug } = reader;
  const selector = createEventSelector(query);
  if (selector.done(Infinity)) return []; // limit 0
  const scan: Scan = { reader, buffer: Buffer.allocUnsafe(CHUNK), bytes: 0, scanned: 0 };
  const done = (latest: number) => selector.done(latest);

  // The current log first, held open: if it is rotated while the others are read, it is read once, here.
  const current = await open(path);
  try {
    const names = await rotatedNames(reader);
    // A file's events are no older than the time the file before it was set aside: a page before that skips it.
    const after = (i: number) => (i < names.length ? rotatedAt(names[i]) - CLOCK_SKEW_MS : -Infinity);
    const skipped = (i: number) => query.before !== undefined && after(i) >= query.before;
    let complete = !current || skipped(0) ? false : await scanBack(scan, current.fd, path, current.stat.size, selector, done);
    for (let i = 0; i < names.length && !complete; i++) {
      if (skipped(i + 1)) continue;
      const file = join(dir, names[i]);
      const rotated = await open(file); // gone: removed by a rotation meanwhile (the oldest go first)
      if (!rotated) continue;
      try {
        if (current && rotated.stat.ino === current.stat.ino && rotated.stat.dev === current.stat.dev) continue;
        complete = await scanBack(scan, rotated.fd, file, rotated.stat.size, selector, done);
      } finally {
        await close(rotated.fd);
      }
    }
    debug?.(`audit: read ${scan.bytes} bytes of ${scan.scanned} file(s) for ${JSON.stringify(query)}`);
    return selector.result();
  } finally {
    if (current) await close(current.fd);
  }
}

/** A position in the trail: the file (by inode, which a rotation keeps) and the byte an event starts at. */
const CURSOR = /^(\d{1,20})-(\d{1,15})$/;

/**
 * A page of the trail in the order it was written (`AuditLog.page`), from the cursor's position back
 * through the current log and the rotated files, newest first. A cursor whose file is gone (removed as the
 * oldest by a rotation) leaves nothing before it.
 */
export async function readTrailPage(reader: TrailReader, query: AuditPageQuery): Promise<AuditPage> {
  const { dir, path, open, close } = reader;
  const cursor = query.cursor === undefined ? undefined : CURSOR.exec(query.cursor);
  if (cursor === null) throw badCursor(query.cursor!);
  const collector = createPageCollector(query);
  const scan: Scan = { reader, buffer: Buffer.allocUnsafe(CHUNK), bytes: 0, scanned: 0 };
  const current = await open(path);
  try {
    const names = [path, ...(await rotatedNames(reader)).map((name) => join(dir, name))];
    let found = cursor === undefined;
    for (let i = 0; i < names.length; i++) {
      const file = i === 0 ? current : await open(names[i]);
      if (!file) continue;
      try {
        if (i > 0 && current && file.stat.ino === current.stat.ino && file.stat.dev === current.stat.dev) continue;
        const ino = String(file.stat.ino);
        if (!found && ino !== cursor![1]) continue;
        const size = found ? file.stat.size : Math.min(file.stat.size, Number(cursor![2]));
        found = true;
        const target: ScanTarget = { wants: collector.wants, offer: (event, at) => collector.offer(event, `${ino}-${at}`) };
        if (await scanBack(scan, file.fd, names[i], size, target, collector.done)) break;
      } finally {
        if (i > 0) await close(file.fd);
      }
    }
    return collector.result();
  } finally {
    if (current) await close(current.fd);
  }
}
