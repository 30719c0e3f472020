/**
 * What a file store's directory is before anything opens it: there (whose, which mode), or missing and
 * then whether this user could create it. Read-only: nothing here creates, tightens or adopts anything
 * (the driver's `_fs-trust.ts` does that when the store is used). For `doctor` and for listing a store
 * that does not exist, which is no error only where a create would be allowed.
 */
import * as fs from "node:fs";
import { dirname } from "node:path";
import { printable } from "../_system-errors.ts";
import { createStoreTrust } from "./_fs-trust.ts";

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
  try {
    fs.accessSync(above, fs.constants.W_OK | fs.constants.X_OK);
    return { exists: false, creatable: true, why: printable(`${user} may create it in ${above}`) };
  } catch (error) {
    return { exists: false, creatable: false, why: printable(`${user} may not create it in ${above} (${(error as { code?: string })?.code ?? error})`) };
  }
}

/** Creates the store's directory (and missing parents) as this user, mode 0700, and checks it like the driver does. */
export function createStoreDir(dir: string): void {
  createStoreTrust(dir).directory(dir, true);
}
