// A second Unix user for the tests that check what the store trusts: uid 65534 through setpriv, and a
// scratch folder it can reach. Such tests need root: outside CI they skip with NOT_ROOT as the reason; CI runs
// as root, so there (CI set) they never skip, and a CI that is not root fails them instead of passing them.
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { tempDir } from "./cli.ts";

export const isRoot = process.getuid?.() === 0;
/** Skip a root-only test: true only outside CI on a machine that is not root. */
export const lacksRoot = !isRoot && !process.env.CI;
export const NOT_ROOT = "needs root: acts as a second Unix user with setpriv (CI runs as root)";
export const NOBODY = 65534;
/** Prefix of a command run as uid/gid 65534 with no supplementary groups. */
export const AS_NOBODY = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--"];

/** A scratch folder the second user can reach, made before and removed after the file's tests; `fresh()` names a new store in it. */
export function sharedScratch(prefix: string): { dir: () => string; fresh: () => string } {
  let tmp: ReturnType<typeof tempDir>;
  let count = 0;
  beforeAll(() => {
    tmp = tempDir(prefix);
    chmodSync(tmp.dir, 0o755);
  });
  afterAll(() => tmp.cleanup());
  return { dir: () => tmp.dir, fresh: () => join(tmp.dir, `s${++count}`) };
}
