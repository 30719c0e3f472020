// The audit trail through the store contract, on memory, files (both ways of doing file I/O) and a real Redis:
// every change appends exactly its event, with the right actor, never a secret or a hash; `audit({since, limit})`
// means the same everywhere. Then what only the file log has to prove: torn and foreign lines, planted links,
// rotation, and many processes appending at once.
import { execFileSync, spawn } from "node:child_process";
import { appendFileSync, chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import Redis from "ioredis";
import { createStorage } from "unstorage";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Actor, AuditEvent } from "../../lib/core/model.ts";
import { sha256Hex } from "../../lib/core/secret.ts";
import { type AuditLog, createMemoryAuditLog, localActor } from "../../lib/store/audit.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { createKeyStore, createLocalAtomicIndex, type KeyStore } from "../../lib/store/key-store.ts";
import { ROOT, tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { input } from "../helpers/keys.ts";

interface Opened {
  now?: () => number;
  actor?: Actor;
}
interface Backend {
  /** A new store instance over this backend's data and audit trail. */
  open(options?: Opened): Promise<KeyStore>;
  /** The audit trail as stored: file contents, stream entries. */
  rawAudit(): Promise<string>;
  close(): Promise<void>;
}

let redis: RedisServer;
let admin: Redis;
let prefixes = 0;

function fsBackend(blocking: boolean): Backend {
  const { dir, cleanup } = tempDir("service-api-audit-");
  const base = join(dir, "keys");
  const stores: KeyStore[] = [];
  return {
    open: async (options = {}) => {
      const driver = fsDriver({ base, blocking });
      const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, audit: driver.audit, ...options });
      stores.push(store);
      return store;
    },
    rawAudit: async () =>
      readdirSync(join(base, "audit")).filter((f) => f !== "reserve").map((f) => readFileSync(join(base, "audit", f), "utf8")).join("\n"),
    close: async () => {
      await Promise.all(stores.map((s) => s.close()));
      cleanup();
    },
  };
}

const backends: Record<string, () => Promise<Backend>> = {
  async memory() {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    const audit = createMemoryAuditLog();
    return {
      open: async (options = {}) => createKeyStore({ storage, atomic, audit, ...options }),
      rawAudit: async () => JSON.stringify(await audit.read()),
      close: () => storage.dispose(),
    };
  },
  fs: async () => fsBackend(false),
  "fs (blocking)": async () => fsBackend(true),
  async redis() {
    const prefix = `audit${++prefixes}`;
    const stores: KeyStore[] = [];
    return {
      open: async (options = {}) => {
        const backend = await openRedisBackend(`${redis.url}?prefix=${prefix}`);
        const store = createKeyStore({ ...backend, ...options });
        stores.push(store);
        return store;
      },
      rawAudit: async () => JSON.stringify(await admin.xrange(`${prefix}:audit`, "-", "+")),
      close: async () => {
        await Promise.all(stores.map((s) => s.close()));
      },
    };
  },
};

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url, { lazyConnect: true });
  await admin.connect();
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const ci: Actor = { kind: "key", id: "6f1d3a52-8d1e-4c51-9b1e-2f7a1c3e9d10", name: "ci admin" };
const operator: Actor = { kind: "local", user: "ops", host: "bastion" };

