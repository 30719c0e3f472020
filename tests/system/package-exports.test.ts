// The package's public face, as an installed user sees it: each subpath of package.json's exports map
// resolves from node_modules to built JavaScript, names what it documents and no more, and the root entry
// stays free of the service and the client, and small: at most ROOT_LIMIT names, types included (what an
// editor offers after `from "service-api-keys"`). A name that does not fit belongs in a subpath.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, tempDir } from "../helpers/cli.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
mkdirSync(join(tmp.dir, "node_modules"));
symlinkSync(ROOT, join(tmp.dir, "node_modules", "service-api-keys"));

const ROOT_LIMIT = 45;
const INSTALLED = join(tmp.dir, "node_modules", "service-api-keys");

const withoutComments = (code: string) => code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

/**
 * The names a declaration file exports, values and types alike. The root entry is re-exports only
 * (`export { a, type B } from "..."`, `export type { C } from "..."`); any other export statement
 * (`export *`, `export const`) is refused here, so that nothing escapes the count.
 */
export function declaredNames(dts: string): string[] {
  const code = withoutComments(dts);
  const names: string[] = [];
  for (const statement of code.split(";").map((s) => s.trim()).filter(Boolean)) {
    const m = /^export\s+(?:type\s+)?\{([^}]*)\}\s+from\s+["'][^"']+["']$/.exec(statement);
    if (!m) throw new Error(`not a named re-export, so not counted: ${statement.slice(0, 80)}`);
    for (const item of m[1].split(",").map((s) => s.trim()).filter(Boolean)) {
      names.push(item.replace(/^type\s+/, "").split(/\s+as\s+/).at(-1)!);
    }
  }
  return names.sort();
}

