// `service-api apikey --scan`, run as a user runs it: the built CLI over real files, folders and pipes,
// a real fs store, and the attacks a scanner meets (hostile names, loops, /proc, huge and unreadable files).
import { spawnSync } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, openSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../lib/core/secret.ts";
import { CLI, runCli, type RunResult, tempDir } from "../helpers/cli.ts";
import { AS_NOBODY, isRoot, lacksRoot, NOT_ROOT, sharedScratch } from "../helpers/users.ts";

let tmp: ReturnType<typeof tempDir>;
let store: string;
let live: { key: string; id: string; name: string };
const secrets: string[] = [];

const cli = async (...args: string[]) => check(await runCli([...args, "--store", store]));
const scanJson = async (...args: string[]) => {
  const result = await cli("apikey", "--scan", ...args, "--json");
  return { ...result, report: JSON.parse(result.stdout) };
};
/** No secret ever appears whole in what the command prints. */
function check(result: RunResult): RunResult {
  for (const secret of secrets) {
    expect(result.stdout).not.toContain(secret);
    expect(result.stderr).not.toContain(secret);
  }
  return result;
}
const create = async (name: string, ...extra: string[]) => {
  const made = JSON.parse((await cli("apikey", "--create", "--name", name, "--roles", "VIEWER", "--json", ...extra)).stdout);
  secrets.push(made.key);
  return made as { key: string; id: string; name: string };
};
const folder = (name: string, files: Record<string, string | Buffer>) => {
  const dir = join(tmp.dir, name);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  return dir;
};
const unknown = () => {
  const secret = generateSecret();
  secrets.push(secret);
  return secret;
};

beforeAll(async () => {
  tmp = tempDir("service-api-scan-");
  store = join(tmp.dir, "keys");
  live = await create("ci deploy");
});
afterAll(() => tmp.cleanup());

