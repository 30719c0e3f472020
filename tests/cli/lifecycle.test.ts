// The key lifecycle at the command line: expiry flags, --list marking expired and grace keys,
// --delete --expired, rotation with --overwrite --grace, and the audit trail. The CLI runs as a child
// process on temporary fs stores; the library opens the same store to check what a server would accept.
import { execFileSync } from "node:child_process";
import { appendFileSync, rmSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, describe, expect, it } from "vitest";
import { command as apikey } from "../../lib/cli/commands/apikey.ts";
import { formatError, formatList, type Output } from "../../lib/cli/format.ts";
import { formatAudit } from "../../lib/cli/audit-format.ts";
import { interactiveCreate, interactiveDelete, type PromptFn } from "../../lib/cli/prompts.ts";
import { displayWidth } from "../../lib/cli/width.ts";
import type { ApiKeyInfo, AuditEvent } from "../../lib/core/model.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { createKeyStore, type KeyStore, type KeyStoreOptions } from "../../lib/store/key-store.ts";
import { type RunResult, runCli, tempDir } from "../helpers/cli.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
let stores = 0;
/** A CLI bound to a fresh fs store, and the store's directory. */
function fresh() {
  const dir = join(tmp.dir, `keys-${++stores}`);
  const cli = (...args: string[]) => runCli(["apikey", ...args, "--store", dir]);
  return { dir, cli };
}
const json = (r: RunResult) => JSON.parse(r.stdout);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const nextYear = new Date().getUTCFullYear() + 1;

/** The fs store at `dir` through the library, as a server would open it; `now` sets its clock. */
async function openFs(dir: string, options: KeyStoreOptions = {}): Promise<KeyStore> {
  const driver = fsDriver({ base: dir });
  return createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic, ...options });
}

/** The apikey command in process on a given store (for the audit trail, which a memory store keeps). */
async function inProcess(store: KeyStore, flags: Record<string, unknown>): Promise<Output & { written: string }> {
  let written = "";
  const io = { env: {}, log: () => {}, store, interactive: false, write: (_fd: 1 | 2, text: string) => void (written += text) };
  try {
    return { ...(await apikey.run(flags, io)), written };
  } catch (error) {
    return { ...formatError(error, Boolean(flags.json)), written };
  }
}

