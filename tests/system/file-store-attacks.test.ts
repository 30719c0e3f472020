// The file store against an attacker on the same host: the store's
// owner racing root's CLI, a store moved aside and restored under a warm server, malformed records.
import { chmodSync, cpSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStorage } from "unstorage";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { CLI, ROOT, runCli, type RunResult } from "../helpers/cli.ts";
import { AS_NOBODY, lacksRoot, NOBODY, NOT_ROOT, sharedScratch } from "../helpers/users.ts";

/** The system's python (a per-user shim, like pyenv's under /root, is out of the second user's reach). */
const PYTHON = "/usr/bin/python3";

const scratch = sharedScratch("service-api-attacks-");
const fresh = scratch.fresh;

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
  it.skipIf(lacksRoot)(`never chowns a root-owned file hard-linked into a loose folder of the store (${NOT_ROOT})`, async () => {
    const { store, victim } = await nobodysStore();
    // What the owner does where protected_hardlinks=0 (here root plants it for them): no race needed.
    linkSync(victim, join(store, "keys", "planted"));
    chmodSync(join(store, "keys"), 0o777);
    for (const run of [1, 2]) { // the second run refuses too: the folder is left as found
      const listed = await runCli(["apikey", "--list", "--store", store]);
      expectRootsStill(victim);
      expect(listed.code, `run ${run}`).toBe(3);
      expect(listed.stderr).toMatch(/keys\/planted belongs to uid 0, not to the store's owner \(uid 65534\)/);
      expect(listed.stderr.trim().split("\n")).toHaveLength(1);
    }
  });

  it.skipIf(lacksRoot)(`the owner swapping a folder for a link to a root directory mid-run (renameat2 RENAME_EXCHANGE loop) gains nothing (${NOT_ROOT})`, async () => {
    const { store, target, victim } = await nobodysStore();
    symlinkSync(target, join(store, "keys_alt"));
    execFileSync("chown", ["-h", `${NOBODY}:${NOBODY}`, join(store, "keys_alt")]);
    // The attacker's loop (/tmp/attack-race/swap.py): exchange keys/ and the link, reopening keys/ each time.
    // A stress check: the window is microseconds wide, so even the old code got through 24 runs unharmed
    // most times (the attacker needed 18 --list runs); the test above is the one that fails without the fix.
    const swapper = spawn(AS_NOBODY[0], [...AS_NOBODY.slice(1), PYTHON, "-c", SWAP, store, "60"], { stdio: ["ignore", "pipe", "inherit"] });
    let swaps = "";
    swapper.stdout.setEncoding("utf8").on("data", (d) => (swaps += d));
    const done = new Promise((resolve) => swapper.on("close", resolve));
    const runs: RunResult[] = [];
    for (let i = 0; i < 24; i++) runs.push(await (i % 3 ? list(store) : create(store, `race ${i}`)));
    swapper.kill();
    await done;
    expect(Number(/swaps (\d+)/.exec(swaps)?.[1])).toBeGreaterThan(1000); // the attack really ran meanwhile
    expectRootsStill(victim);
    expect(execFileSync("ls", ["-A", target], { encoding: "utf8" }).trim()).toBe("victim"); // nothing written there
    for (const run of runs) expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it.skipIf(lacksRoot)(`root that cannot switch users (no CAP_SETUID/CAP_SETGID) is refused on another user's store, never goes on as root (${NOT_ROOT})`, async () => {
    const { store } = await nobodysStore();
    const run = spawnSync("setpriv", ["--inh-caps=-all", "--bounding-set=-setuid,-setgid", "--", process.execPath, CLI, "apikey", "--create", "--name", "y", "--roles", "GUEST", "--store", store], { encoding: "utf8" });
    expect(run.status).toBe(3);
    expect(run.stdout).not.toMatch(/sapi_/);
    expect(run.stderr.trim()).toMatch(/^Error: Key store unavailable: \S+ belongs to uid 65534, and this process cannot act as that user \(EPERM\)\. Run the command as uid 65534\.$/);
  });

  it.skipIf(lacksRoot)(`an install the store's owner cannot read is refused up front, not with "Cannot find module" later (${NOT_ROOT})`, async () => {
    const { store } = await nobodysStore();
    const hidden = join(scratch.dir(), "root-only");
    mkdirSync(hidden, { mode: 0o700 });
    cpSync(join(ROOT, "dist"), join(hidden, "dist"), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(hidden, "node_modules"));
    const run = spawnSync(process.execPath, [join(hidden, "dist/cli.cjs"), "serve", "--port", "0", "--store", store], { encoding: "utf8", timeout: 20_000 });
    expect(run.status).toBe(3);
    expect(run.stderr.trim()).toMatch(/^Error: Key store unavailable: \S+ belongs to uid 65534, and root works on it as that user, who cannot read this program/);
  });

  it.skipIf(lacksRoot)(`under Deno, which cannot switch users, root is refused on another user's store with one line (${NOT_ROOT})`, async () => {
    const { store } = await nobodysStore();
    const run = spawnSync(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "cli.ts", "apikey", "--list", "--store", store], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(run.status).toBe(3);
    expect(run.stderr.trim()).toMatch(/^Error: Key store unavailable: \S+ belongs to uid 65534, and root may work on another user's store only as that user, which this runtime cannot switch to\./);
  }, 60_000);

  it.skipIf(lacksRoot)(`root on its own store and a user on theirs work as before (${NOT_ROOT})`, async () => {
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

describe("a malformed record is no key, and breaks nothing else", () => {
  const made = async (store: string, name: string) => {
    const result = await runCli(["apikey", "--create", "--name", name, "--roles", "ADMIN", "--json", "--store", store]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as { id: string; key: string };
  };
  const damages: Array<[string, (text: string) => string]> = [
    ["a truncated", (text) => text.slice(0, 20)],
    ["an empty", () => ""],
    ["a wrongly typed (roles a string)", (text) => JSON.stringify({ ...JSON.parse(text), roles: "ADMIN" })],
    ["a stored-under-another-id", (text) => JSON.stringify({ ...JSON.parse(text), id: crypto.randomUUID() })],
  ];
  for (const [how, damage] of damages) {
    it(`${how} record: --list shows the others and says why at debug level; verify and get find no key; --delete --name removes what is left`, async () => {
      const store = fresh();
      const good = await made(store, "good");
      const bad = await made(store, "bad");
      const file = join(store, "keys", bad.id);
      writeFileSync(file, damage(readFileSync(file, "utf8")));

      const listed = await runCli(["apikey", "--list", "--json", "--store", store], { env: { LOG_LEVEL: "debug" } });
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).keys.map((k: { name: string }) => k.name)).toEqual(["good"]);
      expect(listed.stderr).toContain(`keys:${bad.id} is malformed`);
      expect(listed.stderr).not.toContain(bad.key);

      const server = await openKeyStore(parseStoreSpec(store));
      try {
        expect(await server.verify(bad.key)).toBeNull();
        expect(await server.get(bad.id)).toBeNull();
        expect((await server.verify(good.key))?.id).toBe(good.id);
      } finally {
        await server.close();
      }

      const deleted = await runCli(["apikey", "--delete", "--name", "bad", "--json", "--store", store]);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(JSON.parse(deleted.stdout)).toMatchObject({ deleted: 1, keys: [{ id: bad.id, name: "bad" }] });
      const left = (folder: string) => readdirSync(join(store, folder)).map((f) => readFileSync(join(store, folder, f), "utf8"));
      expect(readdirSync(join(store, "keys"))).toEqual([good.id]);
      expect(left("names")).toEqual([good.id]);
      // The secrets entry goes too, unless the damage took the hash with it (then it leads to no record).
      if (!/truncated|empty/.test(how)) expect(left("secrets")).toEqual([good.id]);
      expect((await list(store)).code).toBe(0);
    });
  }
});

describe("listing many keys in a server", () => {
  it("skips a FIFO or a large record in the server's listing path instead of blocking or cutting it", async () => {
    const store = fresh();
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) {
      const made = await runCli(["apikey", "--create", "--name", name, "--roles", "ADMIN", "--json", "--store", store]);
      ids.push(JSON.parse(made.stdout).id);
    }
    rmSync(join(store, "keys", ids[0]));
    execFileSync("mkfifo", ["-m", "600", join(store, "keys", ids[0])]);
    const big = join(store, "keys", ids[1]); // longer than one 16 KiB read: read whole, not cut
    writeFileSync(big, JSON.stringify({ ...JSON.parse(readFileSync(big, "utf8")), description: "d".repeat(40_000) }));
    const server = await openKeyStore(parseStoreSpec(store));
    try {
      const listed = await server.list();
      expect(listed.map((k) => [k.name, k.description?.length ?? 0])).toEqual([["b", 40_000], ["c", 0]]);
    } finally {
      await server.close();
    }
  });

  it("never holds the event loop for the whole listing: 5,000 keys are read a few at a time", async () => {
    const store = fresh();
    const driver = fsDriver({ base: store, sync: false }); // a bulk load that can be redone: no fsync
    const seeding = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < 5000) await seeding.create({ name: `seed ${next++}`, roles: ["VIEWER"], permissions: [] });
    }));
    await seeding.close();

    const server = await openKeyStore(parseStoreSpec(store)); // what `serve` opens: the non-blocking driver
    try {
      await server.list(); // warm: directory checks, code paths
      let last = performance.now();
      let longest = 0;
      const ticker = setInterval(() => {
        longest = Math.max(longest, performance.now() - last);
        last = performance.now();
      }, 1);
      const started = performance.now();
      const keys = await server.list();
      const took = performance.now() - started;
      clearInterval(ticker);
      longest = Math.max(longest, performance.now() - last); // a stall that ran to the end of the listing
      expect(keys).toHaveLength(5000);
      // Before: every record read blocking in one turn of the loop, so the longest stall was the whole listing.
      expect(longest, `longest stall ${longest.toFixed(0)} ms of a ${took.toFixed(0)} ms listing`).toBeLessThan(took / 3);
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe("--store mistakes and a full disk get one clear line", () => {
  it("refuses an empty --store with exit 2 instead of using the default store", async () => {
    for (const empty of ["", "  "]) {
      const result = await runCli(["apikey", "--list", "--store", empty]);
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toBe("Error: --store is empty. Give a directory, fs:<dir>, memory: or redis://host:port/db");
    }
  });

  it("refuses to create a key in the CLI's memory: store, whose secret could never authenticate (exit 2); listing still works", async () => {
    const created = await runCli(["apikey", "--create", "--name", "x", "--roles", "ADMIN", "--store", "memory:"]);
    expect(created.code).toBe(2);
    expect(created.stdout).not.toMatch(/sapi_/);
    expect(created.stderr.trim().split("\n")).toHaveLength(1);
    expect(created.stderr).toMatch(/memory: keeps keys only inside one process/);
    expect((await runCli(["apikey", "--list", "--json", "--store", "memory:"])).stdout.trim()).toBe('{"keys":[]}');
  });

  let disk = "";
  afterAll(() => {
    if (disk) execFileSync("umount", [disk], { stdio: "ignore" });
  });
  it.skipIf(lacksRoot)("a create on a full disk names the file it could not write (needs root for a tmpfs mount; CI runs as root)", async () => {
    const at = join(scratch.dir(), "full");
    mkdirSync(at);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", at]);
    disk = at;
    const store = join(disk, "s");
    expect((await create(store, "first")).code).toBe(0);
    try {
      execFileSync("dd", ["if=/dev/zero", `of=${join(disk, "filler")}`, "bs=4k"], { stdio: "ignore" });
    } catch {
      // dd stops with an error once the disk is full: that is the point
    }
    const result = await create(store, "second");
    expect(result.code).toBe(3);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`cannot (write|fsync|open) ${store}/\\S+: no space left on the device`));
  });
});

const SWAP = `
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
store = sys.argv[1]; end = time.time() + float(sys.argv[2])
a = (store + "/keys").encode(); b = (store + "/keys_alt").encode(); n = 0
signal.signal(signal.SIGTERM, lambda *_: (print("swaps", n, flush=True), sys.exit(0)))
while time.time() < end:
    try: os.chmod(a if n % 2 == 0 else b, 0o777)
    except OSError: pass
    libc.syscall(316, -100, a, -100, b, 2)
    n += 1
`;
