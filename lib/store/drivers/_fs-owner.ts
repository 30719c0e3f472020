/**
 * Root working on another user's file store (an operator running the CLI on a service's store, or
 * `serve` started as root) does all of the store's I/O as that user: effective uid and gid become the
 * owner's once, when the store is opened. Root checking by path and then acting by path would let the
 * owner swap a folder for a link to /etc in between and have root chown or write there; as the owner,
 * the process has no more rights than the owner has, so nothing the owner plants can lend it root's.
 * Files are then made by the owner itself: nothing is ever chowned.
 *
 * The switch is of the effective ids only (seteuid), and lasts for the rest of the process.
 * Deno has no seteuid: there, root on another user's store is refused.
 */
import { closeSync, constants, openSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ServiceError } from "../../core/errors.ts";
import { printable } from "../_system-errors.ts";
import { localActor } from "../audit.ts";

/** Makes this root process act as `uid`:`gid` from now on; returns the new effective uid. */
export function actAsOwner(path: string, uid: number, gid: number): number {
  const { setgroups, setegid, seteuid } = process as Partial<Pick<typeof process, "setgroups" | "setegid" | "seteuid">>;
  const isDeno = "Deno" in globalThis;
  if (isDeno || typeof setgroups !== "function" || typeof setegid !== "function" || typeof seteuid !== "function") {
    throw new ServiceError("STORE_UNAVAILABLE", printable(
      `Key store unavailable: ${path} belongs to uid ${uid}, and root may work on another user's store only as that user, which this runtime cannot switch to. Run the command as uid ${uid} (for example: sudo -u '#${uid}' ...).`,
    ));
  }
  const groups = process.getgroups?.() ?? [];
  const egid = process.getegid?.() ?? 0;
  // Who is acting, read while still root: the audit trail names root, not the store's owner it becomes.
  localActor();
  try {
    // Groups first: once the uid is not root's any more, the groups can no longer be changed.
    setgroups.call(process, [gid]);
    setegid.call(process, gid);
    seteuid.call(process, uid);
  } catch (error) {
    // Root without CAP_SETUID/CAP_SETGID (some containers): never go on as root on someone else's store.
    throw new ServiceError("STORE_UNAVAILABLE", printable(
      `Key store unavailable: ${path} belongs to uid ${uid}, and this process cannot act as that user (${(error as { code?: string })?.code ?? error}). Run the command as uid ${uid}.`,
    ));
  }
  // Code loaded from now on (the HTTP server, prompts) is read as the owner too: an install the owner cannot
  // read (under /root) would fail later with "Cannot find module". Say so now, as root again.
  const program = process.argv[1] ? dirname(resolve(process.argv[1])) : "";
  try {
    if (program) closeSync(openSync(program, constants.O_RDONLY));
  } catch {
    seteuid.call(process, 0);
    setegid.call(process, egid);
    setgroups.call(process, groups);
    throw new ServiceError("STORE_UNAVAILABLE", printable(
      `Key store unavailable: ${path} belongs to uid ${uid}, and root works on it as that user, who cannot read this program (${program}). Install it where uid ${uid} can read it, or run the command as uid ${uid}.`,
    ));
  }
  return uid;
}

/**
 * For a long-running process that root started on another user's store (`serve`): runs `bind` (listening,
 * perhaps on a port below 1024) with root's effective ids back, then gives root up for good: real, effective
 * and saved ids all become the store owner's, so a compromised server cannot take root back. Does nothing
 * special when the process is not root acting as another user.
 */
export async function bindThenSettleAsOwner<T>(bind: () => Promise<T>): Promise<T> {
  const p = process as Partial<Pick<typeof process, "getuid" | "geteuid" | "getegid" | "seteuid" | "setegid" | "setuid" | "setgid">>;
  if (!p.getuid || !p.geteuid || !p.getegid || p.getuid() !== 0 || p.geteuid() === 0) return bind();
  const uid = p.geteuid(), gid = p.getegid();
  // Nothing reads the store while root's ids are back: no request is taken before `bind` resolves and this
  // function returns, since connections are only accepted on a later turn of the event loop.
  p.seteuid!(0);
  try {
    return await bind();
  } finally {
    p.setgid!(gid); // as root: real, effective and saved gid
    p.setuid!(uid); // as root: real, effective and saved uid; root cannot be regained
  }
}