describe("expiry flags", () => {
  it("--expires-in sets expiresAt, in the --json result, the summary, --format env and --list --json", async () => {
    const { cli } = fresh();
    const before = Date.now();
    const made = await cli("--create", "--name", "ci deploy", "-r", "ADMIN", "--expires-in", "1h", "--json");
    expect(made.code, made.stderr).toBe(0);
    const result = json(made);
    expect(Object.keys(result)).toEqual(["key", "name", "id", "expiresAt"]);
    const at = Date.parse(result.expiresAt);
    expect(at).toBeGreaterThanOrEqual(before + HOUR);
    expect(at).toBeLessThanOrEqual(Date.now() + HOUR);
    const [listed] = json(await cli("--list", "--json")).keys;
    expect(listed.expiresAt).toBe(result.expiresAt);

    const plain = await cli("--create", "--name", "temp", "-r", "GUEST", "--expires-at", `${nextYear}-12-31T18:00:00Z`);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^sapi_\S+\n$/);
    expect(plain.stderr).toContain("Created API key 'temp' (id ");
    expect(plain.stderr).toContain(`expiring ${nextYear}-12-31 18:00:00 UTC`);

    const env = await cli("--create", "--name", "dotenv", "-r", "GUEST", "--expires-in", "7d", "--format", "env");
    expect(env.stdout).toMatch(/^SERVICE_API_KEY_EXPIRES_AT=\d{4}-\d\d-\d\dT[\d:.]+Z$/m);
  });

  it("without an expiry the create result keeps the specified shape {key, name, id}", async () => {
    const { cli } = fresh();
    const made = await cli("--create", "--name", "forever", "-r", "ADMIN", "--json");
    expect(Object.keys(json(made))).toEqual(["key", "name", "id"]);
    expect(made.stderr).not.toContain("expiring");
  });

  it.each([
    [["--expires-in", "5x"], "--expires-in needs a duration like 45s, 30m, 12h or 7d (got '5x')"],
    [["--expires-in", "0s"], "--expires-in needs a duration"],
    [["--expires-in", "36500d"], "an expiry is at most 3650 days away"],
    [["--expires-at", "2020-01-01"], "--expires-at: 2020-01-01T00:00:00.000Z is not in the future"],
    [["--expires-at", "tomorrow"], "--expires-at needs an ISO 8601 time with its zone"],
    [["--expires-at", "2030-01-01T10:00"], "--expires-at needs an ISO 8601 time with its zone"],
    [["--expires-in", "1h", "--expires-at", "2030-01-01"], "Use --expires-in or --expires-at, not both"],
    [["--grace", "10m"], "--grace keeps the old secret of a key working: it needs --overwrite or --rotate"],
    [["--overwrite", "--grace", "25h"], "--grace is at most 24h"],
    [["--overwrite", "--grace", "soon"], "--grace needs a duration"],
  ])("create refuses %j with exit 2 and creates nothing", async (args, message) => {
    const { cli } = fresh();
    const result = await cli("--create", "--name", "x", "-r", "ADMIN", ...args, "--json");
    expect(result.code).toBe(2);
    expect(json(result).error).toContain(message);
    expect(json(await cli("--list", "--json")).keys).toEqual([]);
  });

  it("--update sets an expiry with --expires-in or --expires-at and clears it with --no-expiry", async () => {
    const { cli } = fresh();
    const { id } = json(await cli("--create", "--name", "ci", "-r", "VIEWER", "--json"));
    const set = await cli("--update", "--name", "ci", "--expires-at", `${nextYear}-01-01`);
    expect([set.code, set.stdout]).toEqual([
      0,
      `Updated API key 'ci' (id ${id}); it expires ${nextYear}-01-01 00:00:00 UTC\n  expires      never -> ${nextYear}-01-01 00:00:00 UTC\n`,
    ]);
    const viaJson = json(await cli("--update", "--id", id, "--expires-in", "30m", "--json"));
    expect(Date.parse(viaJson.expiresAt) - Date.now()).toBeGreaterThan(29 * 60_000);
    const cleared = await cli("--update", "--name", "ci", "--no-expiry");
    expect(cleared.stdout).toMatch(new RegExp(`^Updated API key 'ci' \\(id ${id}\\); it no longer expires\n  expires      \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC -> never\n$`));
    const [key] = json(await cli("--list", "--json")).keys;
    expect(key).not.toHaveProperty("expiresAt");
    expect(key.id).toBe(id); // the same key: its secret stays
  });

  it.each([["1w", 7], ["2w", 14], ["1y", 365]])("--expires-in %s is %i days", async (duration, days) => {
    const { cli } = fresh();
    const before = Date.now();
    const made = await cli("--create", "--name", "ci", "-r", "VIEWER", "--expires-in", duration, "--json");
    expect(made.code, made.stderr).toBe(0);
    const lifetime = Date.parse(json(made).expiresAt) - before;
    expect(lifetime).toBeGreaterThanOrEqual(days * 86_400_000);
    expect(lifetime).toBeLessThan(days * 86_400_000 + 60_000);
  });

  it.each([
    [["--update", "--name", "ci", "--no-expiry", "--expires-in", "1d"], "Use --no-expiry or --expires-in, not both"],
    [["--update", "--name", "ci", "--expires-in", "1mo"], "--expires-in needs a duration"],
    [["--create", "--name", "ci", "-r", "ADMIN", "--no-expiry"], "--create does not take --no-expiry"],
    [["--list", "--expires-in", "1d"], "--list does not take --expires-in"],
    [["--delete", "--name", "ci", "--grace", "1m"], "--delete does not take --grace"],
    [["--list", "--since", "1d"], "--list does not take --since"],
    [["--audit", "--name", "ci"], "--audit does not take --name"],
    [["--delete", "--expired", "--name", "ci"], "Use --expired or --name, not both"],
    [["--delete", "--expired", "--if-exists"], "drop --if-exists"],
    [["--create", "--name", "ci", "-r", "ADMIN", "--expired"], "--create does not take --expired"],
  ])("flags that do not apply are errors: %j exits 2", async (args, message) => {
    const { cli } = fresh();
    const result = await cli(...args);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(message);
  });
});

