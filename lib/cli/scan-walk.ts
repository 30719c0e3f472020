/**
 * What `apikey --scan` reads: the paths named (files, folders, `-` for standard input), folders walked
 * depth first. Inside a folder only regular files are read: links are not followed (no loops, nothing
 * outside the tree), `.git` folders, binary files, files over the size limit, FIFOs, sockets and devices,
 * and pseudo file systems mounted inside (/proc, /sys) are skipped and counted. A path named on the
 * command line is read whatever it is (a link, a pipe such as `<(git log -p)`, a large or binary file);
 * a named folder is walked unless it is a pseudo file system. Names are kept as bytes, so a file whose
 * name is not UTF-8 is read all the same.
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, readdir, stat, type FileHandle } from "node:fs/promises";
import * as nodeFs from "node:fs";
import { displayPath } from "./scan-text.ts";

/** Files over this size inside a folder are skipped (named files are read whatever their size). */
export const MAX_WALKED_FILE_BYTES = 50 * 1024 * 1024;
/** Unreadable paths named in the report; the rest are counted. */
const UNREADABLE_NAMED = 20;

export interface Skipped {
  git: number;
  binary: number;
  large: number;
  links: number;
  special: number;
  pseudo: number;
  unreadable: number;
  /** The first unreadable paths, as printable text, with the reason. */
  unreadablePaths: string[];
}

export const noneSkipped = (): Skipped => ({ git: 0, binary: 0, large: 0, links: 0, special: 0, pseudo: 0, unreadable: 0, unreadablePaths: [] });

/** One input to scan: its path for the report, an open handle (null for stdin), and how to treat it. */
export interface Input {
  /** The path as printable text (`(standard input)` for `-`). */
  path: string;
  /** The path as the report's JSON gives it: the name itself when it is UTF-8, else the printable text. */
  rawPath: string;
  handle: FileHandle | null;
  /** Read twice (to place secrets) only when it is a regular file. */
  seekable: boolean;
  /** Named on the command line: read even when binary. */
  named: boolean;
}

/** Magic numbers (statfs f_type) of file systems whose files are not files: proc, sysfs, debugfs, tracefs, securityfs, cgroup, cgroup2, devpts, bpf, configfs, pstore, efivarfs. */
const PSEUDO = new Set([0x9fa0, 0x62656572, 0x64626720, 0x74726163, 0x73636673, 0x27e0eb, 0x63677270, 0x1cd1, 0xcafe4a11, 0x62656570, 0x6165676c, 0xde5e81e4]);

/** True for a folder on a pseudo file system (statfs where the runtime has it; else by its path). */
async function isPseudo(path: Buffer): Promise<boolean> {
  const statfs = (nodeFs.promises as { statfs?: (p: Buffer) => Promise<{ type: number }> }).statfs;
  if (statfs) {
    try {
      return PSEUDO.has((await statfs(path)).type);
    } catch {
      // fall through to the path
    }
  }
  return /^\/(proc|sys)(\/|$)/.test(path.toString("latin1"));
}

const joinPath = (dir: Buffer, name: Buffer) => Buffer.concat([dir, dir[dir.length - 1] === 0x2f ? Buffer.alloc(0) : Buffer.from("/"), name]);

/**
 * The inputs of `operands` in order, each opened; the caller closes each handle. `skipped` counts what
 * was left out. A named path that does not exist is an error for the caller (checked first: `missing`).
 */
export async function* walk(operands: readonly string[], skipped: Skipped): AsyncGenerator<Input> {
  const unreadable = (path: Buffer, error: unknown) => {
    skipped.unreadable++;
    const code = (error as { code?: string })?.code ?? "error";
    if (skipped.unreadablePaths.length < UNREADABLE_NAMED) skipped.unreadablePaths.push(`${displayPath(path)} (${code})`);
  };
  const visited = new Set<string>();
  for (const operand of operands) {
    if (operand === "-") {
      yield { path: "(standard input)", rawPath: "-", handle: null, seekable: false, named: true };
      continue;
    }
    const path = Buffer.from(operand);
    let info: Stats;
    try {
      info = await stat(path);
    } catch (error) {
      unreadable(path, error);
      continue;
    }
    if (!info.isDirectory()) {
      const input = await openInput(path, true, unreadable);
      if (input) yield input;
      continue;
    }
    yield* walkFolder(path, skipped, visited, unreadable);
  }
}

async function* walkFolder(root: Buffer, skipped: Skipped, visited: Set<string>, unreadable: (path: Buffer, error: unknown) => void): AsyncGenerator<Input> {
  const folders: { path: Buffer; dev: number | null }[] = [{ path: root, dev: null }];
  while (folders.length) {
    const { path: dir, dev: parentDev } = folders.pop()!;
    let info: Stats;
    let entries: nodeFs.Dirent<Buffer>[];
    try {
      info = await lstat(dir);
      // A bind mount of a folder inside itself would otherwise be walked for ever.
      if (visited.has(`${info.dev}:${info.ino}`)) continue;
      visited.add(`${info.dev}:${info.ino}`);
      if ((parentDev === null || info.dev !== parentDev) && (await isPseudo(dir))) {
        skipped.pseudo++;
        continue;
      }
      entries = await readdir(dir, { withFileTypes: true, encoding: "buffer" });
    } catch (error) {
      unreadable(dir, error);
      continue;
    }
    // Depth first, in name order (the stack pops the last pushed first).
    entries.sort((a, b) => Buffer.compare(b.name, a.name));
    const files: Buffer[] = [];
    for (const entry of entries) {
      const path = joinPath(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name.toString("latin1") === ".git") skipped.git++;
        else folders.push({ path, dev: info.dev });
      } else if (entry.isSymbolicLink()) skipped.links++;
      else if (entry.isFile()) files.push(path);
      else skipped.special++;
    }
    for (const path of files.reverse()) {
      const input = await openInput(path, false, unreadable, skipped);
      if (input) yield input;
    }
  }
}

/**
 * Opens a file without following a link and without blocking (a FIFO swapped in after the listing is
 * not waited on), then checks what was opened: inside a folder only a regular file within the size limit.
 */
async function openInput(path: Buffer, named: boolean, unreadable: (path: Buffer, error: unknown) => void, skipped?: Skipped): Promise<Input | null> {
  let handle: FileHandle;
  try {
    handle = await open(path, named ? constants.O_RDONLY : constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    if (!named && (error as { code?: string }).code === "ELOOP") skipped!.links++;
    else unreadable(path, error);
    return null;
  }
  const info = await handle.stat();
  const printable = displayPath(path);
  const input: Input = { path: printable, rawPath: isUtf8(path) ? path.toString() : printable, handle, seekable: info.isFile(), named };
  if (named) return input;
  const skip = !info.isFile() ? "special" : info.size > MAX_WALKED_FILE_BYTES ? "large" : null;
  if (!skip) return input;
  skipped![skip]++;
  await handle.close();
  return null;
}

const isUtf8 = (bytes: Buffer) => {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
};
