// Tests run the built CLI (dist/cli.cjs) as a child process, the way a user does; build it once first.
import { execFileSync } from "node:child_process";
import { chmodSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

export default function setup() {
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" });
  // The root-only tests run the checkout's CLI as a second Unix user (uid 65534), who must be able to reach
  // it: a clone made under a private folder (mktemp -d is 0700) would hide it. As root, let others pass
  // through (search only, not list) each folder above the checkout that forbids it.
  if (process.getuid?.() !== 0) return;
  for (let dir = resolve(import.meta.dirname, ".."); dir !== dirname(dir); dir = dirname(dir)) {
    const { mode } = statSync(dir);
    if ((mode & 0o001) === 0) chmodSync(dir, (mode & 0o7777) | 0o001);
  }
}