describe("expired keys: --list and --delete --expired", () => {
  it("an expired key is listed as expired, refused by the store, and pruned exactly with the other expired ones", async () => {
    const { dir, cli } = fresh();
    const short = json(await cli("--create", "--name", "short", "-r", "GUEST", "--expires-in", "1s", "--json"));
    const also = json(await cli("--create", "--name", "also short", "-r", "GUEST", "--expires-in", "1s", "--json"));
    const later = json(await cli("--create", "--name", "later", "-r", "GUEST", "--expires-in", "1d", "--json"));
    const forever = json(await cli("--create", "--name", "forever", "-r", "GUEST", "--json"));
    await sleep(1_100);

    const lines = (await cli("--list")).stdout.trimEnd().split("\n").map((line) => line.split("\t"));
    const state = Object.fromEntries(lines.map((fields) => [fields[0], fields[9]]));
    expect(state).toEqual({ short: "expired", "also short": "expired", later: "active", forever: "active" });

    const store = await openFs(dir);
    try {
      expect(await store.verify(short.key)).toBeNull();
      expect((await store.refusal(short.key)).reason).toBe("expired");
      expect(await store.verify(later.key)).not.toBeNull();
    } finally {
      await store.close();
    }

    const pruned = await cli("--delete", "--expired", "--json");
    expect(pruned.code).toBe(0);
    const body = json(pruned);
    expect(body.deleted).toBe(2);
    expect(body.keys.map((k: { id: string }) => k.id).sort()).toEqual([short.id, also.id].sort());
    expect(Object.keys(body.keys[0])).toEqual(["id", "name"]);
    const left = json(await cli("--list", "--json")).keys.map((k: { id: string }) => k.id).sort();
    expect(left).toEqual([later.id, forever.id].sort());
  });

  it("a sweep that finds nothing exits 0: {deleted:0, keys:[]} with --json, a line on stderr without", async () => {
    const { cli } = fresh();
    await cli("--create", "--name", "forever", "-r", "GUEST");
    const empty = await cli("--delete", "--expired", "--json");
    expect([empty.code, json(empty)]).toEqual([0, { deleted: 0, keys: [] }]);
    const plain = await cli("--delete", "--expired");
    expect([plain.code, plain.stdout]).toEqual([0, ""]);
    expect(plain.stderr).toContain("No expired API keys; nothing was deleted");
  });

  it("plain --delete --expired prints the delete line and names the keys on stderr", async () => {
    const { dir, cli } = fresh();
    // Seeded through the library with a clock two days back, so the key expired a day ago.
    const past = await openFs(dir, { now: () => Date.now() - 2 * DAY });
    try {
      await past.create({ name: "old ci", roles: ["GUEST"], permissions: [], expiresAt: new Date(Date.now() - DAY).toISOString() });
    } finally {
      await past.close();
    }
    const result = await cli("--delete", "--expired");
    expect([result.code, result.stdout]).toEqual([0, "Successfully deleted 1 API key\n"]);
    expect(result.stderr).toContain("Expired: 'old ci'");
  });
});

