// The CLI's start-up loads only what the chosen command needs: creating or deleting a key must not
// pay for GraphQL, the HTTP client, the prompt library or Redis.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, ROOT, tempDir } from "./helpers/cli.ts";

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

  it("the probe notices a heavy module when one is loaded", () => {
    const trace = join(tmp.dir, "probe.txt");
    spawnSync(process.execPath, ["--import", join(ROOT, "tests/fixtures/trace-register.mjs"), "-e", "await import('graphql/index.mjs')", "--input-type=module"], {
      env: { ...process.env, TRACE_FILE: trace },
      cwd: ROOT,
    });
    expect(readFileSync(trace, "utf8")).toMatch(/ graphql/);
  });
});