describe("apikey --scan", () => {
  it("reports each secret masked at file:line:column, live with its id and name, and exits 1", async () => {
    const dir = folder("repo", { "src/config.ts": `// settings\nexport const key = "${live.key}";\n`, "README.md": "no secrets here, sapi_ is our prefix\n" });
    const result = await cli("apikey", "--scan", dir);
    expect(result.code).toBe(1);
    const masked = `${live.key.slice(0, 7)}…${live.key.slice(-3)}`;
    expect(result.stdout).toBe(`${dir}/src/config.ts:2:21: ${masked} live key 'ci deploy' (id ${live.id})\n`);
    expect(result.stderr).toContain("Found 1 secret: 1 live, 0 expired, 0 unknown.");
  });

  it("tells expired and unknown secrets apart from live ones, and exits 0 when none is live", async () => {
    const short = await create("short lived", "--expires-in", "1s");
    const stranger = unknown();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const dir = folder("mixed", { "a.env": `OLD=${short.key}\nOTHER=${stranger}\n` });
    const { code, report } = await scanJson(dir);
    expect(code).toBe(0);
    expect(report).toMatchObject({ live: 0, expired: 1, unknown: 1, revoked: 0 });
    expect(report.findings.map((f: { status: string; line: number; column: number }) => [f.status, f.line, f.column])).toEqual([["expired", 1, 5], ["unknown", 2, 7]]);
    const clean = await cli("apikey", "--scan", folder("clean", { "x.txt": "nothing\n" }));
    expect([clean.code, clean.stdout]).toEqual([0, ""]);
    expect(clean.stderr).toContain("No secrets found.");
  });

  it("reads standard input with -, so a repository's history can be piped in", async () => {
    const history = `commit 1\n+const k = "${live.key}"\n-old line\n`;
    const result = check(await runCli(["apikey", "--scan", "-", "--store", store, "--json"], { input: history }));
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).findings).toEqual([
      { path: "-", line: 2, column: 13, token: `${live.key.slice(0, 7)}…${live.key.slice(-3)}`, status: "live", id: live.id, name: "ci deploy" },
    ]);
  });

  it("skips and counts .git folders, binary files, large files, links and FIFOs inside folders", async () => {
    const dir = folder("skips", {
      ".git/objects/x": live.key,
      "bin.dat": Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from(live.key)]),
      "ok.txt": "fine\n",
    });
    const big = openSync(join(dir, "big.log"), "w");
    writeSync(big, live.key, 60 * 1024 * 1024); // sparse: 60 MB without using the disk
    closeSync(big);
    symlinkSync(".", join(dir, "loop"));
    symlinkSync(join(dir, "ok.txt"), join(dir, "link.txt"));
    spawnSync("mkfifo", [join(dir, "pipe")]);
    const { code, report } = await scanJson(dir);
    expect(code).toBe(0);
    expect(report.skipped).toEqual({ git: 1, binary: 1, large: 1, links: 2, special: 1, pseudo: 0, unreadable: 0 });
    expect(report.scanned.inputs).toBe(1);
    // Named on the command line, a binary file is read.
    expect((await scanJson(join(dir, "bin.dat"))).report.live).toBe(1);
  });

  it("--revoke deletes each live key found, says so, and the audit trail says where it was found", async () => {
    const leaked = await create("leaked key");
    const dir = folder("leak", { "deploy.sh": `export KEY=${leaked.key}\n`, "copy.sh": `# ${leaked.key}\n` });
    const { code, report } = await scanJson(dir, "--revoke");
    expect(code).toBe(1);
    expect(report).toMatchObject({ live: 2, revoked: 1 });
    expect(report.findings.map((f: { revoked: boolean }) => f.revoked)).toEqual([true, true]);
    const list = JSON.parse((await cli("apikey", "--list", "--json")).stdout);
    expect(list.keys.map((k: { id: string }) => k.id)).not.toContain(leaked.id);
    const events = JSON.parse((await cli("apikey", "--audit", "--json")).stdout).events;
    expect(events.at(-1)).toMatchObject({ action: "delete", id: leaked.id, reason: `leaked: found by apikey --scan at ${dir}/copy.sh:1:3 and 1 more place` });
    // Scanned again, the secret is what the store knows it to be (as the service logs it): a revoked key's.
    const text = await cli("apikey", "--scan", dir);
    const masked = `${leaked.key.slice(0, 7)}…${leaked.key.slice(-3)}`;
    const revokedKey = `revoked key 'leaked key' (id ${leaked.id})`;
    expect([text.code, text.stdout]).toEqual([0, `${dir}/copy.sh:1:3: ${masked} ${revokedKey}\n${dir}/deploy.sh:1:12: ${masked} ${revokedKey}\n`]);
    expect(text.stderr).toContain("Found 2 secrets: 0 live, 0 expired, 2 already revoked, 0 unknown.");
    const again = await scanJson(dir);
    expect(again.report).toMatchObject({ live: 0, alreadyRevoked: 2, unknown: 0, revoked: 0 });
    expect(again.report.findings[0]).toMatchObject({ status: "revoked", id: leaked.id, name: "leaked key" });
  });

  it("finds a secret split over two lines or by a zero-width space, and says it was split", async () => {
    const dir = folder("split", {
      "a.py": `key = ("${live.key.slice(0, 30)}"\n       "${live.key.slice(30)}")\n`,
      "b.md": `${live.key.slice(0, 9)}\u200b${live.key.slice(9)}\n`,
    });
    const result = await cli("apikey", "--scan", dir);
    expect(result.code).toBe(1);
    expect(result.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(/a\.py:1:9: .* live key 'ci deploy' .*\(split across lines or by invisible characters\)$/),
      expect.stringMatching(/b\.md:1:1: .* live key 'ci deploy' .*\(split/),
    ]);
  });

  it("never lets a hostile file name reach the terminal raw", async () => {
    const evil = "evil\nfake.ts:1:1: sapi_xx…xxx unknown\x1b]0;pwned\x07\x1b[2J\u202e.txt";
    const dir = folder("hostile", { [evil]: `${unknown()}\n` });
    writeFileSync(Buffer.concat([Buffer.from(`${dir}/latin1-`), Buffer.from([0xff, 0xfe]), Buffer.from(".txt")]), `${unknown()}\n`);
    const result = await cli("apikey", "--scan", dir);
    expect(result.stdout.split("\n").filter(Boolean)).toHaveLength(2);
    expect(result.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u202e]/);
    expect(result.stdout).toContain("evil\\nfake.ts:1:1: sapi_xx…xxx unknown\\x1b]0;pwned\\x07\\x1b[2J\\u{202e}.txt:1:1:");
    expect(result.stdout).toContain("latin1-\\xff\\xfe.txt:1:1:");
    const json = await scanJson(dir);
    expect(json.stdout.slice(0, -1)).not.toMatch(/[\x00-\x1f\x7f\u202e]/); // one line, its newline last
    expect(json.report.findings.map((f: { path: string }) => f.path)).toContain(join(dir, evil));
  });

  it("skips /proc when walking, yet reads a /proc file it is given (a process's environment)", async () => {
    const started = Date.now();
    const { code, report } = await scanJson("/proc");
    expect([code, report.skipped.pseudo, report.scanned.inputs]).toEqual([0, 1, 0]);
    expect(Date.now() - started).toBeLessThan(10_000);
    const result = check(await runCli(["apikey", "--scan", "/proc/self/environ", "--store", store, "--json"], { env: { LEAKED: live.key } }));
    expect(JSON.parse(result.stdout)).toMatchObject({ live: 1, findings: [{ path: "/proc/self/environ", status: "live" }] });
  });

  it("keeps memory bounded on a 1 GB file, and places a secret at its end", async () => {
    const huge = join(tmp.dir, "huge.bin");
    const fd = openSync(huge, "w");
    writeSync(fd, `\n${live.key}\n`, 1024 * 1024 * 1024); // sparse
    closeSync(fd);
    const timed = spawnSync("/usr/bin/time", ["-f", "%M", process.execPath, CLI, "apikey", "--scan", huge, "--json", "--store", store], { encoding: "utf8", timeout: 120_000 });
    expect(timed.status).toBe(1);
    expect(JSON.parse(timed.stdout).findings).toMatchObject([{ line: 2, column: 1, status: "live" }]);
    const peakKb = Number(timed.stderr.trim().split("\n").at(-1));
    expect(peakKb).toBeLessThan(150 * 1024);
  }, 150_000);

  it("refuses a path that does not exist (exit 2) and --url (a found secret is never sent anywhere)", async () => {
    const missing = await cli("apikey", "--scan", join(tmp.dir, "nope"));
    expect([missing.code, missing.stderr]).toEqual([2, `Error: No such file or folder: ${join(tmp.dir, "nope")}\n`]);
    const remote = check(await runCli(["apikey", "--scan", ".", "--url", "http://127.0.0.1:9"]));
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain("not through --url");
    const stray = await cli("apikey", "--list", "somefile");
    expect([stray.code, stray.stderr]).toEqual([2, "Error: --list takes no paths (got 'somefile'); only --scan does\n"]);
  });
});

describe.skipIf(lacksRoot)(`apikey --scan as another user (${isRoot ? "root" : NOT_ROOT})`, () => {
  const shared = sharedScratch("service-api-scan-user-");

  it("counts and names a file it may not read, and goes on", () => {
    const dir = join(shared.dir(), "tree");
    mkdirSync(join(dir, "private"), { recursive: true });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, "secret.txt"), `${live.key}\n`, { mode: 0o600 });
    writeFileSync(join(dir, "open.txt"), "nothing\n", { mode: 0o644 });
    chmodSync(join(dir, "private"), 0o700);
    const run = spawnSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, CLI, "apikey", "--scan", dir, "--json", "--store", "memory:"], { encoding: "utf8", timeout: 30_000 });
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.skipped.unreadable).toBe(2);
    expect(report.unreadable).toEqual([`${dir}/secret.txt (EACCES)`, `${dir}/private (EACCES)`]);
    expect(report.scanned.inputs).toBe(1);
  });
});
