// `service-api doctor` changes nothing, also on a store whose folders are open to other users: it reports
// them (with the fix) and leaves them as found, where every other command makes them private.
import { chmodSync, chownSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { lacksRoot, NOBODY, NOT_ROOT } from "../helpers/users.ts";

/** Every path under `dir` (itself included) with its mode, and each file's content. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = { [dir]: (statSync(dir).mode & 0o7777).toString(8) };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) Object.assign(out, snapshot(path));
    else out[path] = `${(statSync(path).mode & 0o7777).toString(8)} ${readFileSync(path, "base64")}`;
  }
  return out;
}
const modeOf = (path: string) => statSync(path).mode & 0o777;
const checksOf = (stdout: string) => Object.fromEntries(JSON.parse(stdout).checks.map((c: { name: string }) => [c.name, c]));

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));
/** A store with one key, made by the CLI. */
async function storeWithKey(): Promise<string> {
  const { dir, cleanup } = tempDir("service-api-doctor-ro-");
  cleanups.push(cleanup);
  const store = join(dir, "keys");
  expect((await runCli(["apikey", "--create", "--name", "ci", "-r", "ADMIN", "--store", store])).code).toBe(0);
  return store;
}

describe("doctor on a store open to other users", () => {
  it("names the open folders and the fix, exits 1, and leaves every mode and file as it found them", async () => {
    const store = await storeWithKey();
    chmodSync(store, 0o755);
    chmodSync(join(store, "audit"), 0o750);
    const before = snapshot(store);

    const text = await runCli(["doctor", "--store", store]);
    expect(text.code, text.stdout + text.stderr).toBe(1);
    // The name column is as wide as the longest check's name (persistence, on Redis).
    expect(text.stdout.replace(/^(FAIL  owner) +/m, "$1 ")).toContain(
      `FAIL  owner uid ${process.getuid!()}, gid ${process.getgid!()}, mode 0755: open to other users (the store 0755, audit/ 0750; should be 0700, left as found). Fix: chmod 700 ${store} ${join(store, "audit")}\n`,
    );
    expect(text.stdout).toMatch(/^FAIL  keys +not read: opening the store would make its folders private \(see owner\)$/m);
    expect(text.stdout).toMatch(/^pass  version/m); // every check still gets its line
    const json = await runCli(["doctor", "--store", store, "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).ok).toBe(false);
    expect(checksOf(json.stdout).owner).toMatchObject({ ok: false, detail: expect.stringContaining(`Fix: chmod 700 ${store} ${join(store, "audit")}`) });
    expect(snapshot(store)).toEqual(before);
    expect([modeOf(store), modeOf(join(store, "audit"))]).toEqual([0o755, 0o750]);

    // Any other command makes the folders it uses private, as before; doctor then passes and counts the keys.
    expect((await runCli(["apikey", "--create", "--name", "second", "-r", "ADMIN", "--store", store])).code).toBe(0);
    expect([modeOf(store), modeOf(join(store, "audit"))]).toEqual([0o700, 0o700]);
    const after = await runCli(["doctor", "--store", store]);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toMatch(/^pass  keys +2 keys$/m);
  });

  it("names a folder inside the store that is open, the store itself being private", async () => {
    const store = await storeWithKey();
    chmodSync(join(store, "keys"), 0o755);
    const result = await runCli(["doctor", "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^FAIL  owner +.*mode 0700: open to other users \\(keys/ 0755; .*\\)\\. Fix: chmod 700 ${join(store, "keys")}$`, "m"));
    expect(modeOf(join(store, "keys"))).toBe(0o755);
  });

  it.skipIf(lacksRoot)(`names a folder inside the store that belongs to another user (${NOT_ROOT})`, async () => {
    const store = await storeWithKey();
    chownSync(join(store, "names"), NOBODY, NOBODY);
    const result = await runCli(["doctor", "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^FAIL  owner +.*mode 0700: ${join(store, "names")} belongs to uid ${NOBODY}, not to the store's owner$`, "m"));
    expect(statSync(join(store, "names")).uid).toBe(NOBODY);
  });
});
