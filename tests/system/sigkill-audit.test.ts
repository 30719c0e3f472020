// No change without its event, proven by SIGKILL: processes creating, overwriting (with and without a grace
// period), updating, deleting and pruning keys in a loop on one store are killed at random moments, round after
// round, on files and on a real Redis. After each round the trail must account for the store as it stands:
// - every key present (live or in its grace period) has its create or overwrite event;
// - a key in its grace period has the overwrite event that replaced it;
// - a key whose name or fields differ from how it was made has an update event naming the change;
// - every key known to have existed (a process reported the call done, or an earlier round saw it) that is
//   gone has the event that removed it: a delete or prune of its id, or an overwrite that replaced it;
// - every change a process reported done has its event.
// The reverse, an event whose change a kill stopped, is allowed (write-ahead): it is counted, not refused.
//
// The processes share their names, so overwrites, renames and deletes of one name race each other as well as
// being killed: an overwrite commits by compare-and-swap against the key its event names.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKeyInfo, AuditEvent } from "../../lib/core/model.ts";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import { ROOT, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";

const BUDGET_MS = 12_000;
const MIN_ROUNDS = 6;
const WORKERS = 2;

let tmp: ReturnType<typeof tempDir>;
let redis: RedisServer;
let worker: string;
beforeAll(async () => {
  tmp = tempDir("service-api-audit-crash-");
  redis = await startRedis();
  // A process doing random changes for ever, printing each one it finished ("done <action> <id> [<replaced>]").
  worker = join(tmp.dir, "worker.mjs");
  writeFileSync(worker, `
    import { openKeyStore, parseStoreSpec } from ${JSON.stringify(join(ROOT, "dist/lib/store/config.js"))};
    const [spec, blocking, tag] = process.argv.slice(2);
    const store = await openKeyStore(parseStoreSpec(spec), undefined, { oneShot: blocking === "1" });
    // Shared by every process (the tag is only for its messages).
    const names = ["alpha", "beta", "gamma", "delta", "epsilon"];
    const mine = () => true;
    const pick = (list) => list[Math.floor(Math.random() * list.length)];
    const say = (line) => process.stdout.write(line + "\\n");
    say("ready");
    for (let round = 0; ; round++) {
      const name = pick(names);
      const r = Math.random();
      try {
        if (r < 0.25) {
          const expiresAt = Math.random() < 0.3 ? new Date(Date.now() + 20).toISOString() : undefined;
          const k = await store.create({ name, roles: ["VIEWER"], permissions: [], expiresAt });
          say("done create " + k.id);
        } else if (r < 0.45) {
          const before = await store.getByName(name);
          const k = await store.create({ name, roles: ["VIEWER"], permissions: [] }, { overwrite: true, graceMs: Math.random() < 0.4 ? 50 : undefined });
          say("done overwrite " + k.id + (before ? " " + before.id : ""));
        } else if (r < 0.6) {
          const k = await store.getByName(name);
          if (k) {
            const patch = Math.random() < 0.5 ? { description: "round " + round, roles: ["ADMIN"] } : { name: pick(names) + " " + round };
            const u = await store.update(k.id, patch);
            say("done update " + u.id);
          }
        } else if (r < 0.75) {
          const k = await store.deleteByName(name);
          if (k) say("done delete " + k.id);
        } else if (r < 0.9) {
          const keys = (await store.list()).filter(mine);
          const k = keys.length ? pick(keys) : null;
          if (k && (await store.deleteById(k.id))) say("done delete " + k.id);
        } else {
          for (const k of await store.deleteExpired()) say("done prune " + k.id);
        }
      } catch (error) {
        if (!["NAME_TAKEN", "NOT_FOUND"].includes(error?.code)) throw error;
      }
    }
  `);
});
afterAll(async () => {
  await redis?.stop();
  tmp?.cleanup();
});

interface Run {
  child: ChildProcess;
  done: string[][];
  exit: Promise<{ code: number | null; signal: string | null; stderr: string }>;
}

function start(spec: string, blocking: boolean, tag: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker, spec, blocking ? "1" : "0", tag], { stdio: ["ignore", "pipe", "pipe"] });
    const done: string[][] = [];
    let stdout = "";
    let stderr = "";
    const exit = new Promise<{ code: number | null; signal: string | null; stderr: string }>((settle) =>
      child.on("close", (code, signal) => settle({ code, signal, stderr })));
    child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      const lines = stdout.split("\n");
      stdout = lines.pop()!;
      for (const line of lines) {
        if (line === "ready") resolve({ child, done, exit });
        else done.push(line.split(" ").slice(1));
      }
    });
    child.on("error", reject);
    exit.then(({ stderr: err }) => reject(new Error(`worker exited before it was ready: ${err}`)));
  });
}

