// The file store against an outside attacker (the attack report on the issue-11 fixes): the store's
// owner racing root's CLI, a store moved aside and restored under a warm server, malformed records.
import { chmodSync, linkSync, mkdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, type RunResult, tempDir } from "./helpers/cli.ts";

const isRoot = process.getuid?.() === 0;
const NOT_ROOT = "needs root: acts as a second Unix user with setpriv (CI runs as root)";
const NOBODY = 65534;
const AS_NOBODY = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--"];

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir("service-api-attacks-");
  chmodSync(tmp.dir, 0o755); // so that the second user can reach the stores made under it
});
afterAll(() => tmp.cleanup());
let count = 0;
const fresh = () => join(tmp.dir, `s${++count}`);

const create = (store: string, name: string) => runCli(["apikey", "--create", "--name", name, "--roles", "ADMIN", "--store", store]);
const list = (store: string) => runCli(["apikey", "--list", "--json", "--store", store]);

/** A store of the second user's with one key in it, made by root's CLI; and a root-owned 0600 victim file. */
async function nobodysStore() {
  const store = fresh();
  mkdirSync(store, { mode: 0o700 });
  execFileSync("chown", [`${NOBODY}:${NOBODY}`, store]);
  const made = await create(store, "ops");
  expect(made.code, made.stderr).toBe(0);
  const target = fresh();
  mkdirSync(target, { mode: 0o755 });
  const victim = join(target, "victim");
  writeFileSync(victim, "root's\n", { mode: 0o600 });
  return { store, target, victim };
}

const expectRootsStill = (path: string) => {
  const stat = statSync(path);
  expect({ uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o777 }).toEqual({ uid: 0, gid: 0, mode: 0o600 });
};

describe("root's CLI on another user's store acts as that user", () => {
  it.skipIf(!isRoot)(`never chowns a root-owned file hard-linked into a loose folder of the store (${NOT_ROOT})`, async () => {
    const { store, victim } = await nobodysStore();
    // What the owner does where protected_hardlinks=0 (here root plants it for them): no race needed.
    linkSync(victim, join(store, "keys", "planted"));
    chmodSync(join(store, "keys"), 0o777);
    for (const run of [1, 2]) { // the second run refuses too: the folder is left as found
      const listed = await runCli(["apikey", "--list", "--store", store]);
      expectRootsStill(victim);
      expect(listed.code, `run ${run}`).toBe(1);
      expect(listed.stderr).toMatch(/keys\/planted belongs to uid 0, not to the store's owner \(uid 65534\)/);
      expect(listed.stderr.trim().split("\n")).toHaveLength(1);
    }
  });

  it.skipIf(!isRoot)(`the owner swapping a folder for a link to a root directory mid-run gains nothing (${NOT_ROOT})`, async () => {
    const { store, target, victim } = await nobodysStore();
    symlinkSync(target, join(store, "keys_alt"));
    execFileSync("chown", ["-h", `${NOBODY}:${NOBODY}`, join(store, "keys_alt")]);
    // The attacker's loop (/tmp/attack-race/swap.py): exchange keys/ and the link, reopening keys/ each time.
    const swapper = spawn(AS_NOBODY[0], [...AS_NOBODY.slice(1), "python3", "-c", SWAP, store, "6"], { stdio: "ignore" });
    const done = new Promise((resolve) => swapper.on("close", resolve));
    const runs: RunResult[] = [];
    for (let i = 0; i < 24; i++) runs.push(await (i % 3 ? list(store) : create(store, `race ${i}`)));
    swapper.kill();
    await done;
    expectRootsStill(victim);
    expect(execFileSync("ls", ["-A", target], { encoding: "utf8" }).trim()).toBe("victim"); // nothing written there
    for (const run of runs) expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it.skipIf(!isRoot)(`root on its own store and a user on theirs work as before (${NOT_ROOT})`, async () => {
    const mine = fresh();
    expect((await create(mine, "roots")).code).toBe(0);
    expect(statSync(join(mine, "keys")).uid).toBe(0);
    const theirs = fresh();
    mkdirSync(theirs, { mode: 0o700 });
    execFileSync("chown", [`${NOBODY}:${NOBODY}`, theirs]);
    const run = execFileSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, CLI, "apikey", "--create", "--name", "x", "--roles", "GUEST", "--store", theirs], { encoding: "utf8" });
    expect(run).toMatch(/sapi_/);
    expect(statSync(join(theirs, "keys")).uid).toBe(NOBODY);
  });
});

const SWAP = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
store = sys.argv[1]; end = time.time() + float(sys.argv[2])
a = (store + "/keys").encode(); b = (store + "/keys_alt").encode(); n = 0
while time.time() < end:
    try: os.chmod(a if n % 2 == 0 else b, 0o777)
    except OSError: pass
    libc.syscall(316, -100, a, -100, b, 2)
    n += 1
`;
