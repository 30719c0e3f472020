/**
 * One line for an operating-system error (EACCES, EROFS, ENOSPC, ...): what failed, on which path, and
 * what to do about it. Node's own message ("EACCES: permission denied, mkdir '/x'") names no fix.
 */
const FIXES: Record<string, string> = {
  EACCES: "permission denied. Run as the user who owns the store, or give the store back to that user (chown -R)",
  EPERM: "operation not permitted. Run as the user who owns the store, or give the store back to that user (chown -R)",
  EROFS: "the file system is read-only. Remount it read-write, or use another --store",
  ENOSPC: "no space left on the device. Free some space and retry",
  EDQUOT: "the disk quota is exhausted. Free some space and retry",
  ENOTDIR: "a part of the path is not a directory. Choose another --store",
  EISDIR: "a directory is in the way. Remove it, or choose another --store",
  ELOOP: "a loop of symbolic links, or a link the store never follows, is in the way. Remove it",
  ENAMETOOLONG: "the path is too long. Choose a shorter --store",
  EMFILE: "too many open files. Raise the limit (ulimit -n) and retry",
  ENFILE: "too many open files on this system. Retry later",
  EIO: "an input/output error. Check the disk",
  ENOENT: "a part of the path is missing or cannot hold a directory. Choose another --store",
};

/** The one-line description of a system error with a path, or undefined for any other error. */
export function describeSystemError(error: unknown): string | undefined {
  const { code, syscall, path } = (error ?? {}) as { code?: unknown; syscall?: unknown; path?: unknown };
  if (typeof code !== "string" || typeof path !== "string" || !/^E[A-Z]+$/.test(code)) return undefined;
  const fix = FIXES[code] ?? `${code}. Check the store's directory and its disk`;
  return printable(`cannot ${typeof syscall === "string" ? syscall : "use"} ${path}: ${fix}`);
}

/**
 * A message with control, invisible and line-separator characters escaped (a path may hold a newline or
 * a terminal escape): it stays one line and cannot rewrite the terminal.
 */
export function printable(message: string): string {
  return message.replace(/[\p{C}\p{Zl}\p{Zp}]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}
