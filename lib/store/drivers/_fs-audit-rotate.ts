/**
 * Rotating the audit log, lock-free: once the log passes its size, the writer that saw it renames it to
 * `audit-<time>-<random>.log` (a unique name, so concurrent rotations never overwrite each other's), makes
 * the next log, and removes the oldest rotated files beyond `keep`.
 */
import type { Stats } from "node:fs";
import { join } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import { CREATE_FLAGS } from "./_fs-audit-files.ts";
import { ROTATED } from "./_fs-audit-read.ts";
import type { FileOps } from "./_fs-ops.ts";

export interface LogRotation {
  /** The store's `audit` directory and the current log in it. */
  dir: string;
  path: string;
  /** Rotated files kept. */
  keep: number;
  files: FileOps;
  close(fd: number): Promise<void>;
  /** fsyncs `dir` (when the store is durable). */
  syncDir(): Promise<void>;
}

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
 * Renames the log the line went into (`appended`) aside, if it is still the current one; then makes the
 * next one and removes the oldest rotated files beyond `keep`. Best effort: the event is already safe, and
 * a later append rotates if this one could not.
 */
export async function rotateLog({ dir, path, keep, files, close, syncDir }: LogRotation, appended: Stats): Promise<void> {
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
}
