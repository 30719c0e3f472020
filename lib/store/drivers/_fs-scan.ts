/**
 * The fs driver's `scan`: the entries of one store folder, a chunk at a time, read with opendir(3) as the
 * caller goes, so listing 100,000 keys never holds all their names. Temporary files, lock files (both end
 * in `.tmp`) and folders are not keys and are skipped.
 */
import type * as fs from "node:fs";
import { isCode } from "../../core/_error-code.ts";

export interface ScanOptions {
  /** Refuses a folder the store cannot trust (see _fs-trust.ts); false when it does not exist. */
  trust: { directory(path: string, create: boolean): boolean };
  files: { opendir(path: string): Promise<fs.Dir> };
  /** The folder, and the storage prefix its entries' keys get. */
  path: string;
  prefix: string;
  size: number;
}

export async function* scanDirectory({ trust, files, path, prefix, size }: ScanOptions): AsyncGenerator<string[]> {
  let dir: fs.Dir;
  try {
    if (!trust.directory(path, false)) return;
    dir = await files.opendir(path);
  } catch (error) {
    if (isCode(error, "ENOENT", "ENOTDIR")) return;
    throw error;
  }
  try {
    const chunk: string[] = [];
    for await (const entry of dir) {
      if (entry.name.endsWith(".tmp") || entry.isDirectory()) continue;
      chunk.push(`${prefix}:${entry.name}`);
      if (chunk.length >= size) yield chunk.splice(0);
    }
    if (chunk.length) yield chunk;
  } finally {
    await dir.close().catch(() => {});
  }
}
