// The package's public face, as an installed user sees it: each subpath of package.json's exports map
// resolves from node_modules to built JavaScript, names what it documents and no more, and the root entry
// stays free of the service and the client.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, tempDir } from "../helpers/cli.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
mkdirSync(join(tmp.dir, "node_modules"));
symlinkSync(ROOT, join(tmp.dir, "node_modules", "service-api-keys"));

/** Imports `specifier` in a fresh Node process from a directory that has the package installed. */
function exportsOf(specifier: string): { names: string[] } {
  const script = `
    const m = await import(${JSON.stringify(specifier)});
    process.stdout.write(JSON.stringify({ names: Object.keys(m).sort() }));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: tmp.dir, encoding: "utf8" });
  return JSON.parse(out);
}

describe("package exports", () => {
  it("the root entry is the store, its validation and policy, and nothing of the service or the client", () => {
    const { names } = exportsOf("service-api-keys");
    expect(names).toEqual(expect.arrayContaining(["createKeyStore", "parseCreateInput", "isServiceError", "openKeyStore", "can"]));
    for (const heavy of ["createHandler", "serve", "createClient", "createSchema", "fsDriver", "runApikey", "formatCreated"]) {
      expect(names).not.toContain(heavy);
    }
    expect(names.length).toBeLessThan(40);
  });

  it.each([
    ["service-api-keys/server", ["createHandler", "createSchema", "serve"]],
    ["service-api-keys/client", ["ClientError", "createClient", "createRemoteBackend"]],
    ["service-api-keys/drivers/fs", ["fsDriver"]],
    ["service-api-keys/drivers/redis", ["openRedisBackend"]],
  ])("%s resolves to built JavaScript and exports %j", (specifier, expected) => {
    expect(exportsOf(specifier).names).toEqual(expect.arrayContaining(expected));
  });

  it("deno.json exports the same subpaths as package.json", () => {
    const npm = Object.keys(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports).filter((k) => k !== "./package.json");
    const deno = Object.keys(JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8")).exports).filter((k) => k !== "./cli");
    expect(deno.sort()).toEqual(npm.sort());
  });
});