/** What the trail says about one key id. */
function historyOf(events: AuditEvent[]) {
  const byId = new Map<string, AuditEvent[]>();
  const replacedBy = new Map<string, AuditEvent>();
  for (const e of events) {
    byId.set(e.id, [...(byId.get(e.id) ?? []), e]);
    if (e.action === "overwrite" && e.replaced) replacedBy.set(e.replaced, e);
  }
  return { byId, replacedBy };
}

for (const backend of ["fs", "redis"] as const) {
  describe(`changes killed with SIGKILL on ${backend}`, () => {
    it("never leave a change without its event", async () => {
      const spec = backend === "fs" ? join(tmp.dir, "keys") : `${redis.url}?prefix=auditcrash`;
      const observer = await openKeyStore(parseStoreSpec(spec));
      const known = new Map<string, string>(); // id -> how we know it existed
      const stats = { rounds: 0, killed: 0, reported: 0, eventsWithoutChange: 0, present: 0, goneChecked: 0 };
      const started = Date.now();
      try {
        while (stats.rounds < MIN_ROUNDS || Date.now() - started < BUDGET_MS) {
          stats.rounds++;
          const runs = await Promise.all(Array.from({ length: WORKERS }, (_, i) => start(spec, (stats.rounds + i) % 2 === 0, `w${"ab"[i]}`)));
          // Each dies at its own random moment, mid-change most of the time (a change takes a few ms).
          await Promise.all(runs.map((run) => new Promise<void>((done) => setTimeout(() => {
            run.child.kill("SIGKILL");
            done();
          }, 20 + Math.random() * 300))));
          for (const run of runs) {
            const { signal, stderr } = await run.exit;
            expect(signal, stderr).toBe("SIGKILL"); // killed, never failed on its own
            stats.killed++;
          }

          const events = await observer.audit();
          const { byId, replacedBy } = historyOf(events);
          const has = (id: string, ...actions: AuditEvent["action"][]) => (byId.get(id) ?? []).some((e) => actions.includes(e.action));

          // Every change a process finished has its event.
          for (const run of runs) {
            for (const [action, id, replaced] of run.done) {
              stats.reported++;
              known.set(id, `reported ${action}`);
              if (replaced) known.set(replaced, "replaced by a reported overwrite");
              // An overwrite of a name nobody holds is a create.
              const actions = (action === "overwrite" ? ["overwrite", "create"] : [action]) as AuditEvent["action"][];
              expect(has(id, ...actions), `${action} ${id} finished without its event`).toBe(true);
            }
          }

          // Every key present has the events that made it what it is.
          const present: ApiKeyInfo[] = await observer.list();
          const presentIds = new Set(present.map((k) => k.id));
          for (const key of present) {
            const own = byId.get(key.id) ?? [];
            expect(has(key.id, "create", "overwrite"), `key ${key.id} (${key.name}) is present without a create or overwrite event`).toBe(true);
            if (key.graceUntil) expect(replacedBy.has(key.id), `key ${key.id} is in a grace period without the overwrite that started it`).toBe(true);
            const made = own.find((e) => e.action === "create" || e.action === "overwrite")!;
            const updates = own.filter((e) => e.action === "update");
            if (key.name !== made.name) {
              expect(updates.some((e) => e.name === key.name && e.changed?.includes("name")), `key ${key.id} renamed to '${key.name}' without its event`).toBe(true);
            }
            if (key.description) expect(updates.some((e) => e.changed?.includes("description")), `key ${key.id} described without its event`).toBe(true);
            if (key.roles.includes("ADMIN")) expect(updates.some((e) => e.changed?.includes("roles")), `key ${key.id} given ADMIN without its event`).toBe(true);
            known.set(key.id, "seen in the store");
          }

          // Every key known to have existed and now gone has the event that removed it.
          for (const [id, why] of known) {
            if (presentIds.has(id)) continue;
            stats.goneChecked++;
            expect(has(id, "delete", "prune") || replacedBy.has(id), `key ${id} (${why}) is gone without a delete, prune or overwrite event: ${JSON.stringify(byId.get(id))} ${process.env.AUDIT_DEBUG ? JSON.stringify(events.filter((e) => byId.get(id)?.some((o) => o.name === e.name)).map((e) => [e.at, e.action, e.id.slice(0, 8), e.name, e.replaced?.slice(0, 8)])) : ""}`).toBe(true);
          }
          stats.present = present.length;
          // Events whose change never happened (allowed): a create or overwrite of a key never seen.
          stats.eventsWithoutChange = events.filter((e) => (e.action === "create" || e.action === "overwrite") && !known.has(e.id)).length;
        }
      } finally {
        await observer.close();
      }
      console.info(`audit crash test (${backend}): ${JSON.stringify({ ...stats, known: known.size, ms: Date.now() - started })}`);
      expect(stats.reported).toBeGreaterThan(20);
      expect(stats.goneChecked).toBeGreaterThan(5);
    }, 90_000);
  });
}
