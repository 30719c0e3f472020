// `apikey --list` as text: a table that fits the terminal (cut with "…", widest column first,
// widths in display columns) and, on a pipe, tab-separated lines that cut and awk can read.
import { describe, expect, it } from "vitest";
import { formatList } from "../../lib/cli/format.ts";
import { expiryCell, keyState, listLines, shortTime } from "../../lib/cli/list.ts";
import { displayWidth, truncate } from "../../lib/cli/width.ts";
import type { ApiKeyInfo } from "../../lib/core/model.ts";
import { runCli, tempDir } from "../helpers/cli.ts";

const key = (over: Partial<ApiKeyInfo>): ApiKeyInfo => ({
  id: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10",
  name: "deploy",
  roles: ["ADMIN"],
  permissions: [],
  createdAt: "2026-11-22T21:08:09.123Z",
  ...over,
});

const table = (keys: ApiKeyInfo[], columns = 80) => formatList(keys, false, { tty: true, columns }).stdout!;

describe("display width", () => {
  it("counts CJK and emoji as 2 columns, combining marks as 0", () => {
    expect(displayWidth("abc")).toBe(3);
    expect(displayWidth("日本語")).toBe(6);
    expect(displayWidth("키")).toBe(2);
    expect(displayWidth("🔑")).toBe(2);
    expect(displayWidth("👩‍💻")).toBe(2); // ZWJ sequence: one cluster
    expect(displayWidth("e\u0301")).toBe(1);
    expect(displayWidth("ｄｅｐｌｏｙ")).toBe(12);
  });

  it("cuts by columns, never through a cluster, and marks the cut with …", () => {
    expect(truncate("日本語の説明", 7)).toBe("日本語…");
    expect(displayWidth(truncate("日本語の説明", 7))).toBe(7);
    expect(truncate("short", 5)).toBe("short");
    expect(truncate("e\u0301e\u0301e\u0301", 2)).toBe("e\u0301…");
  });
});

describe("the table on a terminal", () => {
  const long = [
    key({ name: "release pipeline", description: "Used by the nightly release job to publish images; rotate every quarter", permissions: [{ resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] }, { resource: "VMS", actions: ["READ_ANY"] }] }),
    key({ name: "監視キー", roles: ["VIEWER", "GUEST"], description: "監視用のキーです。夜間のジョブで使います。🔑 絶対に共有しないでください" }),
    key({ name: "short", description: "x" }),
  ];

  it("at 80 columns every row fits, cut with …", () => {
    const lines = table(long).trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(80);
    expect(lines.slice(1).some((line) => line.endsWith("…"))).toBe(true);
    // At 80 columns the id is cut, keeping its start, before the name; expiry and last use are never cut,
    // and the creation time gives way to them (the pipe format and --json keep it).
    for (const line of lines.slice(1)) expect(line).toMatch(/  0b6f1c2…  .*  never {4}never /);
    expect(lines[1]).toMatch(/^release pipeline  /);
    expect(lines[0]).toMatch(/ ROLES  +PERMISSIONS  +EXPIRES  +LAST USED  +DESCRIPTION$/);
  });

  it("keeps the creation time while there is room, and cuts the id only after the others are readable", () => {
    const lines = table(long, 150).trimEnd().split("\n");
    expect(lines[0]).toMatch(/ CREATED  +EXPIRES  +LAST USED  +DESCRIPTION$/);
    for (const line of lines.slice(1)) expect(line).toContain("0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10  ");
    for (const line of lines.slice(1)) expect(line).toContain("  2026-11-22 21:08  never    never  ");
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(150);
  });

  it("cuts the widest column first: the description before the permissions", () => {
    const one = [long[0]];
    const full = table(one, 400).trimEnd().split("\n")[1];
    const cut = table(one, displayWidth(full) - 10).trimEnd().split("\n")[1];
    expect(cut).toContain("DOCKER:READ_ANY,DOCKER:UPDATE_ANY,VMS:READ_ANY");
    expect(cut).toMatch(/Used by the nightly.*…$/);
    const narrow = table(one, 80).trimEnd().split("\n")[1];
    expect(narrow).not.toContain("DOCKER:READ_ANY,DOCKER:UPDATE_ANY,VMS:READ_ANY"); // then the permissions too
  });

  it("aligns columns by display width with CJK names", () => {
    const lines = table(long, 200).trimEnd().split("\n");
    const idAt = lines.map((line) => displayWidth(line.slice(0, line.indexOf("0b6f1c2e"))));
    expect(new Set(idAt.slice(1)).size).toBe(1);
    expect(displayWidth(lines[0].slice(0, lines[0].indexOf("ID")))).toBe(idAt[1]);
  });

  it("shows the time as the delete screen does", () => {
    expect(shortTime("2026-11-22T21:08:09.123Z")).toBe("2026-11-22 21:08");
    expect(table([key({})], 100)).toContain("2026-11-22 21:08");
  });
});

