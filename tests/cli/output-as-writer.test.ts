// `--output` is checked as the user who writes it. Root on another user's store works as that user, so a
// folder only root may write to is refused with exit 2 before anything is created: no key, no audit event,
// no file. A folder the store's owner may write to still works.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { AS_NOBODY, lacksRoot, NOBODY, NOT_ROOT, sharedScratch } from "../helpers/users.ts";

const scratch = sharedScratch("service-api-output-writer-");

/** A store that belongs to the second user, with one key it made. */
function nobodysStore(): string {
  const store = scratch.fresh();
  mkdirSync(store, { mode: 0o700 });
  chownSync(store, NOBODY, NOBODY);
  execFileSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, join(import.meta.dirname, "../../dist/cli.cjs"),
    "apikey", "--create", "--name", "service", "--roles", "ADMIN", "--store", store], { stdio: "ignore" });
  expect(statSync(store).uid).toBe(NOBODY);
  return store;
}

const trail = async (store: string) => (await runCli(["apikey", "--audit", "--json", "--store", store])).stdout;
const names = async (store: string) =>
  (JSON.parse((await runCli(["apikey", "--list", "--json", "--store", store])).stdout).keys as { name: string }[]).map((k) => k.name).sort();

describe.skipIf(lacksRoot)(`root's --output on another user's store (${NOT_ROOT})`, () => {
  it.each([[false], [true]])("a root-only folder is refused before anything is created (--force: %s)", async (force) => {
    const store = nobodysStore();
    const folder = join(scratch.dir(), `root-only-${force}`);
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    const target = join(folder, "ci.key");
    const before = await trail(store);
    const result = await runCli(["apikey", "--create", "--name", "ci", "-r", "VIEWER", "--output", target, ...(force ? ["--force"] : []), "--store", store]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/^Error: --output .*ci\.key: cannot create a file in .* \(permission denied\)\n$/);
    expect(result.stdout).toBe("");
    expect(existsSync(target)).toBe(false);
    expect(await names(store)).toEqual(["service"]);
    expect(await trail(store)).toBe(before);
  });

  it("a folder the store's owner may write to gets the secret, in a file of that owner", async () => {
    const store = nobodysStore();
    const folder = join(scratch.dir(), "owners");
    mkdirSync(folder, { mode: 0o700 });
    chownSync(folder, NOBODY, NOBODY);
    const target = join(folder, "ci.key");
    const result = await runCli(["apikey", "--create", "--name", "ci", "-r", "VIEWER", "--output", target, "--store", store]);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(target, "utf8")).toMatch(/^sapi_[0-9A-Za-z]{49}\n?$/);
    expect(statSync(target).uid).toBe(NOBODY);
    expect(await names(store)).toEqual(["ci", "service"]);
  });

  it("a root-only folder writable by its group is refused too when the owner is not in that group", async () => {
    const store = nobodysStore();
    const folder = join(scratch.dir(), "group-root");
    mkdirSync(folder);
    chmodSync(folder, 0o775); // group root (gid 0) may write; uid 65534 is not in it
    const result = await runCli(["apikey", "--create", "--name", "ci", "-r", "VIEWER", "--output", join(folder, "ci.key"), "--store", store]);
    expect(result.code, result.stderr).toBe(2);
    expect(await names(store)).toEqual(["service"]);
  });
});
