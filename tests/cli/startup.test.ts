// The CLI's start-up loads only what the chosen command needs: creating or deleting a key must not
// pay for GraphQL, the HTTP client, the prompt library or Redis.
import { spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import module from "node:module";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, ROOT, tempDir } from "../helpers/cli.ts";
import { MARKS } from "../fixtures/trace-hooks.mjs";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function loaded(args: string[]): { code: number | null; modules: string[] } {
  const trace = join(tmp.dir, `trace-${Math.random().toString(36).slice(2)}.txt`);
  const result = spawnSync(
    process.execPath,
    ["--import", join(ROOT, "tests/fixtures/trace-register.mjs"), CLI, ...args, "--store", join(tmp.dir, "keys")],
    { env: { ...process.env, TRACE_FILE: trace }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  return { code: result.status, modules: readFileSync(trace, "utf8").trim().split("\n") };
}

describe("start-up", () => {
  it.each([
    [["apikey", "--create", "--name", "lean", "--roles", "ADMIN", "--json"]],
    [["apikey", "--delete", "--name", "lean", "--json"]],
    [["apikey", "--list", "--json"]],
  ])("%j loads no GraphQL, HTTP client, prompt library or Redis", (args) => {
    const { code, modules } = loaded(args);
    expect(code).not.toBeNull();
    expect(modules.some((line) => line.includes("dist/cli.cjs"))).toBe(true);
    const heavy = modules.filter((line) => / \S+$/.test(line));
    expect(heavy).toEqual([]);
  });

  it("the start-up bundle, which the loader runs from a code cache rather than as a module, holds none of them", () => {
    const marksIn = (text: string) => Object.entries(MARKS).filter(([, mark]) => text.includes(mark)).map(([name]) => name);
    expect(marksIn(readFileSync(join(ROOT, "dist/cli-main.cjs"), "utf8"))).toEqual([]);
    // The marks do find every one of those libraries as bundled, in the lazily loaded part.
    const lazy = readdirSync(join(ROOT, "dist/lazy"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".js"))
      .map((file) => readFileSync(join(ROOT, "dist/lazy", file), "utf8"))
      .join("\n");
    expect(marksIn(lazy).sort()).toEqual(Object.keys(MARKS).sort());
  });

  it("the code cache names the bundle where it is installed, so stack traces do not point into the build's scratch folder", () => {
    // V8 keeps the file name a code cache was made under: stacks from the cached bundle showed `.build-<pid>/`.
    const probe = join(tmp.dir, "stack-probe.cjs");
    writeFileSync(probe, `const fs = require("node:fs"); const write = fs.writeSync; let once = false;
fs.writeSync = function (...args) {
  if (!once) (once = true), write.call(fs, 2, "stack: " + new Error().stack.split("\\n").filter((l) => l.includes("cli-main")).join(" | ") + "\\n");
  return write.apply(this, args);
};`);
    const run = spawnSync(process.execPath, ["--require", probe, CLI, "apikey", "--list", "--json", "--store", "memory:"], {
      env: { ...process.env, SERVICE_API_CODE_CACHE: "report" },
      encoding: "utf8",
    });
    expect(run.stderr).toMatch(/^code cache: used\n/);
    const frames = /stack: (.*)/.exec(run.stderr)?.[1] ?? "";
    expect(frames).toContain(join(ROOT, "dist/cli-main.cjs"));
    expect(frames).not.toMatch(/\.build-/);
  });

  it("starts from the code cache the build made; without one for this V8, it requires the bundle (through Node's compile cache only where the user chose its folder)", () => {
    const report = (cli: string, env: Record<string, string | undefined> = {}) =>
      spawnSync(process.execPath, [cli, "apikey", "--list", "--json", "--store", "memory:"], {
        env: { ...process.env, NODE_COMPILE_CACHE: undefined, SERVICE_API_CODE_CACHE: "report", ...env },
        encoding: "utf8",
      });
    const cached = report(CLI);
    expect(cached.stderr).toBe("code cache: used\n");
    expect(JSON.parse(cached.stdout)).toEqual({ keys: [] });

    // Never Node's default compile-cache folder, which sits in the shared temporary directory.
    const withoutCache = "code cache: absent\n";
    const cacheName = `cli-main.${process.versions.v8}.cache`;
    expect(readdirSync(join(ROOT, "dist")).filter((file) => file.endsWith(".cache"))).toEqual([cacheName]);

    const bare = join(tmp.dir, "no-cache");
    cpSync(join(ROOT, "dist"), bare, { recursive: true });
    rmSync(join(bare, cacheName));
    const uncached = report(join(bare, "cli.cjs"));
    expect(uncached.stderr).toBe(withoutCache);
    expect(uncached.stdout).toBe(cached.stdout);
    const chosen = report(join(bare, "cli.cjs"), { NODE_COMPILE_CACHE: join(tmp.dir, "my-compile-cache") });
    expect(chosen.stderr).toBe("enableCompileCache" in module ? "code cache: absent, node compile cache\n" : withoutCache);

    // A cache made by another Node's V8 is not read at all (V8 would refuse it).
    const foreign = join(tmp.dir, "foreign-cache");
    cpSync(join(ROOT, "dist"), foreign, { recursive: true });
    renameSync(join(foreign, cacheName), join(foreign, "cli-main.0.0.0.0-node.0.cache"));
    expect(report(join(foreign, "cli.cjs")).stderr).toBe(withoutCache);
  });

  it("without the code cache, the required bundle still loads its lazy parts (the Redis driver)", () => {
    const bare = join(tmp.dir, "required");
    cpSync(join(ROOT, "dist"), bare, { recursive: true });
    rmSync(join(bare, `cli-main.${process.versions.v8}.cache`));
    const result = spawnSync(process.execPath, [join(bare, "cli.cjs"), "apikey", "--create", "--name", "x", "--roles", "ADMIN", "--json", "--store", "redis://127.0.0.1:1/0"], {
      encoding: "utf8",
      timeout: 20_000,
    });
    // The Redis driver is a lazy ES module bundle: reaching the store's error means import() worked.
    expect(JSON.parse(result.stdout).code).toBe("STORE_UNAVAILABLE");
  });

  it("the probe notices a heavy module when one is loaded", () => {
    const trace = join(tmp.dir, "probe.txt");
    spawnSync(process.execPath, ["--import", join(ROOT, "tests/fixtures/trace-register.mjs"), "-e", "await import('graphql/index.mjs')", "--input-type=module"], {
      env: { ...process.env, TRACE_FILE: trace },
      cwd: ROOT,
    });
    expect(readFileSync(trace, "utf8")).toMatch(/ graphql/);
  });
});
