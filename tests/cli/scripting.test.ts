// The CLI as scripts and published Unraid scripts use it: short flags, idempotent create and
// delete, exit statuses that tell a broken environment apart, secrets to files and dotenv, changing a
// key without rotating it, flags that do not apply, typos, help, and a list read by `head`.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT, type RunResult, runCli, tempDir } from "../helpers/cli.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";
import { ACTIONS, RESOURCES, ROLES } from "../../lib/core/model.ts";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import { generateSecret } from "../../lib/core/secret.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let stores = 0;
/** A CLI bound to a fresh fs store. */
function fresh() {
  const store = join(tmp.dir, `keys-${++stores}`);
  return Object.assign((...args: string[]) => runCli(["apikey", ...args, "--store", store]), { store });
}
const json = (r: RunResult) => JSON.parse(r.stdout);
const names = async (cli: ReturnType<typeof fresh>) => json(await cli("--list", "--json")).keys.map((k: { name: string }) => k.name);

describe("Unraid's short flags", () => {
  it("-r, -p and -d are --roles, --permissions and --description", async () => {
    const cli = fresh();
    const made = await cli("--create", "--name", "x", "-r", "admin", "-p", "docker:read_any", "-d", "007", "--json");
    expect(made.code, made.stderr).toBe(0);
    const [key] = json(await cli("--list", "--json")).keys;
    expect(key).toMatchObject({ name: "x", roles: ["ADMIN"], description: "007", permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
  });

  it("-h prints help and -v the version alone, both on stdout with exit 0", async () => {
    const help = await runCli(["-h"]);
    expect([help.code, help.stderr]).toEqual([0, ""]);
    expect(help.stdout).toContain("--create");
    const version = await runCli(["-v"]);
    expect([version.code, version.stdout]).toEqual([0, `${JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version}\n`]);
    expect((await runCli(["--version"])).stdout).toBe(version.stdout);
  });
});

describe("idempotent scripts and exit statuses", () => {
  it("--create --if-not-exists creates once, then exits 0 with {name, id, created:false} and no secret", async () => {
    const cli = fresh();
    const first = await cli("--create", "--name", "ci", "-r", "VIEWER", "--if-not-exists", "--json");
    expect(first.code).toBe(0);
    expect(Object.keys(json(first))).toEqual(["key", "name", "id", "created"]);
    expect(json(first).created).toBe(true);
    const again = await cli("--create", "--name", "ci", "-r", "ADMIN", "--if-not-exists", "--json");
    expect(again.code).toBe(0);
    expect(json(again)).toEqual({ name: "ci", id: json(first).id, created: false });
    expect(again.stdout).not.toContain("sapi_");
    const [key] = json(await cli("--list", "--json")).keys;
    expect([key.id, key.roles]).toEqual([json(first).id, ["VIEWER"]]); // unchanged
    const plain = await cli("--create", "--name", "ci", "-r", "ADMIN", "--if-not-exists");
    expect([plain.code, plain.stdout]).toEqual([0, ""]);
    expect(plain.stderr).toContain("already exists");
  });

  it("--delete --if-exists exits 0 when there is nothing to delete; without it, 1", async () => {
    const cli = fresh();
    const empty = await cli("--delete", "--name", "gone", "--if-exists", "--json");
    expect(empty.code).toBe(0);
    expect(json(empty)).toMatchObject({ deleted: 0, message: "No API keys found to delete" });
    await cli("--create", "--name", "other", "-r", "GUEST");
    const missing = await cli("--delete", "--name", "gone", "--if-exists", "--json");
    expect([missing.code, json(missing).deleted]).toEqual([0, 0]);
    expect((await cli("--delete", "--name", "gone")).code).toBe(1);
    const real = await cli("--delete", "--name", "other", "--if-exists", "--json");
    expect([real.code, json(real).deleted]).toEqual([0, 1]);
  });

  it("an unreachable store exits 3, apart from name taken and nothing to delete (1)", async () => {
    const cli = fresh();
    await cli("--create", "--name", "ci", "-r", "GUEST");
    expect((await cli("--create", "--name", "ci", "-r", "GUEST")).code).toBe(1);
    expect((await cli("--delete", "--name", "nope")).code).toBe(1);
    for (const args of [["--list"], ["--delete", "--name", "ci", "--if-exists"], ["--create", "--name", "ci", "-r", "GUEST", "--if-not-exists"]]) {
      const down = await runCli(["apikey", ...args, "--json", "--store", "redis://127.0.0.1:1/0"]);
      expect(down.code, down.stderr).toBe(3);
      expect(json(down).code).toBe("STORE_UNAVAILABLE");
    }
    // A well-formed key (one that is no key is refused before anything is sent, exit 1).
    const remote = await runCli(["apikey", "--list", "--url", "http://127.0.0.1:1"], { env: { SERVICE_API_KEY: generateSecret() } });
    expect(remote.code).toBe(3);
  });
});

describe("secrets to files", () => {
  it("--output writes the secret to a new 0600 file and nothing secret to stdout", async () => {
    const cli = fresh();
    const file = join(tmp.dir, "plain.key");
    const made = await cli("--create", "--name", "f", "-r", "GUEST", "--output", file);
    expect([made.code, made.stdout]).toEqual([0, ""]);
    expect(made.stderr).toContain(file);
    expect(readFileSync(file, "utf8")).toMatch(/^sapi_\w+\n$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const asJson = join(tmp.dir, "made.json");
    expect((await cli("--create", "--name", "j", "-r", "GUEST", "--json", "--output", asJson)).stdout).toBe("");
    expect(Object.keys(JSON.parse(readFileSync(asJson, "utf8")))).toEqual(["key", "name", "id"]);
  });

  it("refuses an existing file or a link in its place unless --force, before creating anything", async () => {
    const cli = fresh();
    const file = join(tmp.dir, "taken.key");
    writeFileSync(file, "old\n", { mode: 0o644 });
    const link = join(tmp.dir, "link.key");
    symlinkSync(join(tmp.dir, "elsewhere.key"), link);
    for (const target of [file, link]) {
      const refused = await cli("--create", "--name", "f", "-r", "GUEST", "--output", target);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("--force");
    }
    expect(readFileSync(file, "utf8")).toBe("old\n");
    expect(existsSync(join(tmp.dir, "elsewhere.key"))).toBe(false);
    expect(await names(cli)).toEqual([]);
    const forced = await cli("--create", "--name", "f", "-r", "GUEST", "--output", file, "--force");
    expect(forced.code).toBe(0);
    expect(readFileSync(file, "utf8")).toMatch(/^sapi_/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const relinked = await cli("--create", "--name", "g", "-r", "GUEST", "--output", link, "--force");
    expect(relinked.code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(false); // replaced, not followed
    expect(existsSync(join(tmp.dir, "elsewhere.key"))).toBe(false);
  });

  it("a folder the file cannot be made in is refused before anything is created or replaced (exit 2)", async () => {
    const cli = fresh();
    const kept = await cli("--create", "--name", "kept", "-r", "GUEST", "--json");
    const before = json(kept).key;
    writeFileSync(join(tmp.dir, "plain-file"), "");
    const targets = [join(tmp.dir, "no-such-dir", "k"), join(tmp.dir, "plain-file", "k"), join(tmp.dir, "no-such-dir") + "/", ""];
    for (const target of targets) {
      for (const args of [["--name", "new"], ["--name", "kept", "--overwrite"]]) {
        const result = await cli("--create", ...args, "-r", "GUEST", "--output", target);
        expect(result.code, `${target} ${args}`).toBe(2);
        expect(result.stderr.trim().split("\n")).toHaveLength(1);
        expect(result.stderr).toMatch(/^Error: --output .*: (cannot create a file in .* \(no such folder\)|a part of the path is not a folder|name a file, not a folder)/);
      }
    }
    expect(await names(cli)).toEqual(["kept"]);
    // The key --overwrite would have replaced still works: its secret is the one printed first.
    const store = await openKeyStore(parseStoreSpec(cli.store), () => {});
    expect((await store.verify(before))?.name).toBe("kept");
    await store.close?.();
  });

  it("--if-not-exists --output can run twice: the second run finds the key and leaves the file alone", async () => {
    const cli = fresh();
    const file = join(tmp.dir, "twice.key");
    const first = await cli("--create", "--name", "twice", "-r", "VIEWER", "--if-not-exists", "--output", file);
    expect(first.code).toBe(0);
    const secret = readFileSync(file, "utf8");
    const second = await cli("--create", "--name", "twice", "-r", "VIEWER", "--if-not-exists", "--output", file, "--json");
    expect(second.code).toBe(0);
    expect(json(second)).toMatchObject({ name: "twice", created: false });
    expect(readFileSync(file, "utf8")).toBe(secret);
  });

  it("--force with a long file name: the temporary file beside it has a name of its own length", async () => {
    const cli = fresh();
    const file = join(tmp.dir, "k".repeat(250));
    writeFileSync(file, "old\n");
    const result = await cli("--create", "--name", "long", "-r", "GUEST", "--output", file, "--force");
    expect(result.code).toBe(0);
    expect(readFileSync(file, "utf8")).toMatch(/^sapi_/);
  });

  it("a path holding a newline is shown escaped: the message stays one line", async () => {
    const cli = fresh();
    const result = await cli("--create", "--name", "nl", "-r", "GUEST", "--output", join(tmp.dir, "no\nsuch", "k"));
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("no\\nsuch");
  });

  it.skipIf(process.getuid?.() !== 0 && !process.env.CI)("--output on a full disk: the create is undone and no empty file is left, so a retry works (root: tmpfs)", async () => {
    const cli = fresh();
    const disk = join(tmp.dir, "full-disk");
    mkdirSync(disk);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk]);
    try {
      try {
        execFileSync("dd", ["if=/dev/zero", `of=${join(disk, "filler")}`, "bs=4k"], { stdio: "ignore" });
      } catch {
        // dd stops with an error once the disk is full: that is the point
      }
      const target = join(disk, "k");
      const result = await cli("--create", "--name", "full", "-r", "GUEST", "--output", target);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/\(ENOSPC\)\. The key was deleted again, so nothing changed/);
      expect(existsSync(target)).toBe(false);
      expect(await names(cli)).toEqual([]);
      rmSync(join(disk, "filler"));
      expect((await cli("--create", "--name", "full", "-r", "GUEST", "--output", target)).code).toBe(0);
      expect(readFileSync(target, "utf8")).toMatch(/^sapi_/);
    } finally {
      execFileSync("umount", [disk]);
    }
  });

  it.skipIf(process.platform !== "linux")("a file the check cannot foresee failing undoes the create (exit 1)", async () => {
    const cli = fresh();
    // /proc passes the folder check as root but takes no new file: only the write tells.
    const result = await cli("--create", "--name", "lost", "-r", "GUEST", "--output", "/proc/service-api-test.key");
    expect([1, 2]).toContain(result.code);
    if (result.code === 1) expect(result.stderr).toMatch(/Could not write the new key's secret to \/proc\/service-api-test\.key \(ENOENT\)\. The key was deleted again/);
    expect(await names(cli)).toEqual([]);
  });

  it("--format env prints dotenv lines that a shell can source, leaving SERVICE_API_KEY (remote mode's key) alone", async () => {
    const cli = fresh();
    const made = await cli("--create", "--name", "env key", "-r", "GUEST", "--format", "env");
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^SERVICE_API_KEY_SECRET=sapi_\w+\nSERVICE_API_KEY_ID=[0-9a-f-]{36}\nSERVICE_API_KEY_NAME='env key'\n$/);
    const file = join(tmp.dir, "made.env");
    writeFileSync(file, made.stdout);
    const sourced = spawnSync("sh", ["-c", `. ${file} && printf '%s|%s|%s' "$SERVICE_API_KEY_SECRET" "$SERVICE_API_KEY_NAME" "$SERVICE_API_KEY"`], {
      encoding: "utf8",
      env: { ...process.env, SERVICE_API_KEY: "the key remote mode uses" },
    });
    expect(sourced.stdout).toBe(`${/SERVICE_API_KEY_SECRET=(\S+)/.exec(made.stdout)![1]}|env key|the key remote mode uses`);
  });
});

describe("changing keys without rotating them", () => {
  let server: ServerProcess;
  const served = join(tmp.dir, "served");
  let admin: string;
  beforeAll(async () => {
    server = await startServer({ store: served });
    admin = json(await runCli(["apikey", "--create", "--name", "admin", "-r", "ADMIN", "--json", "--store", served])).key;
  });
  afterAll(async () => await server?.stop("SIGKILL").catch(() => {}));

  it.each(["local", "remote"])("--update replaces roles, permissions, description and name, %s", async (where) => {
    const cli = where === "local"
      ? (...args: string[]) => runCli(["apikey", ...args, "--store", served])
      : (...args: string[]) => runCli(["apikey", ...args, "--url", server.url], { env: { SERVICE_API_KEY: admin, SERVICE_API_STORE: undefined } });
    const name = `ci ${where}`;
    const made = json(await cli("--create", "--name", name, "-r", "VIEWER", "-d", "old", "--json"));
    const updated = await cli("--update", "--name", name, "-r", "GUEST", "-p", "logs:read_any", "-d", "new", "--rename", `${name} two`, "--json");
    expect(updated.code, updated.stderr).toBe(0);
    expect(json(updated)).toMatchObject({ id: made.id, name: `${name} two`, roles: ["GUEST"], description: "new", permissions: [{ resource: "LOGS", actions: ["READ_ANY"] }] });
    const me = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${made.key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ me { name roles } }" }),
    });
    expect((await me.json()).data.me).toEqual({ name: `${name} two`, roles: ["GUEST"] }); // same secret
    expect((await cli("--update", "--name", "nobody here", "-r", "GUEST")).code).toBe(1);
    expect((await cli("--update", "--name", `${name} two`, "--rename", "admin")).code).toBe(1); // taken
    const invalid = await cli("--update", "--name", `${name} two`, "-r", "ROOT");
    expect(invalid.code).toBe(2);
    expect((await cli("--update", "--name", `${name} two`)).code).toBe(2); // nothing to change
    const byId = await cli("--delete", "--id", made.id, "--json");
    expect(json(byId)).toEqual({ deleted: 1, keys: [{ id: made.id, name: `${name} two` }] });
    const again = await cli("--delete", "--id", made.id, "--json");
    expect([again.code, json(again).deleted]).toEqual([1, 0]);
    expect((await cli("--delete", "--id", made.id, "--if-exists")).code).toBe(0);
  });
});