const exported = new Map<string, { names: string[] }>();
/** Imports `specifier` in a fresh Node process from a directory that has the package installed (once per specifier). */
function exportsOf(specifier: string): { names: string[] } {
  const known = exported.get(specifier);
  if (known) return known;
  const script = `
    const m = await import(${JSON.stringify(specifier)});
    process.stdout.write(JSON.stringify({ names: Object.keys(m).sort() }));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: tmp.dir, encoding: "utf8" });
  exported.set(specifier, JSON.parse(out));
  return exported.get(specifier)!;
}

describe("package exports", () => {
  it("the root entry is the store, its validation and policy, and nothing of the service or the client", () => {
    const { names } = exportsOf("service-api-keys");
    expect(names).toEqual(expect.arrayContaining(["createKeyStore", "parseCreateInput", "isServiceError", "openKeyStore", "can"]));
    for (const heavy of ["createHandler", "serve", "createClient", "createSchema", "fsDriver", "runApikey", "formatCreated"]) {
      expect(names).not.toContain(heavy);
    }
  });

  it(`the root entry exports at most ${ROOT_LIMIT} names, types counted`, () => {
    const types = JSON.parse(readFileSync(join(INSTALLED, "package.json"), "utf8")).exports["."].types;
    const declared = declaredNames(readFileSync(join(INSTALLED, types), "utf8"));
    // The declarations are what is counted: every value the built module exports is among them.
    expect(declared).toEqual(expect.arrayContaining(exportsOf("service-api-keys").names));
    expect(declared).toEqual(expect.arrayContaining(["KeyStore", "ApiKeyInfo", "ServiceError", "createKeyStore"]));
    expect(new Set(declared).size).toBe(declared.length);
    expect(declared.length, `root exports ${declared.length} names: ${declared.join(", ")}`).toBeLessThanOrEqual(ROOT_LIMIT);
  });

  it("the count takes every form of re-export and refuses what it cannot count", () => {
    const dts = [
      "/** doc; with a semicolon */",
      'export { a, type B, c as d } from "./x.ts";',
      'export type {\n  E,\n  F,\n} from "./y.ts";',
    ].join("\n");
    expect(declaredNames(dts)).toEqual(["B", "E", "F", "a", "d"]);
    expect(() => declaredNames('export * from "./x.ts";')).toThrow(/not a named re-export/);
    expect(() => declaredNames("export declare const x = 1;")).toThrow(/not a named re-export/);
  });

  it.each([
    ["service-api-keys/server", ["createHandler", "createSchema", "serve"]],
    ["service-api-keys/client", ["ClientError", "createClient", "createRemoteBackend"]],
    ["service-api-keys/drivers/fs", ["fsDriver"]],
    ["service-api-keys/drivers/redis", ["openRedisBackend"]],
    ["service-api-keys/schemas", ["AllowFromSchema", "allowedFrom", "CreateKeySchema", "DescriptionSchema", "NameSchema", "PermissionsSchema", "RolesSchema", "parseInput"]],
    ["service-api-keys/lifecycle", ["checkExpiresAt", "createUseRecorder", "expiryFrom", "parseDuration", "parseGrace", "parseSince"]],
    ["service-api-keys/audit", ["AUDIT_ACTIONS", "createMemoryAuditLog", "describeActor", "localActor"]],
    ["service-api-keys/backend", ["createLocalAtomicIndex", "createUpgradedKeyStore", "defaultStoreDir", "describeStore"]],
  ])("%s resolves to built JavaScript and exports %j", (specifier, expected) => {
    expect(exportsOf(specifier).names).toEqual(expect.arrayContaining(expected));
  });

  it("every subpath's declarations are built where package.json says", () => {
    const exportsMap = JSON.parse(readFileSync(join(INSTALLED, "package.json"), "utf8")).exports;
    const missing = Object.entries(exportsMap)
      .filter(([key]) => key !== "./package.json")
      .flatMap(([key, target]) => Object.values(target as Record<string, string>).map((file) => [key, file]))
      .filter(([, file]) => !existsSync(join(INSTALLED, file)));
    expect(missing).toEqual([]);
  });

  it("every import from the package in the docs and the entry points' examples names what it imports from", () => {
    const entries = Object.values(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports as Record<string, string>);
    const docs = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
    const files = ["README.md", ...docs, ...entries];
    const exportsMap = JSON.parse(readFileSync(join(INSTALLED, "package.json"), "utf8")).exports;
    const wrong: string[] = [];
    let seen = 0;
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      const pattern = /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"(?:jsr:@service-api-keys\/)?service-api-keys(\/[^"]*)?"/g;
      for (const [, list, subpath = ""] of text.matchAll(pattern)) {
        seen++;
        const entry = exportsMap[`.${subpath}`];
        if (!entry) {
          wrong.push(`${file}: service-api-keys${subpath} is no entry point`);
          continue;
        }
        const values = exportsOf(`service-api-keys${subpath}`).names;
        const declarations = withoutComments(readFileSync(join(INSTALLED, entry.types), "utf8"));
        for (const item of list.split(",").map((name) => name.trim()).filter(Boolean)) {
          const name = item.replace(/^type\s+/, "").split(/\s+as\s+/)[0];
          const found = values.includes(name) || new RegExp(`\\b${name}\\b`).test(declarations);
          if (!found) wrong.push(`${file}: ${name} is not exported by service-api-keys${subpath}`);
        }
      }
    }
    expect(seen).toBeGreaterThan(3);
    expect(wrong).toEqual([]);
  });

  it("docs/library.md's table of entry points names each subpath with its source file", () => {
    const table = readFileSync(join(ROOT, "docs/library.md"), "utf8").split("\n").filter((line) => line.startsWith("| `service-api-keys"));
    const entries = Object.entries(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports as Record<string, string>);
    const rows = entries.filter(([key]) => key !== "./cli").map(([key, file]) => [`service-api-keys${key.slice(1)}`, file.replace(/^\.\//, "")]);
    expect(table.map((line) => /^\| `([^`]+)` \|.*\| `([^`]+)` \|$/.exec(line)?.slice(1, 3)).sort()).toEqual(rows.sort());
  });

  it("npm pack's tarball in the clone is ignored by git, as the README's install makes it there", () => {
    const name = `${JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).name}-0.1.0.tgz`;
    // check-ignore exits 0 and prints the path when a rule ignores it (1, and nothing, when none does).
    expect(execFileSync("git", ["check-ignore", "--no-index", name], { cwd: ROOT, encoding: "utf8" }).trim()).toBe(name);
  });

  it("deno.json exports the same subpaths as package.json", () => {
    const npm = Object.keys(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports).filter((k) => k !== "./package.json");
    const deno = Object.keys(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports).filter((k) => k !== "./cli");
    expect(deno.sort()).toEqual(npm.sort());
  });

  it("the typecheck script checks every entry deno.json exports", () => {
    const typecheck: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts.typecheck;
    const entries = Object.values(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports as Record<string, string>);
    expect(entries.filter((entry) => !typecheck.split(/\s+/).includes(entry.replace(/^\.\//, "")))).toEqual([]);
  });
});
