// CLI processes killed with SIGKILL at random moments while they create, overwrite and delete keys.
// After every round the store must still load and list, every secret a process managed to print must
// authenticate (a secret is printed only after its key is committed), an interrupted operation must
// have happened entirely or not at all, no stored file may be half-written, temporary files must never
// be taken for keys, and new creates must succeed.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { isOrderName, orderName } from "../../lib/store/_key-order.ts";
import { CLI, runCli, tempDir } from "../helpers/cli.ts";

const BUDGET_MS = 15_000;
const MIN_ROUNDS = 8;
const NAMES = Array.from({ length: 6 }, (_, i) => `crash ${i}`);

let tmp: ReturnType<typeof tempDir>;
let dir: string;
let store: KeyStore;
beforeAll(async () => {
  tmp = tempDir();
  dir = join(tmp.dir, "keys");
  store = await openKeyStore(parseStoreSpec(dir));
});
afterAll(async () => {
  await store?.close();
  tmp?.cleanup();
});

interface Outcome {
  stdout: string;
  stderr: string;
  code: number | null;
  killed: boolean;
  /** Killed after it had opened the store. */
  duringStoreOp: boolean;
}

/**
 * How long a command takes from logging "store: fs:" to exiting, measured on the runs left alone: the
 * window in which its store operation happens. Adapts to how loaded the machine is.
 */
let storeWindowMs = 40;

/**
 * Runs the CLI with LOG_LEVEL=debug and kills it with SIGKILL: either a random 0-80 ms after spawn
 * (mostly start-up), or at a random moment of its store operation (after it logs that it opened the
 * store), or not at all.
 */
function runAndMaybeKill(args: string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, "apikey", ...args, "--json", "--store", dir], {
      env: { ...process.env, LOG_LEVEL: "debug", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let killed = false;
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) killed = child.kill("SIGKILL");
    };
    const strategy = Math.random();
    let storeOpened = 0;
    let timer: NodeJS.Timeout | undefined;
    if (strategy < 0.4) timer = setTimeout(kill, Math.random() * 80);
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
      if (!storeOpened && stderr.includes("store: fs:")) {
        storeOpened = performance.now();
        if (strategy >= 0.4 && strategy < 0.9) timer = setTimeout(kill, Math.random() * storeWindowMs);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (!killed && storeOpened) storeWindowMs = 0.7 * storeWindowMs + 0.3 * (performance.now() - storeOpened);
      resolve({ stdout, stderr, code, killed, duringStoreOp: killed && storeOpened > 0 });
    });
  });
}

/** The one JSON object a finished command printed, or null when it died before printing it. */
function printed(outcome: Outcome): Record<string, unknown> | null {
  if (!outcome.stdout.endsWith("\n")) {
    expect(outcome.stdout, "stdout is written in one piece or not at all").toBe("");
    return null;
  }
  return JSON.parse(outcome.stdout);
}

type Known = { id: string; secret: string | null };

