/**
 * One directory of a file store, checked before the driver trusts it (`_fs-trust.ts` walks the levels
 * and keeps the cache): opened without following a symbolic link, owned by the store's owner, and made
 * private (0700) when it is ours and looser.
 *
 * The store's owner is the owner of its top directory, learned when that one is checked: root on
 * another user's store becomes that user first (`_fs-owner.ts`), anyone else on a store not theirs is
 * refused. A directory found writable by others may already hold entries they planted, so when one is
 * tightened its entries are checked too, and it is left as found if one fails.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { ServiceError } from "../../core/errors.ts";
import { printable } from "../_system-errors.ts";
import { actAsOwner } from "./_fs-owner.ts";
import type { FileOps } from "./_fs-ops.ts";

const { constants } = fs;
/** Opens a directory itself, never what a symbolic link in its place points at. */
const DIR_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0);
/** Opens the store's top directory, which may be a symbolic link the user chose (--store /srv/keys -> /data/keys). */
const BASE_FLAGS = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0);
/** What the store keeps in its top directory (see store.ts); anything else means it is not only a store. */
const STORE_FOLDERS = new Set(["keys", "names", "secrets", "meta", "grace", "retired", "audit", "order"]);
const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, "0");

/** Who checks the store at `base`; `euid` and `owner` are filled in when `base` itself is checked. */
export interface TrustContext {
  /** The store's top directory, an absolute path. */
  readonly base: string;
  /** This process's effective uid (-1: no Unix users, as on Windows, nothing to compare); the owner's once it acts as them. */
  euid: number;
  /** The uid owning `base`, which every level must share; -1 until `base` is checked. */
  owner: number;
}

/** The error code of a system error, or "" for anything else. */
export const codeOf = (error: unknown): string => (error as { code?: string })?.code ?? "";

/** Throws the store's refusal: an unavailable store, or (USAGE) a --store that cannot work. */
export function refuse(message: string, code: "STORE_UNAVAILABLE" | "USAGE" = "STORE_UNAVAILABLE"): never {
  throw new ServiceError(code, printable(code === "USAGE" ? message : `Key store unavailable: ${message}`));
}

/** The error for an entry that is a symbolic link: the store never makes one, so someone planted it. */
export function plantedLink(path: string): ServiceError {
  return new ServiceError(
    "STORE_UNAVAILABLE",
    printable(`Key store unavailable: ${path} is a symbolic link, which the store never makes: someone else may have planted it. Remove it.`),
  );
}

/** Refuses a store path that names something other than a directory: bad usage, not an unavailable store. */
export const notADirectory = (path: string): never =>
  refuse(`Store path ${path} is not a directory. Choose a directory for --store.`, "USAGE");

const notYours = (ctx: TrustContext, path: string, uid: number): never =>
  refuse(`${path} belongs to uid ${uid}, not to you (uid ${ctx.euid}). Run the command as the store's owner, or use a store of your own (--store).`);

/**
 * Opens `path` as a directory and checks it, through `files` (a server's thread pool); false when it is
 * missing. Below the store's directory a symbolic link is never followed; the store's directory itself
 * may be one the user chose.
 */
export async function openChecked(ctx: TrustContext, path: string, files: FileOps): Promise<boolean> {
  const isBase = path === ctx.base;
  let fd;
  try {
    fd = await files.open(path, isBase ? BASE_FLAGS : DIR_FLAGS);
  } catch (error) {
    const code = codeOf(error);
    if (code === "ENOENT") return false;
    if (isBase && code === "EACCES") {
      const stat = await files.stat(path).catch(() => undefined);
      if (stat && ctx.euid !== -1 && stat.uid !== ctx.euid) notYours(ctx, path, stat.uid);
    }
    if (isBase && code === "ENOTDIR") notADirectory(path);
    if (!isBase && (code === "ELOOP" || code === "ENOTDIR")) {
      refuse(`${path} is not a directory but a symbolic link or file the store never makes: someone else may have planted it. Remove it.`);
    }
    throw error;
  }
  try {
    const stat = await files.fstat(fd);
    if (!stat.isDirectory()) notADirectory(path);
    if (ctx.euid === -1) return true;
    claimOwner(ctx, path, stat);
    await makePrivate(ctx, path, fd, stat, files);
    return true;
  } finally {
    await files.close(fd);
  }
}

