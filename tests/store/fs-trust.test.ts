// Whose the file store is, and what it trusts: a store directory left open to others is tightened or
// refused, entries planted by another user or as symbolic links are refused (never followed, never
// authenticated), root working on a service's store leaves it the service's, and any store path,
// umask or read-only disk ends in bounded time with one clear line.
import { chmodSync, cpSync, mkdirSync, readdirSync, renameSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT, runCli, type RunResult } from "../helpers/cli.ts";
import { AS_NOBODY, lacksRoot, NOBODY, NOT_ROOT, sharedScratch } from "../helpers/users.ts";
import { gql, type ServerProcess } from "../helpers/server.ts";


/** Runs a command as the second user and waits for it. */
const asNobody = (...command: string[]) => execFileSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), ...command]);

/** Runs the CLI through `prefix` (setpriv, sh -c with a umask): as another user or environment. */
function runAs(prefix: string[], args: string[], timeoutMs = 20_000): Promise<RunResult> {
  const command = [...prefix, process.execPath, CLI, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command.slice(1), {
      env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: timeoutMs,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const secretOf = (result: RunResult) => /sapi_[0-9A-Za-z]{49}/.exec(result.stdout)?.[0] ?? "";
const create = (store: string, name: string) => runCli(["apikey", "--create", "--name", name, "--roles", "ADMIN", "--store", store]);
const list = (store: string) => runCli(["apikey", "--list", "--store", store]);

/** One line on stderr, no stack trace. */
function expectOneLine(result: RunResult, pattern: RegExp) {
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

/** Every directory and file under `dir`, with owner and mode. */
function walk(dir: string, out: Array<{ path: string; uid: number; mode: number; dir: boolean }> = []) {
  const stat = statSync(dir);
  out.push({ path: dir, uid: stat.uid, mode: stat.mode & 0o777, dir: true });
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    else out.push({ path, uid: statSync(path).uid, mode: statSync(path).mode & 0o777, dir: false });
  }
  return out;
}

const scratch = sharedScratch("service-api-trust-");
const fresh = scratch.fresh;

describe("a loose or foreign store directory", () => {
  it("tightens a store directory of mode 0777 that we own to 0700 before using it", async () => {
    const store = fresh();
    mkdirSync(store);
    chmodSync(store, 0o777);
    const made = await create(store, "first");
    expect(made.code).toBe(0);
    for (const entry of walk(store)) if (entry.dir) expect(entry.mode, entry.path).toBe(0o700);
  });

  it.skipIf(lacksRoot)(`refuses another user acting on a store it does not own, naming the path (${NOT_ROOT})`, async () => {
    const store = fresh();
    mkdirSync(store);
    chmodSync(store, 0o777); // as loose as it gets: the user could write it, and still must not use it
    const result = await runAs(AS_NOBODY, ["apikey", "--create", "--name", "evil", "--roles", "ADMIN", "--store", store]);
    expect(result.code).toBe(3);
    expectOneLine(result, new RegExp(`${store} belongs to uid 0, not to you \\(uid ${NOBODY}\\)`));
    expect(readdirSync(store)).toEqual([]);
  });

  it.skipIf(lacksRoot)(`refuses entries another user planted while the store was open, and their ADMIN key never works (${NOT_ROOT})`, async () => {
    // The other user mints a key in a store of its own and copies its entries into ours, which is 0777.
    const own = `${fresh()}-nobody`;
    mkdirSync(own, { mode: 0o700 });
    execFileSync("chown", [`${NOBODY}:${NOBODY}`, own]);
    const minted = await runAs(AS_NOBODY, ["apikey", "--create", "--name", "evil", "--roles", "ADMIN", "--store", own]);
    expect(minted.code, minted.stderr).toBe(0);
    const store = fresh();
    mkdirSync(store);
    chmodSync(store, 0o777);
    asNobody("cp", "-r", join(own, "names"), join(own, "keys"), join(own, "secrets"), store);

    const listed = await list(store);
    expect(listed.code).toBe(3);
    expectOneLine(listed, new RegExp(`${store}/(names|keys|secrets) belongs to uid ${NOBODY}, not to the store's owner \\(uid 0\\)`));
    expect(listed.stdout).not.toContain("evil");
    // Left as found rather than tightened: a tightened folder is trusted without a scan, so the next run
    // would take the planted entries for the owner's. Left open, every run refuses until someone looks.
    expect(statSync(store).mode & 0o777).toBe(0o777);
    expect((await list(store)).code).toBe(3);
  });

  it("never tightens a directory that is not only a store: one holding other files, or a shared (sticky) one", async () => {
    const busy = fresh();
    mkdirSync(busy);
    chmodSync(busy, 0o755);
    writeFileSync(join(busy, "notes.txt"), "");
    const shared = fresh();
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    for (const [store, mode, why] of [[busy, 0o755, /holds files that are not a key store's \("notes.txt"\)/], [shared, 0o1777, /is a shared directory \(mode 1777, sticky\)/]] as const) {
      const result = await create(store, "x");
      expect(result.code).toBe(3);
      expectOneLine(result, why);
      expect(result.stderr).toContain(`chmod 700 ${store}`);
      expect(statSync(store).mode & 0o7777).toBe(mode);
    }
  });

  it.skipIf(lacksRoot)(`refuses an entry another user slipped into an entry folder left open, naming it (${NOT_ROOT})`, async () => {
    const store = fresh();
    expect((await create(store, "real")).code).toBe(0);
    chmodSync(store, 0o755); // reachable by others, and names/ open to them
    chmodSync(join(store, "names"), 0o777);
    asNobody("sh", "-c", `echo x > ${join(store, "names", "0".repeat(64))}`);
    const listed = await list(store);
    expect(listed.code).toBe(3);
    expectOneLine(listed, new RegExp(`names/${"0".repeat(64)} belongs to uid ${NOBODY}, not to the store's owner \\(uid 0\\), and its directory was open`));
    expect(statSync(join(store, "names")).mode & 0o777).toBe(0o777); // left as found: the next run refuses too
    expect((await list(store)).code).toBe(3);
  });

  it("reads a FIFO in place of an entry as nothing instead of blocking forever", async () => {
    const store = fresh();
    expect((await create(store, "real")).code).toBe(0);
    const [entry] = readdirSync(join(store, "names"));
    execFileSync("rm", [join(store, "names", entry)]);
    execFileSync("mkfifo", ["-m", "600", join(store, "names", entry)]);
    const result = await runCli(["apikey", "--delete", "--name", "real", "--store", store], { timeoutMs: 10_000 });
    expect(result.signal, "killed after 10 s").toBeNull();
    expect(result.code).toBe(1);
  });

  it("refuses a planted symbolic link in place of an entry or an entry folder, and never follows it", async () => {
    const store = fresh();
    const decoy = fresh();
    expect((await create(decoy, "decoy")).code).toBe(0);
    expect((await create(store, "real")).code).toBe(0);
    // An entry: the name index of 'decoy' linked into our store.
    const [entry] = readdirSync(join(decoy, "names"));
    symlinkSync(join(decoy, "names", entry), join(store, "names", entry));
    const viaEntry = await runCli(["apikey", "--delete", "--name", "decoy", "--store", store]);
    expect(viaEntry.code).toBe(3);
    expectOneLine(viaEntry, /names\/[0-9a-f]{64} is a symbolic link, which the store never makes/);
    // A folder: keys/ replaced by a link to the decoy's.
    const store2 = fresh();
    expect((await create(store2, "real")).code).toBe(0);
    renameSync(join(store2, "keys"), join(store2, "keys-moved"));
    symlinkSync(join(decoy, "keys"), join(store2, "keys"));
    const viaFolder = await list(store2);
    expect(viaFolder.code).toBe(3);
    expectOneLine(viaFolder, /keys is not a directory but a symbolic link/);
  });
});

describe("several Unix users on one store", () => {
  let server: ServerProcess | undefined;
  afterAll(async () => void (await server?.stop()));

  it.skipIf(lacksRoot)(`root's CLI on a service's store acts as the service's user: creates authenticate, deletes revoke (${NOT_ROOT})`, async () => {
    const store = fresh();
    mkdirSync(store, { mode: 0o700 });
    execFileSync("chown", [`${NOBODY}:${NOBODY}`, store]);
    server = await startAs(AS_NOBODY, store);

    const made = await create(store, "by root");
    expect(made.code, made.stderr).toBe(0);
    expect((await gql(server.url, "{ me { name } }", { key: secretOf(made) })).body?.data?.me?.name).toBe("by root");
    const deleted = await runCli(["apikey", "--delete", "--name", "by root", "--store", store]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await gql(server.url, "{ me { name } }", { key: secretOf(made) })).status).toBe(401);
    const again = await create(store, "after");
    expect((await gql(server.url, "{ me { name } }", { key: secretOf(again) })).status).toBe(200);
    for (const entry of walk(store)) expect(entry.uid, entry.path).toBe(NOBODY);
  });
});

/** Starts the service through `prefix` (as another user) and waits for its URL. */
function startAs(prefix: string[], store: string): Promise<ServerProcess> {
  const command = [...prefix, process.execPath, CLI, "serve", "--port", "0", "--store", store];
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { ...process.env, LOG_LEVEL: undefined } });
  let stderr = "";
  child.stdout.resume();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 20_000);
    child.on("exit", (code) => reject(new Error(`server exited (${code}): ${stderr}`)));
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[1],
        child,
        stderr: () => stderr,
        stop: () => new Promise((done) => (child.once("exit", (code, signal) => done({ code, signal })), child.kill("SIGTERM"))),
      });
    });
  });
}