describe("the pipe format", () => {
  it("one tab-separated line per key, no header, fields escaped", () => {
    const text = listLines([
      key({ description: "tab\there\\ and\nnew line", permissions: [{ resource: "VMS", actions: ["READ_ANY"] }] }),
      key({ name: "bare", roles: [] }),
    ]);
    expect(text).toBe(
      "deploy\t0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10\tADMIN\tVMS:READ_ANY\t2026-11-22T21:08:09.123Z\ttab\\there\\\\ and\\nnew line\t\t\t\tactive\t\t\t\t\t\n" +
        "bare\t0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10\t\t\t2026-11-22T21:08:09.123Z\t\t\t\t\tactive\t\t\t\t\t\n",
    );
  });

  it("is what the CLI prints when stdout is not a terminal, whatever COLUMNS says", async () => {
    const tmp = tempDir();
    try {
      const store = ["--store", `${tmp.dir}/keys`];
      const made = await runCli(["apikey", "--create", "--name", "日本 key", "--roles", "ADMIN,VIEWER", "--description", "a long description ".repeat(8).trim(), "--json", ...store]);
      const { id } = JSON.parse(made.stdout);
      const listed = await runCli(["apikey", "--list", ...store], { env: { COLUMNS: "40" } });
      expect(listed.code).toBe(0);
      const fields = listed.stdout.trimEnd().split("\t");
      expect(listed.stdout.split("\n")).toHaveLength(2);
      expect(fields.slice(0, 3)).toEqual(["日本 key", id, "ADMIN,VIEWER"]);
      expect(fields[4]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(fields[5]).toBe("a long description ".repeat(8).trim()); // not cut on a pipe
    } finally {
      tmp.cleanup();
    }
  });
});

describe("expiry and last use (issue 14)", () => {
  const now = Date.parse("2026-11-23T00:00:00Z");
  const keys = [
    key({ name: "ci deploy", expiresAt: "2026-11-23T01:00:00.000Z", lastUsedAt: "2026-11-22T23:59:30.000Z", description: "temporary key for the deploy job" }),
    key({ name: "old", expiresAt: "2026-11-22T22:00:00.000Z" }),
    key({ name: "rotated", graceUntil: "2026-11-23T00:10:00.000Z", lastUsedAt: "2026-11-22T23:00:00.000Z", permissions: [{ resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] }] }),
    key({ name: "rotated", description: "the new secret" }),
  ];
  const lifecycleTable = (columns: number) => formatList(keys, false, { tty: true, columns, now }).stdout!.trimEnd().split("\n");

  it("EXPIRES says never, the time, expired, or the end of a grace period; LAST USED the time or never", () => {
    expect(keys.map((k) => expiryCell(k, now))).toEqual(["2026-11-23 01:00", "expired", "2026-11-23 00:10 (grace)", "never"]);
    expect(keys.map((k) => keyState(k, now))).toEqual(["active", "expired", "grace", "active"]);
    expect(keyState(keys[0], Date.parse(keys[0].expiresAt!))).toBe("expired"); // at the exact instant, as the store decides
    const lines = lifecycleTable(200);
    expect(lines[0]).toMatch(/ CREATED +EXPIRES +LAST USED +DESCRIPTION$/);
    expect(lines[1]).toMatch(/  2026-11-22 21:08  2026-11-23 01:00 +2026-11-22 23:59  temporary key for the deploy job$/);
    expect(lines[2]).toMatch(/  expired +never$/);
    expect(lines[3]).toMatch(/  2026-11-23 00:10 \(grace\)  2026-11-22 23:00$/);
    expect(lines[4]).toMatch(/  never +never +the new secret$/);
  });

  it("at 80 columns every row fits: times whole, the permissions cut, CREATED and then the description left out before a name is cut", () => {
    const lines = lifecycleTable(80);
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(80);
    expect(lines[0]).not.toContain("CREATED");
    expect(lines[0]).toMatch(/ EXPIRES +LAST USED$/);
    expect(lines.slice(1).map((line) => line.split(/ {2,}/)[0])).toEqual(["ci deploy", "old", "rotated (old)", "rotated (new)"]);
    expect(lines[1]).toContain("  2026-11-23 01:00 ");
    expect(lines[1]).toMatch(/  2026-11-22 23:59$/);
    expect(lines[3]).toContain("  2026-11-23 00:10 (grace)  2026-11-22 23:00");
    expect(lines[3]).not.toContain("DOCKER:READ_ANY,DOCKER:UPDATE_ANY"); // cut
  });

  it("the pipe format appends expires, last used, grace until, the state, the labels, the rate limits, the credits, the old secret's end and the allow-list, in that order", () => {
    const rows = listLines(keys, now).split("\n").filter(Boolean).map((line) => line.split("\t"));
    expect(rows.every((fields) => fields.length === 15)).toBe(true);
    expect(rows.map((fields) => fields.slice(6))).toEqual([
      ["2026-11-23T01:00:00.000Z", "2026-11-22T23:59:30.000Z", "", "active", "", "", "", "", ""],
      ["2026-11-22T22:00:00.000Z", "", "", "expired", "", "", "", "", ""],
      ["", "2026-11-22T23:00:00.000Z", "2026-11-23T00:10:00.000Z", "grace", "", "", "", "", ""],
      ["", "", "", "active", "", "", "", "", ""],
    ]);
    const capped = [key({ credits: { remaining: 42, refill: { amount: 1000, interval: "day" } } }), key({ credits: { remaining: 0 } })];
    expect(listLines(capped, now).split("\n").filter(Boolean).map((line) => line.split("\t")[12])).toEqual(["42 (1000/day)", "0"]);
    const fenced = listLines([key({ allowFrom: ["10.0.0.0/8", "2001:db8::/32"] })], now).trimEnd().split("\t");
    expect([fenced.length, fenced[14]]).toEqual([15, "10.0.0.0/8,2001:db8::/32"]);
    expect(rows[0].slice(0, 6)).toEqual(["ci deploy", keys[0].id, "ADMIN", "", "2026-11-22T21:08:09.123Z", "temporary key for the deploy job"]);
  });

  it("a key rotated with a grace period is one row: EXPIRES adds when its old secret stops, the pipe's last field holds it", () => {
    const rotated = key({ name: "rolled", retiringUntil: "2026-11-23T00:10:00.000Z" });
    const ended = key({ name: "rolled long ago", retiringUntil: "2026-11-22T23:00:00.000Z" }); // the store leaves it out then
    expect([expiryCell(rotated, now), expiryCell({ ...rotated, expiresAt: "2026-12-01T00:00:00.000Z" }, now), expiryCell(ended, now)])
      .toEqual(["never (old secret 2026-11-23 00:10)", "2026-12-01 00:00 (old secret 2026-11-23 00:10)", "never"]);
    expect(keyState(rotated, now)).toBe("active");
    const table = formatList([rotated], false, { tty: true, columns: 200, now }).stdout!.trimEnd().split("\n");
    expect(table).toHaveLength(2);
    expect(table[1]).toMatch(/^rolled  .*  never \(old secret 2026-11-23 00:10\)  never/);
    expect(listLines([rotated], now).trimEnd().split("\t").at(-1)).toBe("2026-11-23T00:10:00.000Z");
  });

  it("text from the store cannot act on the terminal: controls and bidi overrides are shown escaped", () => {
    const hostile = [key({ name: "x\u001b]0;owned\u0007", description: "\u202eevil" })];
    const table = formatList(hostile, false, { tty: true, columns: 200, now }).stdout!;
    expect(table).not.toMatch(/[\u0007\u001b\u202e]/);
    expect(table).toContain("x\\u{1b}]0;owned\\u{7}");
    expect(table).toContain("\\u{202e}evil");
    expect(listLines(hostile, now)).toContain("x\\u{1b}]0;owned\\u{7}\t");
  });
});