describe.each(Object.keys(backends))("audit trail contract on %s", (kind) => {
  let backend: Backend;
  let clock: number;
  const now = () => clock;
  beforeEach(async () => {
    backend = await backends[kind]();
    clock = T0;
  });
  afterEach(() => backend.close());

  it("every change appends exactly its event, with the caller's actor, and failed or empty changes append none", async () => {
    const store = await backend.open({ now });
    const other = await backend.open({ now }); // another process reading the same trail
    const local = localActor();
    const expected: Partial<AuditEvent>[] = [];
    const step = () => (clock += 1_000);
    const expect1 = (action: AuditEvent["action"], id: string, name: string, actor: Actor, extra: Partial<AuditEvent> = {}) =>
      expected.push({ at: iso(clock), action, id, name, actor, ...extra });

    const a = await store.create(input("alpha"));
    expect1("create", a.id, "alpha", local);
    step();
    await store.create(input("alpha")).catch(() => {}); // NAME_TAKEN: nothing changed, no event
    const a2 = await store.create(input("alpha"), { overwrite: true, actor: ci });
    expect1("overwrite", a2.id, "alpha", ci, { replaced: a.id });
    step();
    await store.update(a2.id, { description: "rotated", roles: ["ADMIN"] }, { actor: ci });
    expect1("update", a2.id, "alpha", ci, { changed: ["description", "roles"] });
    step();
    await store.update(a2.id, { description: "rotated" }); // changes nothing: no event
    await store.update(a2.id, { name: "alpha two" }, { actor: operator });
    expect1("update", a2.id, "alpha two", operator, { changed: ["name"] });
    step();
    const b = await store.create(input("beta"));
    expect1("create", b.id, "beta", local);
    step();
    await store.deleteByName("beta", { actor: operator });
    expect1("delete", b.id, "beta", operator);
    step();
    expect(await store.deleteByName("beta")).toBeNull(); // nothing to delete: no event
    const c = await store.create(input("gamma"));
    expect1("create", c.id, "gamma", local);
    step();
    await store.deleteById(c.id, { actor: ci });
    expect1("delete", c.id, "gamma", ci);
    step();
    expect(await store.deleteById(c.id)).toBeNull();
    const e = await store.create(input("temporary", { expiresAt: iso(clock + 500) }));
    expect1("create", e.id, "temporary", local);
    step();
    expect((await store.deleteExpired({ actor: operator })).map((k) => k.id)).toEqual([e.id]);
    expect1("prune", e.id, "temporary", operator);
    step();
    expect(await store.deleteExpired()).toEqual([]);

    // Grace: the overwrite that starts one, and a delete by name that ends both keys of the name.
    const g1 = await store.create(input("rolling"));
    expect1("create", g1.id, "rolling", local);
    step();
    const g2 = await store.create(input("rolling"), { overwrite: true, graceMs: 60_000 });
    expect1("overwrite", g2.id, "rolling", local, { replaced: g1.id });
    step();
    await store.deleteByName("rolling");
    expect1("delete", g2.id, "rolling", local);
    expect1("delete", g1.id, "rolling", local);
    step();
    // A key in its grace period deleted by id.
    const h1 = await store.create(input("graced"));
    expect1("create", h1.id, "graced", local);
    step();
    const h2 = await store.create(input("graced"), { overwrite: true, graceMs: 60_000 });
    expect1("overwrite", h2.id, "graced", local, { replaced: h1.id });
    step();
    await store.deleteById(h1.id);
    expect1("delete", h1.id, "graced", local);
    step();
    // A grace period that ran out is pruned like an expiry.
    await store.create(input("graced"), { overwrite: true, graceMs: 1_000 }).then((h3) => expect1("overwrite", h3.id, "graced", local, { replaced: h2.id }));
    step();
    step();
    expect((await store.deleteExpired()).map((k) => k.id)).toEqual([h2.id]);
    expect1("prune", h2.id, "graced", local);

    expect(await other.audit()).toEqual(expected);
    expect(await store.audit()).toEqual(expected);
  });

  it("the actor is the call's, else the store's, else the local user at this host", async () => {
    const owned = await backend.open({ now, actor: operator });
    const plain = await backend.open({ now });
    await owned.create(input("store actor"));
    clock += 1;
    await owned.create(input("call actor"), { actor: ci });
    clock += 1;
    await plain.create(input("local actor"));
    const actors = (await plain.audit()).map((e) => [e.name, e.actor]);
    expect(actors).toEqual([["store actor", operator], ["call actor", ci], ["local actor", localActor()]]);
    expect(localActor()).toEqual({ kind: "local", user: expect.any(String), host: expect.any(String) });
  });

  it("no event holds a secret or its SHA-256, whatever the change", async () => {
    const store = await backend.open({ now });
    const made = [
      await store.create(input("one", { description: "first" })),
      await store.create(input("two")),
      await store.create(input("one"), { overwrite: true, graceMs: 10_000 }),
    ];
    await store.update(made[1].id, { name: "three", roles: ["ADMIN"] });
    await store.deleteByName("one");
    await store.deleteById(made[1].id);
    const raw = await backend.rawAudit();
    expect((await store.audit()).length).toBe(7);
    for (const { key } of made) {
      expect(raw).not.toContain(key);
      expect(raw).not.toContain(key.slice("sapi_".length, -6));
      expect(raw).not.toContain(sha256Hex(key));
    }
    expect(raw).not.toMatch(/"hash"|sapi_/);
  });

  it("audit({ since, limit }): events at or after `since`, the latest `limit` of them, oldest first", async () => {
    const store = await backend.open({ now });
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      clock = T0 + i * 60_000;
      times.push(clock);
      await store.create(input(`key ${i}`));
    }
    const names = (events: AuditEvent[]) => events.map((e) => e.name);
    expect(names(await store.audit())).toEqual(times.map((_, i) => `key ${i}`));
    expect(names(await store.audit({ since: times[6] }))).toEqual(["key 6", "key 7", "key 8", "key 9"]);
    expect(names(await store.audit({ since: times[6] - 1 }))).toEqual(["key 6", "key 7", "key 8", "key 9"]);
    expect(names(await store.audit({ since: times[6] + 1 }))).toEqual(["key 7", "key 8", "key 9"]);
    expect(names(await store.audit({ limit: 3 }))).toEqual(["key 7", "key 8", "key 9"]);
    expect(names(await store.audit({ since: times[1], limit: 2 }))).toEqual(["key 8", "key 9"]);
    expect(names(await store.audit({ since: times[8], limit: 5 }))).toEqual(["key 8", "key 9"]);
    expect(await store.audit({ since: times[9] + 1 })).toEqual([]);
    expect(await store.audit({ limit: 0 })).toEqual([]);
    // A writer whose clock is behind (another host) still lands in the trail; `since` judges by the event's time.
    clock = T0 + 30_000;
    await store.create(input("late clock"));
    expect(names(await store.audit({ since: T0 + 30_000, limit: 2 }))).toEqual(["key 8", "key 9"]);
    expect(names(await store.audit({ since: T0 + 30_000 })).slice(0, 2)).toEqual(["late clock", "key 1"]);
  });

  it("auditPage pages by position in the trail: every event once, in the order written, however the clock steps back", async () => {
    const store = await backend.open({ now });
    // The clock steps back an hour after key 4, then runs on.
    for (let i = 0; i < 9; i++) {
      clock = T0 + (i < 5 ? 0 : -3_600_000) + i * 60_000;
      await store.create(input(`key ${i}`));
    }
    const names = (events: AuditEvent[]) => events.map((e) => e.name);
    const pages: string[][] = [];
    for (let cursor: string | undefined, page; (page = await store.auditPage({ limit: 2, cursor })).events.length;) {
      pages.unshift(names(page.events));
      if (page.cursor === null) break;
      cursor = page.cursor;
    }
    expect(pages).toEqual([["key 0"], ["key 1", "key 2"], ["key 3", "key 4"], ["key 5", "key 6"], ["key 7", "key 8"]]);
    // since and before filter by time; the cursor, not the time, is what moves.
    const since = await store.auditPage({ limit: 3, since: T0 - 3_600_000 + 6 * 60_000 });
    expect([names(since.events), since.cursor === null]).toEqual([["key 6", "key 7", "key 8"], false]);
    const rest = await store.auditPage({ limit: 3, since: T0 - 3_600_000 + 6 * 60_000, cursor: since.cursor! });
    expect(names(rest.events)).toEqual(["key 2", "key 3", "key 4"]); // key 5 is before since
    const before = await store.auditPage({ limit: 10, before: T0 + 2 * 60_000 });
    expect([names(before.events), before.cursor]).toEqual([["key 0", "key 1", "key 5", "key 6", "key 7", "key 8"], null]);
    for (const cursor of ["not-a-cursor", "99999999999999999999999-0", ""]) {
      await expect(store.auditPage({ limit: 1, cursor }), cursor).rejects.toMatchObject({ code: "INVALID_INPUT" });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The file log.

const event = (i: number, extra: Partial<AuditEvent> = {}): AuditEvent => ({
  at: iso(T0 + i),
  action: "create",
  id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  name: `key ${i}`,
  actor: operator,
  ...extra,
});

describe("audit trail on files", () => {
  let tmp: ReturnType<typeof tempDir>;
  let base: string;
  beforeEach(() => {
    tmp = tempDir("service-api-audit-fs-");
    base = join(tmp.dir, "keys");
  });
  afterEach(() => tmp.cleanup());
  const logOf = (options: Parameters<typeof fsDriver>[0]["audit"] = {}, blocking = false): AuditLog => fsDriver({ base, blocking, audit: options }).audit;

  it("is one line of JSON per event in audit/audit.log, 0600 in a 0700 folder, with a 64 KiB reserve beside it", async () => {
    const log = logOf();
    await log.append(event(1));
    await log.append(event(2, { action: "update", changed: ["roles"] }));
    const dir = join(base, "audit");
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "audit.log")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "reserve"))).toMatchObject({ size: 64 * 1024 });
    expect(statSync(join(dir, "reserve")).mode & 0o777).toBe(0o600);
    const lines = readFileSync(join(dir, "audit.log"), "utf8").split("\n");
    expect(lines.at(-1)).toBe("");
    expect(lines.slice(0, -1).map((l) => JSON.parse(l))).toEqual([event(1), event(2, { action: "update", changed: ["roles"] })]);
  });

  it("reading skips torn, foreign and malformed lines, recovers an event glued to a torn line, and never fails", async () => {
    const log = logOf();
    await log.append(event(1));
    const path = join(base, "audit", "audit.log");
    const whole = JSON.stringify(event(3));
    appendFileSync(path, JSON.stringify(event(2)).slice(0, 40)); // a write cut short ...
    appendFileSync(path, `${whole}\n`); // ... and the next writer's line glued to it
    appendFileSync(path, `{"hello":"world"}\nnot json at all\n\u0000\u0000\n[1,2]\n`);
    appendFileSync(path, `${JSON.stringify({ ...event(4), actor: { kind: "root" } })}\n`); // wrong shape
    appendFileSync(path, `${JSON.stringify({ ...event(5), action: "drop table" })}\n`);
    appendFileSync(path, `${JSON.stringify({ ...event(6), hash: "planted", extra: 1 })}\n`); // fields an event has not: dropped
    appendFileSync(path, JSON.stringify(event(7)).slice(0, 60)); // torn last line
    await log.append(event(8));
    expect(await log.read()).toEqual([event(1), event(3), event(6), event(8)]);
  });

  it("refuses a symbolic link planted in place of the log, and never writes through it", async () => {
    const log = logOf();
    await log.append(event(1));
    const target = join(tmp.dir, "elsewhere");
    writeFileSync(target, "untouched");
    const path = join(base, "audit", "audit.log");
    rmSync(path);
    symlinkSync(target, path);
    const error = await log.append(event(2)).catch((e) => e);
    expect(error).toMatchObject({ code: "STORE_UNAVAILABLE" });
    expect(error.message).toMatch(/symbolic link/);
    await expect(log.read()).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
    expect(readFileSync(target, "utf8")).toBe("untouched");
    expect(lstatSync(path).isSymbolicLink()).toBe(true);
  });

  for (const blocking of [false, true]) {
    it(`a log of 600,000 events (80 MB) is read in chunks${blocking ? " (blocking I/O)" : ""}: limit and since keep only what they return`, async () => {
      const log = logOf({}, blocking);
      await log.append(event(0));
      const total = 600_000;
      const path = join(base, "audit", "audit.log");
      // Appended by the owner outside the store: no rotation, one file far past its 4 MiB.
      const lines: string[] = [];
      for (let i = 1; i < total; i++) {
        lines.push(JSON.stringify({ ...event(i), actor: { kind: "local", user: `ops ${"x".repeat(40)}`, host: "bastion" } }));
        if (lines.length === 50_000 || i === total - 1) appendFileSync(path, `${lines.splice(0).join("\n")}\n`);
      }
      expect(statSync(path).size).toBeGreaterThan(64 * 1024 * 1024);
      expect((await log.read({ limit: 2 })).map((e) => e.name)).toEqual([`key ${total - 2}`, `key ${total - 1}`]);
      expect((await log.read({ since: T0 + total - 3 })).map((e) => e.name)).toEqual([`key ${total - 3}`, `key ${total - 2}`, `key ${total - 1}`]);
      expect(await log.read({ limit: 0 })).toEqual([]);
      // After a change rotates it, the big file is kept as a rotated one and still read.
      await log.append(event(total));
      expect(readdirSync(join(base, "audit")).filter((f) => f.startsWith("audit-"))).toHaveLength(1);
      expect((await log.read({ limit: 3 })).map((e) => e.name)).toEqual([`key ${total - 2}`, `key ${total - 1}`, `key ${total}`]);
    }, 60_000);
  }

  it("reads only the last maxReadBytes of a file, says at debug level what it skipped, and keeps the time order across files", async () => {
    const messages: string[] = [];
    const dir = join(base, "audit");
    const log = fsDriver({ base, audit: { maxReadBytes: 4096 }, debug: (m) => messages.push(m) }).audit;
    await log.append(event(0));
    for (let i = 1; i < 200; i++) appendFileSync(join(dir, "audit.log"), `${JSON.stringify(event(i))}\n`);
    const read = await log.read();
    expect(read.at(-1)).toEqual(event(199));
    const first = 200 - read.length;
    expect(read).toEqual(Array.from({ length: read.length }, (_, i) => event(first + i))); // the first cut line is skipped, not misread
    expect(read.length * (JSON.stringify(event(0)).length + 1)).toBeLessThanOrEqual(4096);
    expect(read.length).toBeGreaterThan(10);
    expect(messages.join("\n")).toMatch(/audit\.log.*skipped the first \d+ bytes/);
    // Out of order between files (writers with different clocks): the latest by time, oldest first.
    renameSync(join(dir, "audit.log"), join(dir, "audit-20300101T000000000Z-00000000.log"));
    writeFileSync(join(dir, "audit.log"), [150, 300, 5].map((i) => JSON.stringify(event(i))).join("\n") + "\n");
    expect((await log.read({ limit: 3 })).map((e) => e.name)).toEqual(["key 198", "key 199", "key 300"]);
    expect((await log.read({ since: T0 + 150, limit: 4 })).map((e) => e.name)).toEqual(["key 197", "key 198", "key 199", "key 300"]);
  });

  it("refuses a FIFO, socket or directory in place of the log or a rotated file, on reading and appending, with one line and never a hang", async () => {
    const log = logOf();
    await log.append(event(1));
    const dir = join(base, "audit");
    const path = join(dir, "audit.log");
    const plant = async (kind: string, where: string) => {
      rmSync(where, { recursive: true, force: true });
      if (kind === "fifo") execFileSync("mkfifo", [where]);
      else if (kind === "directory") mkdirSync(where);
      else {
        const server = createServer();
        await new Promise<void>((done) => server.listen(where, done));
        return () => new Promise<void>((done) => server.close(() => done()));
      }
      return async () => {};
    };
    for (const kind of ["fifo", "socket", "directory"]) {
      const unplant = await plant(kind, path);
      for (const attempt of [() => log.read(), () => log.read({ limit: 1 }), () => log.append(event(2))]) {
        const error = await attempt().catch((e) => e);
        expect(error, kind).toMatchObject({ code: "STORE_UNAVAILABLE" });
        expect(error.message).toBe(`Key store unavailable: ${path} is not a regular file but a ${kind}, which the store never makes: someone else may have planted it. Remove it.`);
      }
      await unplant();
      rmSync(path, { recursive: true, force: true });
    }
    await log.append(event(3));
    const rotated = join(dir, "audit-20300101T000000000Z-00000000.log");
    execFileSync("mkfifo", [rotated]);
    await expect(log.read()).rejects.toThrow(`${rotated} is not a regular file but a fifo`);
    rmSync(rotated);
    rmSync(join(dir, "reserve"));
    mkdirSync(join(dir, "reserve"));
    await expect(log.append(event(4))).rejects.toThrow(`${join(dir, "reserve")} is not a regular file but a directory`);
    rmSync(join(dir, "reserve"), { recursive: true });
    await log.append(event(5));
    expect(await log.read()).toEqual([event(3), event(5)]);
  });

  it("makes a loosened log, rotated file or reserve of its own 0600 again, and refuses one that is another user's", async () => {
    const log = logOf({ maxBytes: 1 << 20 });
    await log.append(event(1));
    const dir = join(base, "audit");
    const path = join(dir, "audit.log");
    const mode = (p: string) => statSync(p).mode & 0o777;
    chmodSync(path, 0o666);
    await log.append(event(2));
    expect(mode(path)).toBe(0o600);
    chmodSync(path, 0o644);
    expect(await log.read()).toEqual([event(1), event(2)]);
    expect(mode(path)).toBe(0o600);
    const rotated = join(dir, "audit-20300101T000000000Z-00000000.log");
    writeFileSync(rotated, `${JSON.stringify(event(0))}\n`, { mode: 0o664 });
    chmodSync(rotated, 0o664);
    expect(await log.read()).toEqual([event(0), event(1), event(2)]);
    expect(mode(rotated)).toBe(0o600);
    chmodSync(join(dir, "reserve"), 0o644);
    await log.append(event(3));
    expect(mode(join(dir, "reserve"))).toBe(0o600);
    if (process.geteuid?.() !== 0 && !process.env.CI) return; // giving a file away needs root (CI runs as root)
    for (const file of [path, rotated]) {
      chownSync(file, 4242, 4242);
      const refused = [await log.read().catch((e) => e), ...(file === path ? [await log.append(event(4)).catch((e) => e)] : [])];
      for (const error of refused) {
        expect(error).toMatchObject({ code: "STORE_UNAVAILABLE" });
        expect(error.message).toContain(`${file} belongs to uid 4242, not to the store's owner (uid 0): someone else may have planted it. Remove it`);
      }
      chownSync(file, 0, 0);
    }
    expect(await log.read()).toEqual([event(0), event(1), event(2), event(3)]);
  });

  it("a page's cursor holds across a rotation: the next page goes on from the same event, in the file it was renamed to", async () => {
    const log = logOf({ maxBytes: 4_096, keep: 50 }, false);
    for (let i = 0; i < 100; i++) await log.append(event(i));
    const first = await log.page!({ limit: 10 });
    expect(first.events).toEqual(Array.from({ length: 10 }, (_, i) => event(90 + i)));
    // More events rotate audit.log (the page's file) away under another name.
    for (let i = 100; i < 200; i++) await log.append(event(i));
    const seen: AuditEvent[] = [];
    for (let cursor = first.cursor; cursor !== null;) {
      const page = await log.page!({ limit: 7, cursor });
      seen.unshift(...page.events);
      cursor = page.cursor;
    }
    expect(seen).toEqual(Array.from({ length: 90 }, (_, i) => event(i)));
    await expect(log.page!({ limit: 1, cursor: "1-x" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(await log.page!({ limit: 1, cursor: "1-0" })).toEqual({ events: [], cursor: null }); // a file no longer there
  });

  for (const blocking of [false, true]) {
    it(`rotation${blocking ? " (blocking I/O)" : ""} keeps the files bounded and loses only the oldest events`, async () => {
      const maxBytes = 4_096;
      const keep = 3;
      const log = logOf({ maxBytes, keep }, blocking);
      const total = 600;
      for (let i = 0; i < total; i++) await log.append(event(i));
      const dir = join(base, "audit");
      const files = readdirSync(dir).sort();
      const rotated = files.filter((f) => /^audit-\d{8}T\d{12}Z-[0-9a-f]{8}\.log$/.test(f));
      expect(files).toEqual([...rotated, "audit.log", "reserve"]);
      expect(rotated).toHaveLength(keep);
      const lineBytes = JSON.stringify(event(total)).length + 1;
      for (const file of [...rotated, "audit.log"]) expect(statSync(join(dir, file)).size).toBeLessThanOrEqual(maxBytes + lineBytes);
      const read = await log.read();
      // A contiguous run of the latest events: at least `keep` full files' worth, ending at the last one.
      const first = total - read.length;
      expect(read).toEqual(Array.from({ length: read.length }, (_, i) => event(first + i)));
      expect(read.length).toBeGreaterThanOrEqual(Math.floor((keep * maxBytes) / lineBytes));
      expect(read.length).toBeLessThan(total);
    });
  }

  it("8 processes appending 500 events each at once: every line whole, none lost, none twice, also across rotations", async () => {
    const worker = join(tmp.dir, "append.mjs");
    writeFileSync(worker, `
      import { fsDriver } from ${JSON.stringify(join(ROOT, "dist/lib/store/drivers/fs.js"))};
      const [base, w, maxBytes] = process.argv.slice(2);
      const log = fsDriver({ base, blocking: w % 2 === 0, audit: { maxBytes: Number(maxBytes), keep: 1000 } }).audit;
      for (let i = 0; i < 500; i++) {
        await log.append({ at: new Date().toISOString(), action: "update", id: w + "-" + i, name: "worker " + w,
          actor: { kind: "local", user: "u".repeat(Number(w) * 40), host: "h" }, changed: ["description"] });
      }
    `);
    const run = (dir: string, maxBytes: number) =>
      Promise.all(Array.from({ length: 8 }, (_, w) => new Promise<void>((done, fail) => {
        const child = spawn(process.execPath, [worker, dir, String(w), String(maxBytes)], { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
        child.on("error", fail);
        child.on("close", (code) => (code === 0 ? done() : fail(new Error(`worker ${w} exited ${code}: ${stderr}`))));
      })));

    for (const [name, maxBytes] of [["one file", 1 << 30], ["rotating", 16_384]] as const) {
      const dir = join(tmp.dir, name);
      await run(dir, maxBytes);
      const files = readdirSync(join(dir, "audit")).filter((f) => f.endsWith(".log"));
      if (name === "one file") expect(files).toEqual(["audit.log"]);
      else expect(files.length).toBeGreaterThan(20);
      // Every line of every file is one whole event: nothing interleaved or torn.
      const lines = files.flatMap((f) => readFileSync(join(dir, "audit", f), "utf8").split("\n").filter(Boolean));
      for (const line of lines) expect(() => JSON.parse(line), line.slice(0, 80)).not.toThrow();
      expect(lines).toHaveLength(4_000);
      const read = await fsDriver({ base: dir }).audit.read();
      expect(read).toHaveLength(4_000);
      expect(new Set(read.map((e) => e.id)).size).toBe(4_000);
      // Each writer's events all there, in the order of their times. Two events of one writer in the same
      // millisecond may read in either order when a rotation falls between them: rotated files are ordered
      // by the time of their rename, which another writer may make a moment late (docs/security.md, "Audit trail: storage").
      for (let w = 0; w < 8; w++) {
        const mine = read.filter((e) => e.name === `worker ${w}`);
        const seq = (id: string) => Number(id.split("-")[1]);
        expect(mine.map((e) => e.id).sort((a, b) => seq(a) - seq(b))).toEqual(Array.from({ length: 500 }, (_, i) => `${w}-${i}`));
        const at = mine.map((e) => Date.parse(e.at));
        expect(at.every((t, i) => i === 0 || t >= at[i - 1])).toBe(true);
        const byId = new Map(mine.map((e) => [seq(e.id), Date.parse(e.at)]));
        for (let i = 1; i < 500; i++) expect(byId.get(i)!).toBeGreaterThanOrEqual(byId.get(i - 1)!);
      }
    }
  }, 120_000);
});

describe("audit trail on Redis", () => {
  it("is a capped stream: the oldest events go, the latest stay whole and in order", async () => {
    const prefix = `cap${++prefixes}`;
    const { audit, dispose } = await openRedisBackend(`${redis.url}?prefix=${prefix}`, { auditCap: 200 });
    try {
      for (let i = 0; i < 2_000; i++) await audit.append(event(i));
      const length = await admin.xlen(`${prefix}:audit`);
      expect(length).toBeGreaterThanOrEqual(200);
      expect(length).toBeLessThan(400); // MAXLEN ~ trims whole nodes of 100 entries
      const read = await audit.read();
      expect(read).toEqual(Array.from({ length: read.length }, (_, i) => event(2_000 - read.length + i)));
      expect(await audit.read({ limit: 5 })).toEqual([1995, 1996, 1997, 1998, 1999].map((i) => event(i)));
      // Entry ids follow the events' times, so `since` is one range read.
      const [[id]] = await admin.xrange(`${prefix}:audit`, "-", "+", "COUNT", 1);
      expect(id).toBe(`${Date.parse(read[0].at)}-0`);
    } finally {
      await dispose();
    }
  });

  it("skips entries it did not write and answers with events only", async () => {
    const prefix = `foreign${++prefixes}`;
    const { audit, dispose } = await openRedisBackend(`${redis.url}?prefix=${prefix}`);
    try {
      await audit.append(event(1));
      await admin.xadd(`${prefix}:audit`, "*", "event", "{not json");
      await admin.xadd(`${prefix}:audit`, "*", "other", JSON.stringify(event(2)));
      await admin.xadd(`${prefix}:audit`, "*", "event", JSON.stringify({ ...event(3), actor: null }));
      await audit.append(event(4, { hash: "x" } as Partial<AuditEvent>));
      expect(await audit.read()).toEqual([event(1), event(4)]);
      expect(await audit.read({ limit: 1 })).toEqual([event(4)]);
    } finally {
      await dispose();
    }
  });
});

// An overwrite's event names the key it read (`replaced`); it commits by compare-and-swap against that key, and
// reads again (with a new event) when a concurrent overwrite moved the name on. Before, it swapped blindly and the
// key a concurrent overwrite had swapped in was discarded with no event naming it.
describe("concurrent overwrites of one name", () => {
  it("every key an overwrite removed is named by an event", async () => {
    const storage = createStorage();
    const atomic = createLocalAtomicIndex(storage);
    const audit = createMemoryAuditLog();
    const open = () => createKeyStore({ storage, atomic, audit });
    const first = await open().create(input("hot"));
    const made = await Promise.all(Array.from({ length: 8 }, () => open().create(input("hot"), { overwrite: true })));
    const live = (await open().list()).map((k) => k.id);
    const named = new Set((await audit.read()).flatMap((e) => (e.replaced ? [e.replaced] : [])));
    for (const { id } of [first, ...made]) if (!live.includes(id)) expect(named.has(id), `key ${id} removed without an event naming it`).toBe(true);
  });
});