describe("any store path, umask or disk ends in bounded time with one clear line", () => {
  it("fails on --store /proc/self within seconds instead of spinning", async () => {
    for (const args of [["--create", "--name", "x", "--roles", "ADMIN"], ["--list"]]) {
      const result = await runCli(["apikey", ...args, "--store", "/proc/self"], { timeoutMs: 10_000 });
      expect(result.signal, "killed after 10 s").toBeNull();
      expect(result.code).toBe(3);
      expectOneLine(result, /\/proc\/self is open to other users \(mode 0555\) and holds files that are not a key store's/);
    }
    const below = await runCli(["apikey", "--create", "--name", "x", "--roles", "ADMIN", "--store", "/proc/self/keys"], { timeoutMs: 10_000 });
    expect(below.signal).toBeNull();
    expect(below.code).toBe(3);
    expectOneLine(below, /cannot mkdir \/proc\/self\/keys/);
  });

  it("refuses a --store that is a file with exit 2 and one line, even when its name holds a newline", async () => {
    const file = `${fresh()}-file\nsecond line`;
    writeFileSync(file, "");
    for (const store of [file, join(file, "keys")]) {
      const result = await create(store, "x");
      expect(result.code).toBe(2);
      expectOneLine(result, /^Error: Store path .* is not a directory\. Choose a directory for --store\./);
    }
    // A loop of symbolic links, and a path too long for the system: bad usage too, not a hang or a trace.
    const loop = `${fresh()}-loop`;
    symlinkSync(`${loop}-b`, loop);
    symlinkSync(loop, `${loop}-b`);
    for (const store of [loop, join(loop, "keys"), join(scratch.dir(), "a/".repeat(3000))]) {
      const result = await create(store, "x");
      expect(result.code, store.slice(0, 80)).toBe(2);
      expectOneLine(result, /^Error: Invalid --store: cannot \w+ \//);
    }
  });

  it.skipIf(lacksRoot)(`works under umask 0277 for a user without root's overrides (${NOT_ROOT})`, async () => {
    const parent = fresh();
    mkdirSync(parent, { mode: 0o755 });
    execFileSync("chown", [`${NOBODY}:${NOBODY}`, parent]);
    const store = join(parent, "a", "b", "keys"); // missing levels too
    const sh = (args: string[]) => runAs([...AS_NOBODY, "sh", "-c", 'umask 0277; exec "$@"', "sh"], args);
    const made = await sh(["apikey", "--create", "--name", "masked", "--roles", "ADMIN", "--store", store]);
    expect(made.code, made.stderr).toBe(0);
    expect((await sh(["apikey", "--list", "--store", store])).stdout).toContain("masked");
    expect((await sh(["apikey", "--delete", "--name", "masked", "--store", store])).code).toBe(0);
    expect((await sh(["apikey", "--create", "--name", "kept", "--roles", "ADMIN", "--store", store])).code).toBe(0);
    for (const entry of walk(store)) expect(entry.mode, entry.path).toBe(entry.dir ? 0o700 : 0o600);
  });

  describe.skipIf(lacksRoot)(`a read-only store (${NOT_ROOT})`, () => {
    const mount = join("/tmp", `service-api-ro-${process.pid}`);
    beforeAll(() => {
      mkdirSync(mount, { recursive: true });
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mount]);
    });
    afterAll(() => {
      execFileSync("umount", [mount]);
      execFileSync("rmdir", [mount]);
    });

    it("lists keys, and refuses a create or delete with one line naming the path and the fix", async () => {
      expect((await create(mount, "kept")).code).toBe(0);
      execFileSync("mount", ["-o", "remount,ro", mount]);
      const listed = await list(mount);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain("kept");
      for (const args of [["--create", "--name", "new", "--roles", "ADMIN"], ["--delete", "--name", "kept"]]) {
        const result = await runCli(["apikey", ...args, "--store", mount]);
        expect(result.code).toBe(3);
        expectOneLine(result, new RegExp(`${mount}/\\S+: the file system is read-only\\. Remount it read-write, or use another --store`));
      }
    });
  });
});
