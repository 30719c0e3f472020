/**
 * Which directories of a file store the driver may trust, checked once per directory per process.
 *
 * The store belongs to the owner of its top directory. Every directory under it must be that owner's,
 * mode 0700 and not a symbolic link. What is ours and too loose is tightened; what belongs to someone
 * else is refused with a message naming the path and the fix. Root acting on another user's store (an
 * operator running the CLI on a service's store) becomes that user for all store I/O first
 * (`_fs-owner.ts`), so what it creates is the owner's and nothing is chowned; any other user acting on
 * a store it does not own is refused.
 *
 * A directory found writable by others may already hold entries they planted, so when one is tightened
 * its entries are checked too. Once every level is the owner's and 0700 nobody else can add entries, so
 * the per-request reads need no check beyond O_NOFOLLOW (which the driver passes) and this cache.
 *
 * This file walks the levels, creates the missing ones and keeps the cache; `_fs-trust-dir.ts` checks
 * one directory (owner, mode, planted entries).
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import type { FileOps } from "./_fs-ops.ts";
import { isServiceError } from "../../core/errors.ts";
import { describeSystemError } from "../_system-errors.ts";
import { codeOf, notADirectory, openChecked, refuse, type TrustContext } from "./_fs-trust-dir.ts";

const { constants } = fs;
/**
 * Flags for reading an entry: a planted symbolic link fails with ELOOP instead of being followed, and
 * (O_NONBLOCK) a FIFO in its place reads as empty instead of blocking forever.
 */
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

export interface StoreTrust {
  /**
   * Makes sure `dir` (the store's directory or one under it) exists when `create` is set, and that it
   * and every level between it and the store's directory can be trusted. False when it is missing.
   */
  directory(dir: string, create: boolean): Promise<boolean>;
  /** Makes a file this process just created 0600 whatever the umask. Costs nothing under an ordinary umask. */
  adopt(fd: number): Promise<void>;
}

/** Errors on the store's own path (or above it) that mean the path cannot be a directory. */
const BAD_PATH = new Set(["ENOTDIR", "ENAMETOOLONG", "ELOOP"]);

/**
 * Checks the directories of the store at `base` (an absolute path) through `files`: on the thread pool
 * for a server, which never touches a file on its event loop; on the calling thread for the CLI.
 */
export function createStoreTrust(base: string, files: FileOps): StoreTrust {
  const ctx: TrustContext = { base, euid: process.geteuid?.() ?? -1, owner: -1 };
  const trusted = new Set<string>();
  // One check of a directory at a time: the store's own learns its owner (and may switch to that user).
  const checking = new Map<string, Promise<boolean>>();
  const masksOwner = umaskMasksOwner();

  /** Trusts `dir` after every level above it, creating the missing ones when asked; false when one is missing. */
  const trust = async (dir: string, create: boolean): Promise<boolean> => {
    if (dir !== base) {
      if (!(await directory(dirname(dir), create))) return false;
      if (create) await makePrivateDir(files, dir);
    } else if (create && !(await files.stat(base).catch(() => undefined))) {
      await makeBase(files, base);
    }
    if (!(await openChecked(ctx, dir, files))) return false;
    trusted.add(dir);
    return true;
  };
  const directory = async (dir: string, create: boolean): Promise<boolean> => {
    if (trusted.has(dir)) return true;
    let check = checking.get(dir);
    if (!check) {
      checking.set(dir, check = trust(dir, create).finally(() => checking.delete(dir)));
    } else if (create && !(await check)) {
      return directory(dir, create); // the check under way would not create it
    }
    return check;
  };

  return {
    async directory(dir, create) {
      try {
        return await directory(dir, create);
      } catch (error) {
        throwAsStoreError(error, base);
      }
    },
    async adopt(fd) {
      if (masksOwner) await files.fchmod(fd, 0o600);
    },
  };
}

/** Whether the umask (such as 0277) would leave new files without owner bits, 0400 or less. */
function umaskMasksOwner(): boolean {
  try {
    return (process.umask() & 0o600) !== 0;
  } catch {
    return false; // a runtime without umask: files keep the mode open() gave them
  }
}

/**
 * Throws `error` as the user should see it: the store's own refusals as they are, a system error as one
 * line. A --store that cannot name a directory at all is bad usage (exit 2), not an unavailable store;
 * anything unexplained goes on unchanged.
 */
function throwAsStoreError(error: unknown, base: string): never {
  if (isServiceError(error)) throw error;
  const reason = describeSystemError(error);
  const { path } = error as { path?: string };
  const bad = BAD_PATH.has(codeOf(error)) && typeof path === "string" && !path.startsWith(`${base}/`);
  if (reason) refuse(bad ? `Invalid --store: ${reason}` : reason, bad ? "USAGE" : "STORE_UNAVAILABLE");
  throw error;
}

/** Creates `path` (one level, its parent existing) private whatever the umask; false if it was there. */
async function makePrivateDir(files: FileOps, path: string): Promise<boolean> {
  try {
    await files.mkdir(path, 0o700);
  } catch (error) {
    if (codeOf(error) === "EEXIST") return false;
    throw error;
  }
  return true;
}

/** Creates the store's directory `base` and its missing parents, one level at a time (bounded by the path). */
async function makeBase(files: FileOps, base: string): Promise<void> {
  const missing: string[] = [];
  const lstat = (dir: string) =>
    files.lstat(dir).catch((error) => {
      if (codeOf(error) === "ENOENT") return undefined;
      if (codeOf(error) === "ENOTDIR") notADirectory(base);
      throw error;
    });
  for (let dir = base; !(await lstat(dir)); dir = dirname(dir)) {
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    if ((await makePrivateDir(files, dir)) && dir !== base) await files.chmod(dir, 0o700); // the umask may have left it unusable (0277)
  }
}
