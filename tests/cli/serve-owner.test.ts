// Root starting the service on another user's store: the service binds its port (a port below 1024 needs
// root), then runs as the store's owner for good, so a compromised server cannot take root back, and
// everything it writes belongs to the owner.
import { execFileSync, spawn } from "node:child_process";
import { chownSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, ROOT, runCli, tempDir } from "../helpers/cli.ts";

/** Needs root; CI runs as root, so there (CI set) it never skips: it runs, and fails if not root. */
const lacksRoot = process.getuid?.() !== 0 && !process.env.CI;
const NOT_ROOT = "needs root: root serves a store owned by uid 65534 on a port below 1024 (CI runs as root)";
const NOBODY = 65534;
const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** The real, effective, saved and file-system uids of a process, from /proc. */
const uidsOf = (pid: number) =>
  /^Uid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1].trim().split(/\s+/).map(Number);

describe("root serving another user's store", () => {
  it.skipIf(lacksRoot)(`binds a privileged port, then runs as the store's owner with no way back to root (${NOT_ROOT})`, async () => {
    const store = join(tmp.dir, "keys");
    mkdirSync(store, { mode: 0o700 });
    chownSync(tmp.dir, NOBODY, NOBODY);
    chownSync(store, NOBODY, NOBODY);
    const created = execFileSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", process.execPath, CLI,
      "apikey", "--create", "--name", "svc", "--roles", "ADMIN", "--json", "--store", store], { encoding: "utf8" });
    const { key } = JSON.parse(created);

    let child;
    let port = 0;
    let stderr = "";
    for (let attempt = 0; attempt < 20 && !port; attempt++) {
      const candidate = 700 + Math.floor(Math.random() * 280); // below 1024, clear of the ports fetch refuses (636, 989, ...)
      child = spawn(process.execPath, [CLI, "serve", "--port", String(candidate), "--store", store], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: undefined } });
      stderr = "";
      child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
      port = await new Promise<number>((resolve) => {
        const timer = setTimeout(() => resolve(0), 15_000);
        child!.stderr.on("data", () => /listening on/.test(stderr) && (clearTimeout(timer), resolve(candidate)));
        child!.on("exit", () => (clearTimeout(timer), resolve(0)));
      });
    }
    expect(port, stderr).toBeGreaterThan(0);
    try {
      expect(uidsOf(child!.pid!)).toEqual([NOBODY, NOBODY, NOBODY, NOBODY]);
      const me = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "mutation { apiKey { create(input: { name: \"minted\", roles: [GUEST] }) { id } } }" }),
      });
      expect(me.status).toBe(200);
      const minted = (await me.json()).data.apiKey.create.id;
      expect(statSync(join(store, "keys", minted)).uid).toBe(NOBODY);
    } finally {
      child!.kill("SIGTERM");
    }
    // The owner's store still works for the owner afterwards.
    const list = await runCli(["apikey", "--list", "--json", "--store", store]);
    expect(JSON.parse(list.stdout).keys.map((k: { name: string }) => k.name).sort()).toEqual(["minted", "svc"]);
  });
});
