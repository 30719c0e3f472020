/**
 * The fs driver's listings of store folders. Temporary files and lock files (both end in `.tmp`) are
 * not keys and are skipped by all of them.
 * - `scanDirectory` (the atomic index's `scan`): the entries of one store folder, a chunk at a time, read
 *   with opendir(3) as the caller goes, so listing 100,000 keys never holds all their names; folders
 *   are skipped.
 * - `hasEntries` (`hasAny`): whether a folder holds anything, reading no further than its first entry.
 * - `walkKeys` (`getKeys`): every key under a folder, folders walked recursively.
 */
import type * as fs from "node:fs";
import { join } from "node:path";
import { isCode } from "../../core/_error-code.ts";
import { TMP } from "./_fs-files.ts";

/** What a listing needs of the driver. */
export interface ListOptions {
  /** Refuses a folder the store cannot trust (see _fs-trust.ts); false when it does not exist. */
  trust: { directory(path: string, create: boolean): Promise<boolean> };
  files: { opendir(path: string): Promise<fs.Dir>; readdir(path: string, options: { withFileTypes: true }): Promise<fs.Dirent[]> };
}

export interface ScanOptions {
  trust: ListOptions["trust"];
  files: Pick<ListOptions["files"], "opendir">;
  /** The folder, and the storage prefix its entries' keys get. */
  path: string;
  prefix: string;
  size: number;
}

/** Opens `path` for reading its entries; undefined when it is missing (or not a folder). */
async function openFolder({ trust, files }: Pick<ScanOptions, "trust" | "files">, path: string): Promise<fs.Dir | undefined> {
  try {
    if (!(await trust.directory(path, false))) return undefined;
    return await files.opendir(path);
  } catch (error) {
    if (isCode(error, "ENOENT", "ENOTDIR")) return undefined;
    throw error;
  }
}

export async function* scanDirectory({ trust, files, path, prefix, size }: ScanOptions): AsyncGenerator<string[]> {
  const dir = await openFolder({ trust, files }, path);
  if (!dir) return;
  try {
    const chunk: string[] = [];
    for await (const entry of dir) {
      if (entry.name.endsWith(TMP) || entry.isDirectory()) continue;
      chunk.push(`${prefix}:${entry.name}`);
      if (chunk.length >= size) yield chunk.splice(0);
    }
    if (chunk.length) yield chunk;
  } finally {
    await dir.close().catch(() => {});
  }
}

/** True when the folder at `path` holds at least one entry that is not a temporary file. */
export async function hasEntries(options: Pick<ScanOptions, "trust" | "files">, path: string): Promise<boolean> {
  const dir = await openFolder(options, path);
  if (!dir) return false;
  try {
    for await (const entry of dir) if (!entry.name.endsWith(TMP)) return true;
    return false;
  } finally {
    await dir.close().catch(() => {});
  }
}

/** Adds to `out` the key of every file under `dir`, each `prefix:` and its path below `dir` joined by `:`. */
export async function walkKeys(options: ListOptions, dir: string, prefix: string, out: string[]): Promise<void> {
  let entries;
  try {
    if (!(await options.trust.directory(dir, false))) return;
    entries = await options.files.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (isCode(error, "ENOENT", "ENOTDIR")) return;
    throw error;
  }
  for (const entry of entries) {
    if (entry.name.endsWith(TMP)) continue;
    const key = prefix ? `${prefix}:${entry.name}` : entry.name;
    if (entry.isDirectory()) await walkKeys(options, join(dir, entry.name), key, out);
    else out.push(key);
  }
}
