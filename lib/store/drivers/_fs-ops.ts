/**
 * The file operations the fs driver uses, as promises: on libuv's thread pool for a long-running
 * server, or on the calling thread for a process that makes one change and exits (the CLI).
 */
import * as fs from "node:fs";
import { promisify } from "node:util";
import { once } from "../../core/_once.ts";
import { isCode } from "../../core/_error-code.ts";

/** The file operations the driver uses, as promises. */
export interface FileOps {
  open(path: string, flags: string | number, mode?: number): Promise<number>;
  close(fd: number): Promise<void>;
  fsync(fd: number): Promise<void>;
  writeFile(fd: number, data: string, encoding: "utf8"): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string, options: { recursive: true; force: true }): Promise<void>;
  unlink(path: string): Promise<void>;
  link(existing: string, path: string): Promise<void>;
  readdir(path: string, options: { withFileTypes: true }): Promise<fs.Dirent[]>;
  opendir(path: string): Promise<fs.Dir>;
  /** The whole file as text, opened with these (numeric) flags. */
  readText(path: string, flags: number): Promise<string>;
  /** One write(2) of `data` at the file's position (the end, under O_APPEND); resolves with the bytes written. */
  write(fd: number, data: Uint8Array): Promise<number>;
  fstat(fd: number): Promise<fs.Stats>;
  lstat(path: string): Promise<fs.Stats>;
  /** The rest of an open file as text. */
  readFd(fd: number): Promise<string>;
  /** pread(2): up to `buffer.length` bytes at `position`; resolves with the bytes read (0 at the end). */
  readAt(fd: number, buffer: Uint8Array, position: number): Promise<number>;
  fchmod(fd: number, mode: number): Promise<void>;
  ftruncate(fd: number, length: number): Promise<void>;
  mkdir(path: string, mode: number): Promise<void>;
  chmod(path: string, mode: number): Promise<void>;
  /** stat(2): follows a symbolic link. */
  stat(path: string): Promise<fs.Stats>;
}

// From the file's current position (read(2), not pread(2)): a FIFO in place of an entry cannot seek.
const readOn = (fd: number, buffer: Buffer) =>
  new Promise<number>((done, fail) => fs.read(fd, buffer, 0, buffer.length, null, (error, read) => (error ? fail(error) : done(read))));

/** Reads all of an open file: three trips through the thread pool for an entry (open, read, close), not five. */
async function readAll(fd: number): Promise<string> {
  const chunks: Buffer[] = [];
  for (;;) {
    const chunk = Buffer.allocUnsafe(16 * 1024);
    const read = await readOn(fd, chunk);
    chunks.push(chunk.subarray(0, read));
    if (read < chunk.length) return Buffer.concat(chunks).toString("utf8");
  }
}

/**
 * The callback API, promisified (rather than fs/promises, which loads readline on start-up). Made on
 * first use: the CLI uses `blockingOps` alone, and reading `fs.opendir` loads node's fs/dir module.
 */
export const threadPoolOps: () => FileOps = once((): FileOps => {
  const openAsync = promisify(fs.open);
  const closeAsync = promisify(fs.close);
  const mkdirAsync = promisify(fs.mkdir);
  return {
    open: openAsync,
    close: closeAsync,
    fsync: promisify(fs.fsync),
    writeFile: promisify(fs.writeFile),
    rename: promisify(fs.rename),
    rm: promisify(fs.rm),
    unlink: promisify(fs.unlink),
    link: promisify(fs.link),
    readdir: promisify(fs.readdir),
    opendir: promisify(fs.opendir),
    // Through a descriptor: numeric open flags are the form every runtime's node:fs takes (Deno's too).
    readText: async (path, flags) => {
      const fd = await openAsync(path, flags);
      try {
        return await readAll(fd);
      } finally {
        await closeAsync(fd);
      }
    },
    write: (fd, data) =>
      new Promise((done, fail) => fs.write(fd, data, 0, data.length, null, (error, written) => (error ? fail(error) : done(written)))),
    fstat: promisify(fs.fstat),
    lstat: promisify(fs.lstat),
    readFd: readAll,
    readAt: (fd, buffer, position) =>
      new Promise((done, fail) => fs.read(fd, buffer, 0, buffer.length, position, (error, read) => (error ? fail(error) : done(read)))),
    fchmod: promisify(fs.fchmod),
    ftruncate: promisify(fs.ftruncate),
    mkdir: async (path, mode) => void (await mkdirAsync(path, { mode })),
    chmod: promisify(fs.chmod),
    stat: promisify(fs.stat),
  };
});