/**
 * Makes sure the directory at `path` is the store owner's. At the store's directory this learns who the
 * owner is and, for root on another user's store, becomes that user for the rest of the process.
 */
function claimOwner(ctx: TrustContext, path: string, stat: fs.Stats): void {
  if (path === ctx.base) {
    ctx.owner = stat.uid;
    if (ctx.euid === 0 && ctx.owner !== 0) ctx.euid = actAsOwner(path, ctx.owner, stat.gid);
    else if (ctx.euid !== ctx.owner) notYours(ctx, path, ctx.owner);
  }
  if (stat.uid !== ctx.owner) {
    // Root-owned leftovers of an older version's root runs included: as the owner, they cannot be repaired.
    refuse(`${path} belongs to uid ${stat.uid}, not to the store's owner (uid ${ctx.owner}): someone else may have planted it. Remove it, or if it is yours: chown -R ${ctx.owner} ${ctx.base}`);
  }
}

/**
 * Tightens an owner's directory that is not 0700 (open to others, or missing owner bits from a umask
 * like 0277); one that was writable by others must also hold nothing planted, or it is left as found.
 */
async function makePrivate(ctx: TrustContext, path: string, fd: number, stat: fs.Stats, files: FileOps): Promise<void> {
  const mode = stat.mode & 0o777;
  if (mode === 0o700) return;
  if (path === ctx.base && mode & 0o077) await refuseUnlessOnlyStore(path, stat.mode, files);
  try {
    await files.fchmod(fd, 0o700);
  } catch (error) {
    // Only missing owner bits (made under a umask like 0277) on a read-only disk: reading still works.
    if (mode & 0o077) {
      refuse(`${path} is open to other users (mode ${octal(mode)}) and cannot be made private (${codeOf(error) || error}). Fix: chmod 700 ${path}`);
    }
  }
  if (mode & 0o022) {
    try {
      await checkEntries(ctx, path, files);
    } catch (error) {
      await files.fchmod(fd, mode); // left as found, so every later run refuses too until someone looks
      throw error;
    }
  }
}

/**
 * Refuses to tighten a directory that is not only a store: `--store /etc` or `--store /dev/shm` as
 * root must not make a system directory private. A directory shared on purpose (sticky, like /tmp)
 * is never one; one that is empty or holds only store folders is tightened.
 */
async function refuseUnlessOnlyStore(path: string, mode: number, files: FileOps): Promise<void> {
  const fix = `Use a directory of its own for --store, or make this one private: chmod 700 ${path}`;
  if (mode & 0o1000) refuse(`${path} is a shared directory (mode ${octal(mode)}, sticky), so it is left as it is. ${fix}`);
  const foreign = (await files.readdir(path, { withFileTypes: true })).map((entry) => entry.name)
    .filter((name) => !STORE_FOLDERS.has(name) && !name.endsWith(".tmp"));
  if (foreign.length === 0) return;
  const shown = foreign.slice(0, 3).map((name) => JSON.stringify(name)).join(", ");
  refuse(`${path} is open to other users (mode ${octal(mode)}) and holds files that are not a key store's (${shown}${foreign.length > 3 ? ", ..." : ""}), so it is left as it is. ${fix}`);
}

/** Checks entries that others could have planted while `dir` was open to them. */
async function checkEntries(ctx: TrustContext, dir: string, files: FileOps): Promise<void> {
  for (const { name } of await files.readdir(dir, { withFileTypes: true })) {
    const path = join(dir, name);
    const stat = await files.lstat(path).catch((error) => {
      if (codeOf(error) === "ENOENT") return undefined;
      throw error;
    });
    if (!stat) continue;
    if (stat.isSymbolicLink()) throw plantedLink(path);
    // By path, but as the owner (see _fs-owner.ts): a folder swapped meanwhile lends no rights.
    if (stat.uid !== ctx.owner) refuse(`${path} belongs to uid ${stat.uid}, not to the store's owner (uid ${ctx.owner}), and its directory was open to other users: it may be planted. Remove it, or start a new store.`);
  }
}
