/**
 * What a file store's directory is before anything opens it: there (whose, which mode), or missing and
 * then whether this user could create it. Read-only: nothing here creates, tightens or adopts anything
 * (the driver's `_fs-trust.ts` does that when the store is used). For `doctor` and for listing a store
 * that does not exist, which is no error only where a create would be allowed; and which of its folders
 * the driver would tighten (`looseFolders`), for `doctor` to report without changing them.
 */
import * as fs from "node:fs";
import { dirname, join } from "node:path";
import { printable } from "../_system-errors.ts";
import { createStoreTrust } from "./_fs-trust.ts";
import { blockingOps } from "./_fs-ops.ts";

export type FsPresence =
  | { exists: true; uid: number; gid: number; mode: number }
  | { exists: false; creatable: boolean; why: string };

/** The directory `dir`, or the nearest existing one above it and whether this user may create entries there. */
export function fsPresence(dir: string): FsPresence {
  const stat = fs.statSync(dir, { throwIfNoEntry: false });
  if (stat?.isDirectory()) return { exists: true, uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777 };
  if (stat) return { exists: false, creatable: false, why: printable(`${dir} is not a directory`) };
  let above = dirname(dir);
  for (let found = fs.statSync(above, { throwIfNoEntry: false }); !found; found = fs.statSync(above, { throwIfNoEntry: false })) {
    if (dirname(above) === above) break;
    above = dirname(above);
  }
  if (!fs.statSync(above, { throwIfNoEntry: false })?.isDirectory()) {
    return { exists: false, creatable: false, why: printable(`${above} is not a directory`) };
  }
  const user = `uid ${process.geteuid?.() ?? "?"}`;
  // Root passes every access check, also on the kernel's own file systems, where no directory can be made.
  const kernel = kernelFileSystem(above);
  if (kernel) return { exists: false, creatable: false, why: printable(`${above} is on ${kernel}, where no directory can be made: choose another --store`) };
  try {
    fs.accessSync(above, fs.constants.W_OK | fs.constants.X_OK);
    return { exists: false, creatable: true, why: printable(`${user} may create it in ${above}`) };
  } catch (error) {
    return { exists: false, creatable: false, why: printable(`${user} may not create it in ${above} (${(error as { code?: string })?.code ?? error})`) };
  }
}

/** statfs(2) types of the kernel's file systems that hold no files of anyone's (see statfs(2)). */
const KERNEL_FILE_SYSTEMS: Record<number, string> = {
  0x9fa0: "the kernel's process file system (proc)",
  0x62656572: "the kernel's sysfs",
  0x63677270: "the kernel's cgroup file system",
  0x27e0eb: "the kernel's cgroup file system",
  0x1cd1: "the kernel's devpts",
};

/** Which of the kernel's file systems `dir` is on, or undefined (also where statfs is unavailable). */
function kernelFileSystem(dir: string): string | undefined {
  try {
    return KERNEL_FILE_SYSTEMS[Number(fs.statfsSync(dir).type)];
  } catch {
    return undefined;
  }
}

/** A folder of a file store that the driver would not trust as it is (see `_fs-trust.ts`). */
export interface LooseFolder {
  path: string;
  uid: number;
  /** The permission bits, 0o777 at most. */
  mode: number;
  /** `open`: readable or writable by others (the driver makes such a folder of the owner's private); `owner`: another user's. */
  why: "open" | "owner";
}

/**
 * The folders of the existing store at `dir` (itself and the folders in it: the store has no deeper
 * ones) that are open to other users or belong to another user than the store's owner, the owner of
 * `dir`. Read-only: stat, lstat and one readdir; a folder this user cannot read is reported as far as
 * it can be. The driver makes the open ones private when it opens the store (`_fs-trust.ts`); `doctor`
 * reports them instead and leaves them as they are.
 */
export function looseFolders(dir: string): LooseFolder[] {
  const top = fs.statSync(dir, { throwIfNoEntry: false }); // the top may be a link the user chose
  if (!top?.isDirectory()) return [];
  const found: LooseFolder[] = [];
  const look = (path: string, stat: fs.Stats) => {
    const mode = stat.mode & 0o777;
    if (stat.uid !== top.uid) found.push({ path, uid: stat.uid, mode, why: "owner" });
    else if (mode & 0o077) found.push({ path, uid: stat.uid, mode, why: "open" });
  };
  look(dir, top);
  let names: fs.Dirent[] = [];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return found; // not readable by this user: the owner check says whose it is
  }
  for (const entry of names) {
    if (!entry.isDirectory()) continue;
    const stat = fs.lstatSync(join(dir, entry.name), { throwIfNoEntry: false });
    if (stat?.isDirectory()) look(join(dir, entry.name), stat);
  }
  return found;
}

/** Creates the store's directory (and missing parents) as this user, mode 0700, and checks it like the driver does. */
export async function createStoreDir(dir: string): Promise<void> {
  await createStoreTrust(dir, blockingOps).directory(dir, true);
}
