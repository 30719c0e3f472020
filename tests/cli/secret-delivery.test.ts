// A new key's secret exists only in the command's output. When that output cannot be written (stdout on
// a full device, a reader that has gone away), the CLI must not leave a committed key whose secret is lost.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";
import { startServer } from "../helpers/server.ts";

/** Runs the CLI with stdout on /dev/full or on a pipe whose reader has already gone; resolves with status and stderr. */
function runBroken(stdout: "full" | "closed", args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const full = stdout === "full" ? openSync("/dev/full", "w") : undefined;
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1", ...env },
      stdio: ["ignore", full ?? "pipe", "pipe"],
      timeout: 20_000,
    });
    if (full !== undefined) closeSync(full);
    else child.stdout!.destroy(); // the reader goes away before the CLI writes anything
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

let dir: string;
let store: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir("service-api-delivery-"));
  store = join(dir, "keys");
});
afterEach(() => cleanup());

const listed = async () => {
  const keys = await openKeyStore(parseStoreSpec(store));
  try {
    return await keys.list();
  } finally {
    await keys.close();
  }
};

describe("a new key's secret that cannot be delivered", () => {
  for (const [broken, reason] of [["full", "ENOSPC"], ["closed", "EPIPE"]] as const) {
    for (const json of [false, true]) {
      it(`create${json ? " --json" : ""} with stdout ${broken === "full" ? "on /dev/full" : "a closed pipe"}: exit 1, the key is deleted again, a retry works`, async () => {
        const args = ["apikey", "--create", "--name", "ci", "--roles", "GUEST", ...(json ? ["--json"] : []), "--store", store];
        const run = await runBroken(broken, args);
        expect(run.code).toBe(1);
        expect(run.stderr.trim().split("\n")).toHaveLength(1);
        expect(run.stderr).toContain(`Could not write the new key's secret to stdout (${reason})`);
        expect(run.stderr).toContain("The key was deleted again, so nothing changed");
        expect(await listed()).toEqual([]);
        const retry = await runCli(args);
        expect(retry.code).toBe(0);
        expect((await listed()).map((k) => k.name)).toEqual(["ci"]);
      });
    }
  }

  it("--overwrite with stdout on /dev/full: exit 1, and the message names the key that now holds the name", async () => {
    const old = await runCli(["apikey", "--create", "--name", "ci", "--roles", "GUEST", "--json", "--store", store]);
    const { key: oldSecret } = JSON.parse(old.stdout);
    const run = await runBroken("full", ["apikey", "--create", "--name", "ci", "--roles", "GUEST", "--overwrite", "--store", store]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    const id = /\(id ([0-9a-f-]{36})\)/.exec(run.stderr)?.[1];
    expect(run.stderr).toMatch(/Key 'ci' \(id [0-9a-f-]+\) is stored, replacing the earlier key of that name \(which no longer works\), but its secret is lost/);
    expect(run.stderr).toContain("--delete --name 'ci'");
    expect((await listed()).map((k) => k.id)).toEqual([id]);
    const keys = await openKeyStore(parseStoreSpec(store));
    expect(await keys.verify(oldSecret)).toBeNull();
    await keys.close();
    // Doing what the message says works.
    expect((await runCli(["apikey", "--create", "--name", "ci", "--roles", "GUEST", "--overwrite", "--store", store])).code).toBe(0);
  });

  it("--overwrite --grace with stdout on /dev/full: the message says the old key works until the grace ends, and it does", async () => {
    const old = await runCli(["apikey", "--create", "--name", "graced", "--roles", "GUEST", "--json", "--store", store]);
    const { key: oldSecret } = JSON.parse(old.stdout);
    const run = await runBroken("full", ["apikey", "--create", "--name", "graced", "--roles", "GUEST", "--overwrite", "--grace", "10m", "--store", store]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/replacing the earlier key of that name \(which keeps working until \d{4}-\d\d-\d\dT[\d:.]+Z\), but its secret is lost/);
    const keys = await openKeyStore(parseStoreSpec(store));
    expect((await keys.verify(oldSecret))?.name).toBe("graced");
    await keys.close();
  });

  it("--overwrite of a name no key holds, with stdout on /dev/full: undone like a plain create", async () => {
    const run = await runBroken("full", ["apikey", "--create", "--name", "nobody here", "--roles", "GUEST", "--overwrite", "--store", store]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("The key was deleted again, so nothing changed");
    expect((await listed()).map((k) => k.name)).not.toContain("nobody here");
  });

  it("in remote mode (--url) too: a create that cannot print its secret is deleted again on the server", async () => {
    const admin = JSON.parse((await runCli(["apikey", "--create", "--name", "admin", "--roles", "ADMIN", "--json", "--store", store])).stdout);
    const server = await startServer({ store });
    try {
      const run = await runBroken("full", ["apikey", "--create", "--name", "ci", "--roles", "GUEST", "--url", server.url], {
        SERVICE_API_KEY: admin.key,
        SERVICE_API_STORE: undefined,
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("(ENOSPC). The key was deleted again, so nothing changed");
      expect((await listed()).map((k) => k.name)).toEqual(["admin"]);
    } finally {
      await server.stop();
    }
  });
});
