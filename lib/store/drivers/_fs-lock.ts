/**
 * The fs driver's per-entry lock, which the atomic index's read-then-change operations (swap, swapIf,
 * take, takeIf, exclusive) hold: a lock file beside the entry, claimed with link(2), which the file
 * system performs atomically even between processes.
 */
import { isCode } from "../../core/_error-code.ts";
import { isAlive } from "./_fs-ops.ts";
import { type FsContext, type FsFiles, TMP } from "./_fs-files.ts";

/** Takes the lock beside `path`, waiting while another holds it; resolves with its release. */
export type FsLock = (path: string) => Promise<() => Promise<void>>;

export interface FsLockOptions {
  files: FsContext["files"];
  io: Pick<FsFiles, "read" | "writeTemp" | "removeFile">;
}

/**
 * A short-lived lock beside `path`: a file holding the owner's pid, claimed with link(2). A lock whose
 * owner is gone (killed mid-swap) or that is held implausibly long is broken, so a crash never blocks.
 */
export function createFsLock({ files, io: { read, writeTemp, removeFile } }: FsLockOptions): FsLock {
  return async (path) => {
    const lockPath = `${path}.lock${TMP}`;
    let mine: string;
    try {
      mine = await writeTemp(path, String(process.pid));
    } catch (error) {
      // A full disk: no room for the pid file, nor reliably for any new directory entry (ext4 refuses even
      // link(2) there). Deletes must still work, so go on unlocked: nothing that needs the lock and writes
      // can succeed now anyway, and take/takeIf stay safe against each other (see `unlinkOwn`).
      if (isCode(error, "ENOSPC", "EDQUOT")) return async () => {};
      throw error;
    }
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await files.link(mine, lockPath);
          return () => removeFile(lockPath);
        } catch (error) {
          if (!isCode(error, "EEXIST")) throw error;
        }
        const owner = Number(await read(lockPath));
        if (attempt >= 400 || (owner > 0 && !isAlive(owner))) {
          const stale = `${lockPath}.${crypto.randomUUID()}${TMP}`;
          // ENOENT: someone else broke it first. Anything else would make this loop spin: give up.
          await files.rename(lockPath, stale).then(() => removeFile(stale), (error) => {
            if (!isCode(error, "ENOENT")) throw error;
          });
          continue;
        }
        await new Promise((done) => setTimeout(done, 1 + Math.random() * 4));
      }
    } finally {
      await removeFile(mine);
    }
  };
}