describe("CLI processes killed with SIGKILL at random moments", () => {
  it("never lose a printed key, never half-apply an operation and never corrupt the store", async () => {
    const model = new Map<string, Known>(); // what the store must hold, as far as outputs tell us
    const revoked: string[] = []; // secrets that must no longer authenticate
    const stats = { rounds: 0, processes: 0, killed: 0, killedBeforeOutput: 0, killedInStoreOp: 0, appliedWithoutOutput: 0, completed: 0 };
    const started = Date.now();

    while (stats.rounds < MIN_ROUNDS || Date.now() - started < BUDGET_MS) {
      stats.rounds++;
      const names = [...NAMES].sort(() => Math.random() - 0.5).slice(0, 3);
      const ops = names.map((name) => {
        const before = model.get(name);
        const kind: "create" | "overwrite" | "delete" = !before ? "create" : Math.random() < 0.5 ? "overwrite" : "delete";
        const args = kind === "delete"
          ? ["--delete", "--name", name]
          : ["--create", "--name", name, "--roles", "VIEWER", ...(kind === "overwrite" ? ["--overwrite"] : [])];
        return { name, kind, before, run: runAndMaybeKill(args) };
      });

      for (const op of ops) {
        const outcome = await op.run;
        stats.processes++;
        if (outcome.killed) stats.killed++;
        const body = printed(outcome);
        if (!outcome.killed) {
          expect(outcome.code, outcome.stderr).toBe(0);
          expect(body).not.toBeNull();
        }
        expect(outcome.stderr).not.toMatch(/sapi_[0-9A-Za-z]{10}/);
        const now = await store.getByName(op.name);

        if (body) {
          stats.completed++;
          if (op.kind === "delete") {
            expect(body).toMatchObject({ deleted: 1 });
            expect(now).toBeNull();
            model.delete(op.name);
          } else {
            // Printed means committed: the secret authenticates as the printed id right away.
            expect((await store.verify(body.key as string))?.id, `printed secret of ${op.name}`).toBe(body.id);
            expect(now?.id).toBe(body.id);
            model.set(op.name, { id: body.id as string, secret: body.key as string });
          }
          if (op.kind !== "create" && op.before?.secret) revoked.push(op.before.secret);
          continue;
        }

        // Killed before printing: the operation happened entirely or not at all.
        stats.killedBeforeOutput++;
        if (outcome.duringStoreOp) stats.killedInStoreOp++;
        if (op.kind === "create") {
          if (now) model.set(op.name, { id: now.id, secret: null });
          if (now) stats.appliedWithoutOutput++;
        } else if (now?.id === op.before?.id) {
          // Not applied: the old key still works.
          if (op.before?.secret) expect(await store.verify(op.before.secret)).not.toBeNull();
        } else {
          // Applied: the old key is revoked; an overwrite leaves a new key, a delete leaves none.
          stats.appliedWithoutOutput++;
          if (op.before?.secret) revoked.push(op.before.secret);
          if (op.kind === "delete") expect(now).toBeNull();
          else expect(now).not.toBeNull();
          if (now) model.set(op.name, { id: now.id, secret: null });
          else model.delete(op.name);
        }
      }

      // The store as a whole matches what the outputs tell us.
      const listed = await store.list();
      expect(listed.map((k) => k.name).sort()).toEqual([...model.keys()].sort());
      for (const [name, known] of model) {
        expect(listed.find((k) => k.name === name)?.id).toBe(known.id);
        if (known.secret) expect((await store.verify(known.secret))?.id).toBe(known.id);
      }
      for (const secret of revoked) expect(await store.verify(secret)).toBeNull();
      // Every key has its entry in the index pages read (written before the record), whatever the kill left.
      const indexed = existsSync(join(dir, "order")) ? readdirSync(join(dir, "order")) : []; // none before the first create
      for (const key of listed) expect(indexed).toContain(orderName(Date.parse(key.createdAt), key.id));
    }

    // Every file that is not a temporary file is whole: records parse, index entries and the revision are whole ids.
    let temporary = 0;
    for (const sub of readdirSync(dir)) {
      // meta: the revision token; retired: the hashes of secrets that work no more; order: the index of pages
      expect(["keys", "names", "secrets", "meta", "audit", "retired", "order"]).toContain(sub);
      if (sub === "audit") continue; // appended to, not rewritten: tests/audit-crash.test.ts
      for (const file of readdirSync(join(dir, sub))) {
        if (file.endsWith(".tmp")) {
          temporary++;
          continue;
        }
        const text = readFileSync(join(dir, sub, file), "utf8");
        if (sub === "keys") {
          expect(JSON.parse(text)).toMatchObject({ id: file, name: expect.any(String), hash: expect.any(String) });
        } else if (sub === "order") {
          expect([isOrderName(file), text]).toEqual([true, ""]);
        } else if (sub === "meta" && file === "format") {
          expect(text).toMatch(/^\d+$/); // the layout the store was brought to on open (lib/store/_migrate.ts)
        } else if (sub === "retired") {
          expect(JSON.parse(text)).toMatchObject({ id: expect.any(String), name: expect.any(String), retiredAt: expect.any(String) });
        } else {
          expect(text).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        }
      }
    }

    // The CLI still lists (temporary files are not keys) and creates.
    const list = await runCli(["apikey", "--list", "--json", "--store", dir]);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout).keys as Array<{ name: string }>).map((k) => k.name).sort())
      .toEqual([...model.keys()].sort());
    const fresh = await runCli(["apikey", "--create", "--name", "after the crashes", "--roles", "GUEST", "--json", "--store", dir]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(await store.verify(JSON.parse(fresh.stdout).key)).not.toBeNull();

    const storeWindow = Math.round(storeWindowMs);
    console.info(`crash test: ${JSON.stringify({ ...stats, temporaryFilesLeft: temporary, storeWindow, ms: Date.now() - started })}`);
    // The test only proves something if kills landed both before and after outputs were written.
    expect(stats.killedBeforeOutput).toBeGreaterThan(0);
    expect(stats.killedInStoreOp).toBeGreaterThan(0);
    expect(stats.completed).toBeGreaterThan(0);
  }, 60_000);
});
