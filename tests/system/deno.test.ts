// Deno runs the TypeScript sources directly; it must behave like the Node build on the same store.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, runCli, tempDir } from "../helpers/cli.ts";

const tmp = tempDir();
const store = join(tmp.dir, "keys");
afterAll(() => tmp.cleanup());

function deno(...args: string[]) {
  const result = spawnSync(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "cli.ts", ...args, "--store", store], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", LOG_LEVEL: undefined },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("under Deno", () => {
  it("creates, lists and deletes keys in the same store as the Node build", async () => {
    const created = deno("apikey", "--create", "--name", "deno key", "--roles", "viewer", "--json");
    expect(created.stderr).not.toMatch(/\n\s+at /);
    expect(created.code).toBe(0);
    const { key, id, name } = JSON.parse(created.stdout);
    expect(name).toBe("deno key");
    expect(key).toMatch(/^sapi_/);

    const listed = await runCli(["apikey", "--list", "--json", "--store", store]);
    expect(JSON.parse(listed.stdout).keys).toMatchObject([{ id, name: "deno key", roles: ["VIEWER"] }]);

    const duplicate = deno("apikey", "--create", "--name", "deno key", "--roles", "ADMIN", "--json");
    expect(duplicate.code).toBe(1);
    expect(JSON.parse(duplicate.stdout).code).toBe("NAME_TAKEN");

    const invalid = deno("apikey", "--create", "--name", "bad-name", "--roles", "ADMIN");
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("only letters, numbers, and spaces");

    const deleted = deno("apikey", "--delete", "--name", "deno key", "--json");
    expect(deleted.code).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: 1, keys: [{ id, name: "deno key" }] });

    const none = deno("apikey", "--delete", "--name", "deno key", "--json");
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({ deleted: 0, message: "No API keys found to delete" });
  }, 120_000);
});

describe("under Deno, from outside the checkout", () => {
  const denoBin = join(ROOT, "node_modules/.bin/deno");
  const run = (args: string[]) => spawnSync(denoBin, args, { cwd: tmp.dir, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 });

  it("the checkout's cli.ts runs from another directory (its deno.json is found next to it)", () => {
    const r = run(["run", "-A", join(ROOT, "cli.ts"), "apikey", "--list", "--json", "--store", join(tmp.dir, "elsewhere-keys")]);
    expect(r.stderr).not.toMatch(/not a dependency/);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ keys: [] });
  }, 90_000);

  it("a script elsewhere imports mod.ts with --config <checkout>/deno.json, as docs/deno.md says", () => {
    const script = join(tmp.dir, "script.ts");
    writeFileSync(
      script,
      `import { createKeyStore, parseCreateInput } from ${JSON.stringify(join(ROOT, "mod.ts"))};
const store = createKeyStore();
const { key } = await store.create(parseCreateInput({ name: "deno script", roles: "viewer" }));
console.log((await store.verify(key))?.name);`,
    );
    // Without the map, Deno cannot resolve the npm packages the sources import (what JSR's package carries).
    expect(run(["run", "-A", script]).stderr).toContain('Import "valibot" not a dependency');
    const r = run(["run", "-A", "--config", join(ROOT, "deno.json"), script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("deno script");
  }, 90_000);
});
