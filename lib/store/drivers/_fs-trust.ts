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
 */
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { isServiceError, ServiceError } from "../../core/errors.ts";
import { describeSystemError, printable } from "../_system-errors.ts";
import { actAsOwner } from "./_fs-owner.ts";

const { constants } = fs;
/** Opens a directory itself, never what a symbolic link in its place points at. */
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);
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
  directory(dir: string, create: boolean): boolean;
  /** Makes a file this process just created 0600 whatever the umask. Costs nothing under an ordinary umask. */
  adopt(fd: number): void;
}

/** Errors on the store's own path (or above it) that mean the path cannot be a directory. */
const BAD_PATH = new Set(["ENOTDIR", "ENAMETOOLONG", "ELOOP"]);
/** What the store keeps in its top directory (see store.ts); anything else means it is not only a store. */
const STORE_FOLDERS = new Set(["keys", "names", "secrets", "meta", "grace", "retired", "audit", "order"]);
const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, "0");
const codeOf = (error: unknown) => (error as { code?: string })?.code ?? "";

function refuse(message: string, code: "STORE_UNAVAILABLE" | "USAGE" = "STORE_UNAVAILABLE"): never {
  throw new ServiceError(code, printable(code === "USAGE" ? message : `Key store unavailable: ${message}`));
}