describe("rotation with --overwrite --grace", () => {
  it("the old secret keeps working until the grace period ends, the new one at once; --list marks the old key", async () => {
    const { dir, cli } = fresh();
    const old = json(await cli("--create", "--name", "deploy", "-r", "ADMIN", "--json"));
    const start = Date.now();
    const rotated = await cli("--create", "--name", "deploy", "-r", "ADMIN", "--overwrite", "--grace", "10m");
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh_ = rotated.stdout.trim();
    const until = /keeps working until (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC/.exec(rotated.stderr);
    expect(until, rotated.stderr).not.toBeNull();
    const said = Date.parse(`${until![1].replace(" ", "T")}Z`);
    expect(said).toBeGreaterThanOrEqual(start + 10 * 60_000 - 1_000);
    expect(said).toBeLessThanOrEqual(Date.now() + 10 * 60_000);

    const listed = json(await cli("--list", "--json")).keys;
    const graced = listed.find((k: { id: string }) => k.id === old.id);
    expect(Date.parse(graced.graceUntil)).toBeGreaterThanOrEqual(said); // the summary never promises more
    const lines = (await cli("--list")).stdout.trimEnd().split("\n").map((line) => line.split("\t"));
    expect(lines.find((f) => f[1] === old.id)!.slice(8, 10)).toEqual([graced.graceUntil, "grace"]);

    const now = await openFs(dir);
    const afterGrace = await openFs(dir, { now: () => Date.parse(graced.graceUntil) + 1 });
    try {
      expect((await now.verify(old.key))?.id).toBe(old.id);
      expect(await now.verify(fresh_)).not.toBeNull();
      expect(await afterGrace.verify(old.key)).toBeNull();
      expect((await afterGrace.refusal(old.key)).reason).toBe("expired");
      expect(await afterGrace.verify(fresh_)).not.toBeNull();
    } finally {
      await now.close();
      await afterGrace.close();
    }
  });

  it("without --grace the old secret stops at once, as before", async () => {
    const { dir, cli } = fresh();
    const old = json(await cli("--create", "--name", "deploy", "-r", "ADMIN", "--json"));
    const rotated = await cli("--create", "--name", "deploy", "-r", "ADMIN", "--overwrite");
    expect(rotated.stderr).not.toContain("keeps working");
    const store = await openFs(dir);
    try {
      expect(await store.verify(old.key)).toBeNull();
    } finally {
      await store.close();
    }
  });
});

describe("the audit trail", () => {
  const me = () => ({ kind: "local", user: userInfo().username, host: hostname() });

  it("--audit --json shows create, update, overwrite and delete, oldest first, by the local user at this host", async () => {
    const store = createKeyStore();
    const made = await inProcess(store, { create: true, name: "ci", roles: "VIEWER", expiresIn: "1d", json: true });
    const { id } = JSON.parse(made.written);
    await inProcess(store, { update: true, name: "ci", roles: "ADMIN", expiry: false });
    await inProcess(store, { create: true, name: "ci", roles: "ADMIN", overwrite: true, grace: "5m", json: true });
    await inProcess(store, { delete: true, name: "ci" });
    const out = await inProcess(store, { audit: true, json: true });
    expect(out.exitCode).toBe(0);
    const { events } = JSON.parse(out.stdout!);
    // The delete also revokes the key the overwrite replaced, still in its grace period: two events.
    expect(events.map((e: AuditEvent) => e.action)).toEqual(["create", "update", "overwrite", "delete", "delete"]);
    for (const event of events) {
      expect(event.actor).toEqual(me());
      expect(Object.keys(event).slice(0, 5)).toEqual(["at", "action", "id", "name", "actor"]);
      expect(event.name).toBe("ci");
    }
    expect(events[0].id).toBe(id);
    expect(events[1].changed).toEqual(expect.arrayContaining(["roles", "expiresAt"]));
    expect(events[2].replaced).toBe(id);
    expect(events.slice(3).map((e: AuditEvent) => e.id).sort()).toEqual([id, events[2].id].sort());
    expect(JSON.stringify(events)).not.toContain("sapi_");
  });

  it("--since takes a duration or a time, --limit keeps the latest", async () => {
    let clock = Date.now() - 10 * DAY;
    const store = createKeyStore({ now: () => clock });
    await inProcess(store, { create: true, name: "ten days", roles: "GUEST" });
    clock = Date.now() - 2 * DAY;
    await inProcess(store, { create: true, name: "two days", roles: "GUEST" });
    clock = Date.now();
    await inProcess(store, { create: true, name: "today", roles: "GUEST" });
    const names = async (flags: Record<string, unknown>) =>
      JSON.parse((await inProcess(store, { audit: true, json: true, ...flags })).stdout!).events.map((e: AuditEvent) => e.name);
    expect(await names({})).toEqual(["ten days", "two days", "today"]);
    expect(await names({ since: "7d" })).toEqual(["two days", "today"]);
    expect(await names({ since: "1d" })).toEqual(["today"]);
    expect(await names({ since: new Date(Date.now() - 3 * DAY).toISOString() })).toEqual(["two days", "today"]);
    expect(await names({ limit: "2" })).toEqual(["two days", "today"]);
    expect(await names({ since: "7d", limit: "1" })).toEqual(["today"]);
    for (const bad of [{ since: "last week" }, { limit: "0" }, { limit: "ten" }]) {
      const result = await inProcess(store, { audit: true, json: true, ...bad });
      expect(result.exitCode, JSON.stringify(bad)).toBe(2);
    }
  });

  it("on a terminal a table within 80 columns, on a pipe tab-separated fields, the store's text escaped", () => {
    const events: AuditEvent[] = [
      { at: "2026-11-22T21:08:09.123Z", action: "create", id: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10", name: "release pipeline", actor: { kind: "local", user: "alice", host: "build-7.example.org" } },
      { at: "2026-11-22T21:09:10.000Z", action: "update", id: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10", name: "release pipeline", actor: { kind: "key", id: "7c1d2e3f-0000-4000-8000-000000000001", name: "admin" }, changed: ["roles", "expiresAt"] },
      { at: "2026-11-22T21:10:11.000Z", action: "overwrite", id: "9a8b7c6d-0000-4000-8000-000000000002", name: "release pipeline", actor: { kind: "local", user: "evil\u001b[2J", host: "h\u202eost" }, replaced: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10" },
    ];
    const table = formatAudit(events, false, { tty: true, columns: 80 }).stdout!;
    const lines = table.trimEnd().split("\n");
    // The name is cut last of all (every command takes it): the id, actor and detail give first.
    expect(lines[0]).toMatch(/^TIME \(UTC\) +ACTION +NAME +ID +ACTOR +DET\S*$/);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(80);
    expect(lines[1]).toMatch(/^2026-11-22 21:08:09  create /);
    expect(lines[2]).toMatch(/  update  +release pipeline \(old\)  0b6f1c2\S*  key 'ad\S*  +rol\S*$/);
    expect(lines[3]).toMatch(/  release pipeline \(new\)  9a8b7c6\S*  evil\\u\{\S*  +rep\S*$/);
    expect(table).not.toMatch(/[\u001b\u202e]/);
    const wide = formatAudit(events, false, { tty: true, columns: 200 }).stdout!;
    expect(wide).toContain("  evil\\u{1b}[2J@h\\u{202e}ost  replaced 0b6f1c2e\n");
    expect(wide).toMatch(/  key 'admin'  +roles,expiresAt\n/);
    expect(wide).not.toMatch(/[\u001b\u202e]/);

    const pipe = formatAudit(events, false, { tty: false, columns: 80 }).stdout!.split("\n").filter(Boolean).map((l) => l.split("\t"));
    expect(pipe[0]).toEqual(["2026-11-22T21:08:09.123Z", "create", events[0].id, "release pipeline", "alice@build-7.example.org", "", "", ""]);
    expect(pipe[1].slice(4)).toEqual(["key 'admin' (7c1d2e3f-0000-4000-8000-000000000001)", "roles,expiresAt", "", ""]);
    expect(pipe[2].slice(4)).toEqual(["evil\\u{1b}[2J@h\\u{202e}ost", "", events[0].id, ""]);

    expect(formatAudit([], false, { tty: true, columns: 80 })).toEqual({ notice: "No audit events", exitCode: 0 });
    expect(formatAudit([], true, { tty: true, columns: 80 }).stdout).toBe('{"events":[]}\n');
  });

  it("the CLI prints a file store's trail across processes", async () => {
    const { cli } = fresh();
    await cli("--create", "--name", "ci", "-r", "GUEST");
    // Another process sees the create: the trail is on disk, not in the process that wrote it.
    expect(json(await cli("--audit", "--json")).events.map((e: AuditEvent) => e.action)).toEqual(["create"]);
    await cli("--update", "--name", "ci", "--expires-in", "1d");
    await cli("--delete", "--name", "ci");
    const audit = await cli("--audit", "--json");
    expect(audit.code).toBe(0);
    const { events } = json(audit);
    expect(events.map((e: AuditEvent) => e.action)).toEqual(["create", "update", "delete"]);
    for (const event of events) expect(event.actor).toEqual(me());
    const plain = await cli("--audit", "--since", "1h");
    expect(plain.stdout.trimEnd().split("\n").map((l) => l.split("\t")[1])).toEqual(["create", "update", "delete"]);
  });
});

describe("the audit trail on a hostile or damaged file store", () => {
  const line = (i: number, extra: Partial<AuditEvent> = {}) =>
    JSON.stringify({ at: new Date(Date.now() - DAY + i).toISOString(), action: "update", id: `id-${i}`, name: `key ${i}`, actor: { kind: "local", user: "ops", host: "bastion" }, changed: ["description"], ...extra });

  it("--audit --limit 2 reads an 80 MB log of 600,000 events in bounded memory, also once a change rotated it", async () => {
    const { dir, cli } = fresh();
    expect((await cli("--create", "--name", "ci", "-r", "GUEST")).code).toBe(0);
    const log = join(dir, "audit", "audit.log");
    const batch: string[] = [];
    for (let i = 0; i < 600_000; i++) {
      batch.push(line(i));
      if (batch.length === 50_000) appendFileSync(log, `${batch.splice(0).join("\n")}\n`);
    }
    // A heap far smaller than the file: holding it, or every event in it, would fail.
    const small = { env: { NODE_OPTIONS: "--max-old-space-size=48" }, timeoutMs: 60_000 };
    const run = (...args: string[]) => runCli(["apikey", ...args, "--store", dir], small);
    const read = await run("--audit", "--limit", "2", "--json");
    expect(read.code, read.stderr).toBe(0);
    expect(json(read).events.map((e: AuditEvent) => e.name)).toEqual(["key 599998", "key 599999"]);
    expect((await run("--delete", "--name", "ci")).code).toBe(0); // rotates the big file: it is kept
    const after = await run("--audit", "--limit", "2");
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.trimEnd().split("\n").map((l) => l.split("\t")[1])).toEqual(["update", "delete"]);
  }, 120_000);

  it("a FIFO in place of audit/audit.log is refused by --audit and by changes, exit 3, one line naming it and the fix", async () => {
    const { dir, cli } = fresh();
    expect((await cli("--create", "--name", "ci", "-r", "GUEST")).code).toBe(0);
    const log = join(dir, "audit", "audit.log");
    rmSync(log);
    execFileSync("mkfifo", [log]);
    const message = `Error: Key store unavailable: ${log} is not a regular file but a fifo, which the store never makes: someone else may have planted it. Remove it.\n`;
    for (const args of [["--audit"], ["--audit", "--json"], ["--create", "--name", "other", "-r", "GUEST"], ["--delete", "--name", "ci"]]) {
      const result = await runCli(["apikey", ...args, "--store", dir], { timeoutMs: 10_000 });
      expect(result.code, args.join(" ")).toBe(3);
      if (args.includes("--json")) expect(json(result)).toMatchObject({ code: "STORE_UNAVAILABLE", error: message.slice(7, -1) });
      else expect(result.stderr).toBe(message);
    }
  });

  const HOSTILE = "a\u202eb\u2028c\u2029d\u200fe\u0085f\u007fg\ufeffh\u2066i\u{e0041}j\u001bk\u0007l";
  const RAW = /[\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\u{e0000}-\u{e007f}\u0000-\u001f]/u;

  it("--audit --json escapes bidi overrides, line and paragraph separators and other format characters planted in the log", async () => {
    const { dir, cli } = fresh();
    expect((await cli("--create", "--name", "ci", "-r", "GUEST")).code).toBe(0);
    appendFileSync(join(dir, "audit", "audit.log"), `${line(1, { name: HOSTILE, actor: { kind: "local", user: HOSTILE, host: "h\u202eost" }, changed: [HOSTILE] } as never)}\n`);
    const out = await cli("--audit", "--json");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trimEnd()).not.toMatch(RAW);
    expect(out.stdout).toContain("a\\u202eb\\u2028c\\u2029d\\u200fe\\u0085f\\u007fg\\ufeffh\\u2066i\\udb40\\udc41j\\u001bk\\u0007l");
    const planted = json(out).events.find((e: AuditEvent) => e.id === "id-1");
    expect(planted).toMatchObject({ name: HOSTILE, actor: { user: HOSTILE, host: "h\u202eost" }, changed: [HOSTILE] });
  });

  it("every JSON output shares that writer: --list --json of keys a remote service or a planted record sent", () => {
    const key: ApiKeyInfo = { id: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10", name: HOSTILE, description: `\u202e${HOSTILE}`, roles: ["VIEWER"], permissions: [], createdAt: "2030-01-01T00:00:00.000Z" } as ApiKeyInfo;
    const { stdout } = formatList([key], true, { tty: false, columns: 80 });
    expect(stdout!.trimEnd()).not.toMatch(RAW);
    expect(JSON.parse(stdout!)).toEqual({ keys: [key] });
    const events: AuditEvent[] = [{ at: "2030-01-01T00:00:00.000Z", action: "create", id: "x", name: HOSTILE, actor: { kind: "key", id: "y", name: HOSTILE } }];
    const audit = formatAudit(events, true, { tty: false, columns: 80 }).stdout!;
    expect(audit.trimEnd()).not.toMatch(RAW);
    expect(JSON.parse(audit).events).toEqual(events);
  });
});

describe("help and completion know the lifecycle flags", () => {
  const FLAGS = ["--expires-in", "--expires-at", "--no-expiry", "--grace", "--expired", "--audit", "--since", "--limit"];

  it("--help lists every new flag and mode, within 80 columns", async () => {
    const { stdout, code } = await runCli(["apikey", "--help"]);
    expect(code).toBe(0);
    for (const flag of FLAGS) expect(stdout, flag).toMatch(new RegExp(`^  ${flag}\\b`, "m"));
    expect(stdout).toMatch(/^ {2}service-api apikey --audit \[--since/m);
    expect(stdout.split("\n").filter((line) => line.length > 80)).toEqual([]);
  });

  it.each(["bash", "zsh", "fish"])("%s completion offers every new flag", async (shell) => {
    const { stdout, code } = await runCli(["completion", shell]);
    expect(code).toBe(0);
    for (const flag of FLAGS) expect(stdout, flag).toContain(shell === "fish" ? `-l ${flag.slice(2)}` : flag);
  });
});

describe("interactive mode and the lifecycle", () => {
  it("the delete screen marks expired keys and keys in their grace period", async () => {
    let clock = Date.now() - 2 * DAY;
    const store = createKeyStore({ now: () => clock });
    await store.create({ name: "old", roles: ["GUEST"], permissions: [], expiresAt: new Date(Date.now() - DAY).toISOString() });
    clock = Date.now();
    await store.create({ name: "deploy", roles: ["GUEST"], permissions: [] });
    await store.create({ name: "deploy", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: 600_000 });
    let labels: string[] = [];
    const prompt: PromptFn = async (_message, options) => {
      labels = ((options as { options?: { label: string }[] }).options ?? []).map((choice) => choice.label);
      return [];
    };
    await interactiveDelete({ delete: true }, store, { prompt, columns: 200 });
    expect(labels).toHaveLength(3);
    expect(labels.find((l) => l.startsWith("old"))).toMatch(/\(expired\)$/);
    expect(labels.filter((l) => /\(grace until \d{4}-\d\d-\d\d \d\d:\d\d\)$/.test(l))).toHaveLength(1);
    expect(labels.filter((l) => !/\)$/.test(l))).toHaveLength(1); // the new deploy key: no mark
  });

  it("interactive create honours --expires-in (no new question)", async () => {
    const store = createKeyStore();
    const asked: string[] = [];
    const prompt: PromptFn = async (message, options) => {
      asked.push(message);
      if (options.type === "text") return message.startsWith("API key name") ? "asked" : "";
      if (options.type === "multiselect") return ["GUEST"];
      if (options.type === "select") return "none";
      return false;
    };
    const out = await interactiveCreate({ create: true, expiresIn: "2h", json: true }, store, { prompt });
    expect(out.exitCode).toBe(0);
    const result = JSON.parse(out.stdout!);
    expect(Object.keys(result)).toEqual(["key", "name", "id", "expiresAt"]);
    expect(Date.parse(result.expiresAt) - Date.now()).toBeGreaterThan(2 * HOUR - 60_000);
    expect(asked.some((m) => /expir/i.test(m))).toBe(false);
    await expect(interactiveCreate({ create: true, expiresIn: "2x" }, store, { prompt })).rejects.toThrow("--expires-in needs a duration");
  });
});