/**
 * The same operations done on the calling thread, for a process that does one thing and exits (the
 * CLI): nothing else is waiting meanwhile, and it saves starting libuv's thread pool and a round
 * trip through it for each of a create's twenty-odd calls.
 */
export const blockingOps: FileOps = {
  open: async (path, flags, mode) => fs.openSync(path, flags, mode),
  close: async (fd) => fs.closeSync(fd),
  fsync: async (fd) => fs.fsyncSync(fd),
  writeFile: async (fd, data, encoding) => fs.writeFileSync(fd, data, encoding),
  rename: async (from, to) => fs.renameSync(from, to),
  rm: async (path, options) => fs.rmSync(path, options),
  unlink: async (path) => fs.unlinkSync(path),
  link: async (existing, path) => fs.linkSync(existing, path),
  readdir: async (path, options) => fs.readdirSync(path, options),
  opendir: async (path) => fs.opendirSync(path),
  readText: async (path, flags) => fs.readFileSync(path, { encoding: "utf8", flag: flags as unknown as string }),
  write: async (fd, data) => fs.writeSync(fd, data, 0, data.length, null),
  fstat: async (fd) => fs.fstatSync(fd),
  lstat: async (path) => fs.lstatSync(path),
  readFd: async (fd) => fs.readFileSync(fd, "utf8"),
  readAt: async (fd, buffer, position) => fs.readSync(fd, buffer, 0, buffer.length, position),
  fchmod: async (fd, mode) => fs.fchmodSync(fd, mode),
  ftruncate: async (fd, length) => fs.ftruncateSync(fd, length),
  mkdir: async (path, mode) => void fs.mkdirSync(path, { mode }),
  chmod: async (path, mode) => fs.chmodSync(path, mode),
  stat: async (path) => fs.statSync(path),
};

/**
 * Runs at most `limit` of the calls given at once, the others in the order they came. The thread pool
 * takes work first come, first served: a request that reads thousands of entries at once would put
 * every other request's read (the revision check each one makes) behind all of them.
 */
export function inTurns(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
  let running = 0;
  let waiting: (() => void)[] = [];
  let next = 0;
  const done = () => {
    if (next === waiting.length) return void (running--, (waiting = []), (next = 0));
    waiting[next++]();
    if (next > 1024 && next * 2 > waiting.length) (waiting = waiting.slice(next)), (next = 0); // drop the started ones
  };
  return async (work) => {
    if (running < limit) running++;
    else await new Promise<void>((go) => waiting.push(go)); // a finished call hands its turn over
    try {
      return await work();
    } finally {
      done();
    }
  };
}

/**
 * fsync(2) of a directory, which makes a file created, renamed or removed in it durable; nothing when
 * `durable` is false. A failed close of the directory changes nothing that was synced, so it is ignored.
 */
export async function syncDir(files: FileOps, dir: string, durable = true): Promise<void> {
  if (!durable) return;
  const fd = await files.open(dir, fs.constants.O_RDONLY);
  try {
    await files.fsync(fd);
  } finally {
    await files.close(fd).catch(() => {});
  }
}

/** True when a process with this pid exists on this host. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, "EPERM");
  }
}

/** `error` naming `path` when it names none (errors of calls on a file descriptor). */
export function withPath(error: unknown, path: string): unknown {
  if (error instanceof Error && (error as { path?: unknown }).path === undefined) Object.assign(error, { path });
  return error;
}
