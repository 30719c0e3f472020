// Where a secret may appear: on stdout of the create that made it, once, and nowhere else. Not in any
// file of the store (not even its base62 body), not in any stderr line at any log level, not in an
// error message when a key is pasted into the wrong flag; and the store is 0600 files in 0700
// directories, whatever the umask, also after overwrites and deletes.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSecret } from "../../lib/core/secret.ts";
import { CLI, runCli, type RunResult, tempDir } from "../helpers/cli.ts";

const SECRET_SHAPE = /sapi_[0-9A-Za-z]{8}/i;
const LEVELS = ["trace", "debug", "info", "warn", "error"] as const;

let tmp: ReturnType<typeof tempDir>;
let store: string;
const secrets: string[] = []; // every secret the CLI printed
const runs: Array<{ level: string; args: string[]; result: RunResult }> = [];

async function run(level: string, ...args: string[]): Promise<RunResult> {
  const result = await runCli(["apikey", ...args, "--store", store], { env: { LOG_LEVEL: level } });
  runs.push({ level, args, result });
  for (const match of result.stdout.matchAll(/sapi_[0-9A-Za-z]{49}/g)) secrets.push(match[0]);
  return result;
}

/** Every file under the store, temporary files included. */
function walk(dir: string, out: { dirs: string[]; files: string[] } = { dirs: [], files: [] }) {
  out.dirs.push(dir);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    else out.files.push(path);
  }
  return out;
}

function expectPrivate(dir: string) {
  const { dirs, files } = walk(dir);
  expect(files.length).toBeGreaterThan(0);
  for (const d of dirs) expect((statSync(d).mode & 0o777).toString(8), d).toBe("700");
  for (const f of files) expect((statSync(f).mode & 0o777).toString(8), f).toBe("600");
}

beforeAll(async () => {
  tmp = tempDir();
  store = join(tmp.dir, "keys");
  // A run of everything the CLI does, at every log level, including failures.
  for (const [i, level] of LEVELS.entries()) {
    await run(level, "--create", "--name", `key ${i}`, "--roles", "ADMIN", "--json");
    await run(level, "--create", "--name", `plain ${i}`, "--permissions", "DOCKER:READ_ANY");
    await run(level, "--create", "--name", `key ${i}`, "--roles", "GUEST", "--overwrite", "--json");
    await run(level, "--create", "--name", `plain ${i}`, "--roles", "VIEWER", "--overwrite");
    await run(level, "--create", "--name", `key ${i}`, "--roles", "GUEST"); // taken
    await run(level, "--create", "--name", `gone ${i}`, "--roles", "GUEST", "--json");
    await run(level, "--delete", "--name", `gone ${i}`, "--json");
    await run(level, "--delete", "--name", `gone ${i}`); // not found
    await run(level, "--list");
    await run(level, "--list", "--json");
  }
}, 120_000);
afterAll(() => tmp?.cleanup());

describe("secret hygiene", () => {
  it("the run printed every secret it created, once", () => {
    expect(secrets).toHaveLength(LEVELS.length * 5);
    expect(new Set(secrets).size).toBe(secrets.length);
    // The log levels really were on: debug and trace show the store and decisions.
    const debug = runs.find((r) => r.level === "debug")!.result.stderr;
    expect(debug).toContain("store: fs:");
  });

  it("no file in the store holds a secret or its base62 body, temporary files included", () => {
    const { files } = walk(store);
    const contents = files.map((f) => readFileSync(f, "latin1"));
    for (const secret of secrets) {
      const body = secret.slice(5, 48);
      for (const text of contents) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(body);
        expect(text).not.toContain(body.slice(0, 16));
        expect(text).not.toContain(body.slice(-16));
      }
    }
    for (const text of contents) expect(text).not.toMatch(SECRET_SHAPE);
  });

  it("no stderr line at any log level contains a secret, and stdout carries one only on create", () => {
    for (const { args, result } of runs) {
      expect(result.stderr).not.toMatch(SECRET_SHAPE);
      for (const secret of secrets) expect(result.stderr).not.toContain(secret.slice(5, 25));
      if (!(args[0] === "--create" && result.code === 0)) expect(result.stdout).not.toMatch(SECRET_SHAPE);
    }
  });

  it("a key pasted into the wrong flag is never echoed back, at any level", async () => {
    const key = secrets[0];
    const cases = [
      ["--create", "--name", key, "--roles", "ADMIN"],
      ["--create", "--name", "pasted", "--roles", key],
      ["--create", "--name", "pasted", "--permissions", key],
      ["--create", "--name", "pasted", "--permissions", `API_KEY:${key}`],
      ["--create", "--name", "pasted", "--permissions", `${key}:READ_ANY`],
      ["--delete", "--name", key, "--json"],
      ["--create", "--name", "pasted", "--roles", "ADMIN", `--${key}`],
    ];
    for (const level of ["trace", "info"]) {
      const results = await Promise.all(cases.map((args) => runCli(["apikey", ...args, "--store", store], { env: { LOG_LEVEL: level } })));
      results.forEach((result, i) => {
        expect(result.code, cases[i].join(" ")).toBe(2);
        expect(result.stdout + result.stderr, cases[i].join(" ")).not.toMatch(SECRET_SHAPE);
        expect((result.stdout + result.stderr).toLowerCase()).not.toContain(key.slice(5, 20).toLowerCase());
      });
    }
  });

  it("a never-issued key pasted as a name is not echoed in the not-found message either", async () => {
    const forged = generateSecret();
    const result = await runCli(["apikey", "--delete", "--name", forged, "--json", "--store", store]);
    expect(result.code).toBe(2); // '_' is not allowed in a name, so it never reaches the lookup
    expect(result.stdout).not.toContain(forged);
  });

  it("keeps the store 0600 files in 0700 directories after creates, overwrites and deletes", () => {
    expectPrivate(store);
  });

  it.each([["000"], ["022"]])("keeps the store private under umask %s", async (umask) => {
    const dir = join(tmp.dir, `umask-${umask}`, "nested", "keys");
    const sh = (args: string) =>
      new Promise<number | null>((resolve) => {
        const child = spawn("sh", ["-c", `umask ${umask} && exec "$0" "$1" apikey ${args} --store "$2"`, process.execPath, CLI, dir], {
          stdio: "ignore",
        });
        child.on("close", resolve);
      });
    expect(await sh(`--create --name a --roles ADMIN`)).toBe(0);
    expect(await sh(`--create --name a --roles GUEST --overwrite`)).toBe(0);
    expect(await sh(`--create --name b --roles GUEST`)).toBe(0);
    expect(await sh(`--delete --name b`)).toBe(0);
    expectPrivate(dir);
    // Directories the store created on the way are private too.
    expect((statSync(join(tmp.dir, `umask-${umask}`, "nested")).mode & 0o777).toString(8)).toBe("700");
  });
});
