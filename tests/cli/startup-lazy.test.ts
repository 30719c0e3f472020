// A create runs only what it needs of the start-up bundle. The help text, the typo suggestions, the
// other commands' definitions and the list and audit tables are bundled into dist/cli-main.cjs but
// initialized only when imported (the inline set of scripts/build.mjs); nothing of a create needs
// Node's ES module loader, which any lazy chunk under dist/lazy/ would load.
import { spawnSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT, tempDir } from "../helpers/cli.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** Modules a create must not initialize (their keys in the bundle are their paths). */
const NOT_FOR_CREATE = [
  "lib/cli/help.ts",
  "lib/cli/suggest.ts",
  "lib/cli/commands/serve.ts",
  "lib/cli/commands/completion.ts",
  "lib/cli/format.ts",
  "lib/cli/lifecycle.ts",
  "lib/cli/list.ts",
  "lib/cli/table.ts",
  "lib/cli/width.ts",
  "lib/cli/audit-format.ts",
];

const create = (store: string) => ["apikey", "--create", "--name", "lean", "--roles", "ADMIN", "--json", "--store", store];

describe("what a create initializes", () => {
  let bundle = "";
  beforeAll(() => {
    // A copy of the bundle whose module initializer (esbuild's __esm) also records each module it runs.
    const dir = join(tmp.dir, "probe");
    cpSync(join(ROOT, "dist"), dir, { recursive: true });
    bundle = join(dir, "cli-main.cjs");
    const helper = "var __esm = (fn, res, err) => function() {\n";
    const source = readFileSync(bundle, "utf8");
    expect(source, "esbuild's __esm helper changed: update this probe").toContain(helper);
    writeFileSync(bundle, source.replace(helper, `${helper}  if (fn) (globalThis.__inits ??= []).push(__getOwnPropNames(fn)[0]);\n`) +
      `\nprocess.on("exit", () => require("node:fs").writeFileSync(process.env.INITS_FILE, (globalThis.__inits ?? []).join("\\n")));\n`);
  });

  /** The bundle's modules initialized by one run of it (required directly, as without a code cache). */
  function initialized(args: string[]): string[] {
    const file = join(tmp.dir, `inits-${Math.random().toString(36).slice(2)}.txt`);
    const result = spawnSync(process.execPath, [bundle, ...args], { env: { ...process.env, INITS_FILE: file }, encoding: "utf8" });
    expect(result.status, result.stderr).not.toBeNull();
    return readFileSync(file, "utf8").split("\n");
  }

  it("a create initializes none of the help, suggestions, other commands, list or audit modules", () => {
    const inits = initialized(create(join(tmp.dir, "keys")));
    expect(inits).toContain("lib/cli/commands/apikey.ts");
    expect(inits.filter((name) => NOT_FOR_CREATE.includes(name))).toEqual([]);
  });

  it("the modes that need them do initialize them (the probe sees them)", () => {
    expect(initialized(["apikey", "--list", "--store", join(tmp.dir, "keys")])).toEqual(expect.arrayContaining(["lib/cli/format.ts", "lib/cli/list.ts", "lib/cli/table.ts"]));
    expect(initialized(["apikey", "--audit", "--store", join(tmp.dir, "keys")])).toEqual(expect.arrayContaining(["lib/cli/lifecycle.ts", "lib/cli/audit-format.ts"]));
    expect(initialized(["--help"])).toEqual(expect.arrayContaining(["lib/cli/help.ts", "lib/cli/commands/serve.ts", "lib/cli/commands/completion.ts"]));
    expect(initialized(["apikey", "--crate"])).toContain("lib/cli/suggest.ts");
  });
});

describe("Node modules a create loads", () => {
  /** Node's own modules a process loaded (process.moduleLoadList), from a preload that lists them at exit. */
  function nodeModules(args: string[]): string[] {
    const list = join(tmp.dir, `modules-${Math.random().toString(36).slice(2)}.txt`);
    const preload = join(tmp.dir, "list-modules.cjs");
    writeFileSync(preload, `process.on("exit", () => require("node:fs").writeFileSync(process.env.MODULES_FILE, process.moduleLoadList.join("\\n")));\n`);
    const result = spawnSync(process.execPath, ["-r", preload, ...args], { env: { ...process.env, MODULES_FILE: list }, encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    return readFileSync(list, "utf8").split("\n");
  }
  const esmLoader = (modules: string[]) => modules.filter((m) => /^NativeModule (module|internal\/modules\/esm\/)/.test(m));

  it("a create does not build the fs driver's thread-pool operations (reading fs.opendir loads Node's fs/dir)", () => {
    const created = nodeModules([CLI, ...create(join(tmp.dir, "keys-4"))]);
    expect(created).toContain("NativeModule os");
    expect(created).not.toContain("NativeModule internal/fs/dir");
  });

  it("a create (from the code cache) loads no more of the ES module loader or node:module than an empty script", () => {
    const empty = join(tmp.dir, "empty.cjs");
    writeFileSync(empty, "");
    const created = nodeModules([CLI, ...create(join(tmp.dir, "keys-2"))]);
    expect(esmLoader(created).filter((m) => !esmLoader(nodeModules([empty])).includes(m))).toEqual([]);
    // The check sees a lazy chunk being loaded (completion's).
    expect(esmLoader(nodeModules([CLI, "completion", "bash"])).length).toBeGreaterThan(esmLoader(created).length);
  });
});