describe("conventions", () => {
  it.each([
    [["--list", "--name", "x"], "--list does not take --name"],
    [["--delete", "--name", "x", "--roles", "ADMIN"], "--delete does not take --roles"],
    [["--create", "--name", "x", "-r", "ADMIN", "--rename", "y"], "--create does not take --rename"],
    [["--create", "--name", "x", "-r", "ADMIN", "--overwrite", "--if-not-exists"], "not both"],
    [["--crate", "--name", "x"], "Did you mean '--create'?"],
  ])("apikey %j exits 2: %s", async (args, message) => {
    const cli = fresh();
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe("");
  });

  it("a mistyped command gets a suggestion", async () => {
    const result = await runCli(["apikye", "--list"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Did you mean 'apikey'?");
  });

  it("with no arguments the CLI and the command print their help on stdout, exit 0", async () => {
    for (const args of [[], ["apikey"]]) {
      const result = await runCli(args);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      expect(result.stdout).toContain("--create");
    }
  });

  it("a bare service-api prints a short usage that fits one screen and points to --help", async () => {
    const { code, stdout } = await runCli([]);
    const lines = stdout.trimEnd().split("\n");
    expect(code).toBe(0);
    expect(lines.length).toBeLessThanOrEqual(25);
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(stdout).toContain("Run 'service-api --help' for every command and flag.");
  });

  it("a mode spelled as a word (apikey create) is pointed at its flag", async () => {
    for (const verb of ["create", "Delete", "rotate"]) {
      const result = await runCli(["apikey", verb, "--name", "x"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`Error: '${verb.toLowerCase()}' is a flag here: did you mean 'service-api apikey --${verb.toLowerCase()}'? Run 'service-api apikey --help'.\n`);
    }
  });

  it("--help lists the environment, the exit statuses, and every role, resource and action", async () => {
    const { stdout } = await runCli(["--help"]);
    for (const word of ["SERVICE_API_STORE", "SERVICE_API_URL", "SERVICE_API_KEY", "LOG_LEVEL", "PORT", "HOST", ...ROLES, ...RESOURCES, ...ACTIONS]) {
      expect(stdout).toMatch(new RegExp(`\\b${word}\\b`));
    }
    for (const status of [0, 1, 2, 3, 130]) expect(stdout).toMatch(new RegExp(`^  ${status} `, "m"));
    expect(stdout.split("\n").filter((line) => line.length > 80)).toEqual([]);
  });

  it("every flag and environment variable the docs document appears in --help", async () => {
    const cliDoc = readFileSync(join(ROOT, "docs/cli.md"), "utf8");
    const operations = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
    const reference = cliDoc.slice(cliDoc.indexOf("## Synopsis"), cliDoc.indexOf("## Output"));
    const configuration = operations.slice(operations.indexOf("## Configuration"), operations.indexOf("## Several hosts"));
    // The synopsis block and the first column of the flag table; the first column of the Configuration table.
    const synopsis = reference.slice(reference.indexOf("```"), reference.indexOf("```", reference.indexOf("```") + 3));
    const firstColumns = (section: string) => section.split("\n").filter((l) => l.startsWith("| ")).map((l) => l.split("|")[1]).join("\n");
    const flags = new Set(`${synopsis}\n${firstColumns(reference)}`.match(/(?<![\w-])--?[a-z][\w-]*/g));
    const variables = new Set(firstColumns(configuration).match(/\b[A-Z][A-Z_]{2,}\b/g));
    expect(flags.size).toBeGreaterThan(15);
    expect(variables).toContain("SERVICE_API_STORE");
    const { stdout } = await runCli(["--help"]);
    for (const flag of flags) expect(stdout, flag).toMatch(new RegExp(`(^|[\\s,(\\[|])${flag}\\b`, "m"));
    for (const variable of variables) expect(stdout, variable).toMatch(new RegExp(`\\b${variable}\\b`));
  });

  it("apikey --list into a reader that has gone away exits 0 without an error", async () => {
    const cli = fresh();
    for (const name of ["a", "b", "c"]) await cli("--create", "--name", name, "-r", "GUEST");
    const store = join(tmp.dir, `keys-${stores}`);
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, "apikey", "--list", "--store", store], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.destroy(); // `| head -0`: the reader is gone before the list is written
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    expect(result).toEqual({ code: 0, stderr: "" });
  });
});

describe("containers without a home", () => {
  it.skipIf(process.getuid?.() !== 0 && !process.env.CI)("HOME=/ and an arbitrary UID: the message says to set SERVICE_API_STORE", () => {
    const result = spawnSync("setpriv", ["--reuid", "54321", "--regid", "54321", "--clear-groups", process.execPath, CLI, "apikey", "--create", "--name", "x", "-r", "GUEST"], {
      env: { PATH: process.env.PATH, HOME: "/" },
      cwd: "/",
      encoding: "utf8",
    });
    expect(result.status, result.stderr).toBe(3);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("/.config");
    expect(result.stderr).toContain("set SERVICE_API_STORE=fs:<dir>");
  });
});