/** Checks the directories of the store at `base` (an absolute path). */
export function createStoreTrust(base: string): StoreTrust {
  let euid = process.geteuid?.() ?? -1; // -1: no Unix users (Windows), nothing to compare
  const trusted = new Set<string>();
  let masksOwner = false; // a umask such as 0277 that would leave new files 0400
  try {
    masksOwner = (process.umask() & 0o600) !== 0;
  } catch {
    // a runtime without umask: files keep the mode open() gave them
  }
  let owner = -1;

  /**
   * Opens `path` as a directory and checks it; false when it is missing. Below the store's directory a
   * symbolic link is never followed; the store's directory itself may be one the user chose
   * (--store /srv/keys -> /data/keys).
   */
  const openChecked = (path: string): boolean => {
    const isBase = path === base;
    let fd;
    try {
      fd = fs.openSync(path, isBase ? constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) : DIR_FLAGS);
    } catch (error) {
      const code = codeOf(error);
      if (code === "ENOENT") return false;
      if (isBase && code === "EACCES") {
        const stat = fs.statSync(path, { throwIfNoEntry: false });
        if (stat && euid !== -1 && stat.uid !== euid) notYours(path, stat.uid);
      }
      if (isBase && code === "ENOTDIR") refuse(`Store path ${path} is not a directory. Choose a directory for --store.`, "USAGE");
      if (!isBase && (code === "ELOOP" || code === "ENOTDIR")) {
        refuse(`${path} is not a directory but a symbolic link or file the store never makes: someone else may have planted it. Remove it.`);
      }
      throw error;
    }
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isDirectory()) refuse(`Store path ${path} is not a directory. Choose a directory for --store.`, "USAGE");
      check(path, fd, stat);
      return true;
    } finally {
      fs.closeSync(fd);
    }
  };

  const notYours = (path: string, uid: number): never =>
    refuse(`${path} belongs to uid ${uid}, not to you (uid ${euid}). Run the command as the store's owner, or use a store of your own (--store).`);

  /**
   * Refuses to tighten a directory that is not only a store: `--store /etc` or `--store /dev/shm` as
   * root must not make a system directory private. A directory shared on purpose (sticky, like /tmp)
   * is never one; one that is empty or holds only store folders is tightened.
   */
  const notAStore = (path: string, mode: number) => {
    const fix = `Use a directory of its own for --store, or make this one private: chmod 700 ${path}`;
    if (mode & 0o1000) refuse(`${path} is a shared directory (mode ${octal(mode)}, sticky), so it is left as it is. ${fix}`);
    const foreign = fs.readdirSync(path).filter((name) => !STORE_FOLDERS.has(name) && !name.endsWith(".tmp"));
    if (foreign.length === 0) return;
    const shown = foreign.slice(0, 3).map((name) => JSON.stringify(name)).join(", ");
    refuse(`${path} is open to other users (mode ${octal(mode)}) and holds files that are not a key store's (${shown}${foreign.length > 3 ? ", ..." : ""}), so it is left as it is. ${fix}`);
  };

  /** Checks entries that others could have planted while `dir` was open to them. */
  const checkEntries = (dir: string) => {
    for (const name of fs.readdirSync(dir)) {
      const path = join(dir, name);
      const stat = fs.lstatSync(path, { throwIfNoEntry: false });
      if (!stat) continue;
      if (stat.isSymbolicLink()) throw plantedLink(path);
      // By path, but as the owner (see _fs-owner.ts): a folder swapped meanwhile lends no rights.
      if (stat.uid !== owner) refuse(`${path} belongs to uid ${stat.uid}, not to the store's owner (uid ${owner}), and its directory was open to other users: it may be planted. Remove it, or start a new store.`);
    }
  };

  /** Checks one directory, tightening or adopting it when it is ours. */
  const check = (path: string, fd: number, stat: fs.Stats) => {
    if (euid === -1) return;
    if (path === base) {
      owner = stat.uid;
      if (euid === 0 && owner !== 0) euid = actAsOwner(path, owner, stat.gid);
      else if (euid !== owner) notYours(path, owner);
    }
    if (stat.uid !== owner) {
      // Root-owned leftovers of an older version's root runs included: as the owner, they cannot be repaired.
      refuse(`${path} belongs to uid ${stat.uid}, not to the store's owner (uid ${owner}): someone else may have planted it. Remove it, or if it is yours: chown -R ${owner} ${base}`);
    }
    const mode = stat.mode & 0o777;
    if (mode !== 0o700) {
      if (path === base && mode & 0o077) notAStore(path, stat.mode);
      try {
        fs.fchmodSync(fd, 0o700);
      } catch (error) {
        // Only missing owner bits (made under a umask like 0277) on a read-only disk: reading still works.
        if (mode & 0o077) {
          refuse(`${path} is open to other users (mode ${octal(mode)}) and cannot be made private (${codeOf(error) || error}). Fix: chmod 700 ${path}`);
        }
      }
      if (mode & 0o022) {
        try {
          checkEntries(path);
        } catch (error) {
          fs.fchmodSync(fd, mode); // left as found, so every later run refuses too until someone looks
          throw error;
        }
      }
    }
  };

  /** Creates `path` (one level, its parent existing) private whatever the umask; false if it was there. */
  const make = (path: string): boolean => {
    try {
      fs.mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      if (codeOf(error) === "EEXIST") return false;
      throw error;
    }
    return true;
  };

  /** Creates the store's directory and its missing parents, one level at a time (bounded by the path). */
  const makeBase = () => {
    const missing: string[] = [];
    try {
      for (let dir = base; !fs.lstatSync(dir, { throwIfNoEntry: false }); dir = dirname(dir)) {
        missing.unshift(dir);
        if (dirname(dir) === dir) break;
      }
    } catch (error) {
      if (codeOf(error) === "ENOTDIR") refuse(`Store path ${base} is not a directory. Choose a directory for --store.`, "USAGE");
      throw error;
    }
    for (const dir of missing) {
      if (make(dir) && dir !== base) fs.chmodSync(dir, 0o700); // the umask may have left it unusable (0277)
    }
  };

  const directory = (dir: string, create: boolean): boolean => {
    try {
      return trust(dir, create);
    } catch (error) {
      if (isServiceError(error)) throw error;
      const reason = describeSystemError(error);
      // A --store that cannot name a directory at all is bad usage (exit 2), not an unavailable store.
      const { path } = error as { path?: string };
      const bad = BAD_PATH.has(codeOf(error)) && typeof path === "string" && !path.startsWith(`${base}/`);
      if (reason) refuse(bad ? `Invalid --store: ${reason}` : reason, bad ? "USAGE" : "STORE_UNAVAILABLE");
      throw error;
    }
  };

  const trust = (dir: string, create: boolean): boolean => {
    if (trusted.has(dir)) return true;
    if (dir !== base) {
      if (!trust(dirname(dir), create)) return false;
      if (create) make(dir);
    } else if (create && !fs.existsSync(base)) {
      makeBase();
    }
    if (!openChecked(dir)) return false;
    trusted.add(dir);
    return true;
  };

  return {
    directory,
    adopt(fd) {
      if (masksOwner) fs.fchmodSync(fd, 0o600);
    },
  };
}

/** The error for an entry that is a symbolic link: the store never makes one, so someone planted it. */
export function plantedLink(path: string): ServiceError {
  return new ServiceError(
    "STORE_UNAVAILABLE",
    printable(`Key store unavailable: ${path} is a symbolic link, which the store never makes: someone else may have planted it. Remove it.`),
  );
}
