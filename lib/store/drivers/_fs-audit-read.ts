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
import { type AuditQuery, CLOCK_SKEW_MS, createEventSelector } from "../audit.ts";
import { createBackwardScanner } from "./_fs-audit-scan.ts";
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

/** The events of the trail that `query` asks for, oldest first. */
export async function readTrail(reader: TrailReader, query: AuditQuery): Promise<AuditEvent[]> {
  const { dir, path, files, maxReadBytes, open, close, debug } = reader;
  const selector = createEventSelector(query);
  if (selector.done(Infinity)) return []; // limit 0
  const buffer = Buffer.allocUnsafe(CHUNK);
  let bytes = 0;
  let scanned = 0;

  /** Offers the events of the open file `fd` (its first `size` bytes), newest first; true once the answer is complete. */
  const scan = async (fd: number, file: string, size: number): Promise<boolean> => {
    scanned++;
    const start = Math.max(0, size - maxReadBytes);
    if (start > 0) debug?.(`audit: ${file} is ${size} bytes, past the ${maxReadBytes} read of a file: skipped the first ${start} bytes (older events)`);
    const scanner = createBackwardScanner(selector);
    const complete = () => {
      const { latest } = scanner.state;
      scanner.state.latest = -Infinity;
      return latest !== -Infinity && selector.done(latest);
    };
    for (let at = size; at > start;) {
      const from = Math.max(start, at - CHUNK);
      const read = await files.readAt(fd, buffer.subarray(0, at - from), from);
      if (read === 0) break; // cut short since it was opened
      bytes += read;
      scanner.push(buffer.subarray(0, read));
      at = from;
      if (complete()) return true;
    }
    scanner.end(start > 0);
    return complete();
  };

  // The current log first, held open: if it is rotated while the others are read, it is read once, here.
  const current = await open(path);
  try {
    const names = (await files.readdir(dir, { withFileTypes: true })).map((e) => e.name).filter((n) => ROTATED.test(n)).sort().reverse();
    // A file's events are no older than the time the file before it was set aside: a page before that skips it.
    const after = (i: number) => (i < names.length ? rotatedAt(names[i]) - CLOCK_SKEW_MS : -Infinity);
    const skipped = (i: number) => query.before !== undefined && after(i) >= query.before;
    let complete = !current || skipped(0) ? false : await scan(current.fd, path, current.stat.size);
    for (let i = 0; i < names.length && !complete; i++) {
      if (skipped(i + 1)) continue;
      const file = join(dir, names[i]);
      const rotated = await open(file); // gone: removed by a rotation meanwhile (the oldest go first)
      if (!rotated) continue;
      try {
        if (current && rotated.stat.ino === current.stat.ino && rotated.stat.dev === current.stat.dev) continue;
        complete = await scan(rotated.fd, file, rotated.stat.size);
      } finally {
        await close(rotated.fd);
      }
    }
    debug?.(`audit: read ${bytes} bytes of ${scanned} file(s) for ${JSON.stringify(query)}`);
    return selector.result();
  } finally {
    if (current) await close(current.fd);
  }
}
