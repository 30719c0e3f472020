// Remote `--audit` lists what local `--audit` lists, whatever the trail's size: the client pages back
// through `auditLog(before:)` in answers well under its 4 MiB cap. The trail is laid out as rotation leaves
// it (several files), with three events to a millisecond so that pages cut through events of one time.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { layTrail, trailName } from "../../bench/_audit-trail.mjs";
import type { AuditEvent } from "../../lib/core/model.ts";
import type { AuditLog } from "../../lib/store/audit.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { runCli, tempDir } from "../helpers/cli.ts";
import { startRedis } from "../helpers/redis.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const EVENTS = 10_000;
let tmp: ReturnType<typeof tempDir>;
let store: string;
let server: ServerProcess;
let key: string;

beforeAll(async () => {
  tmp = tempDir("service-api-audit-paging-");
  store = join(tmp.dir, "keys");
  const files = layTrail(store, { events: EVENTS, fileBytes: 1024 * 1024, perMs: 3 });
  expect(files.length).toBeGreaterThan(3);
  const created = await runCli(["apikey", "--create", "--name", "auditor", "--roles", "ADMIN", "--json", "--store", store]);
  expect(created.code, created.stderr).toBe(0);
  key = JSON.parse(created.stdout).key;
  server = await startServer({ store });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  tmp?.cleanup();
});

const local = (...args: string[]) => runCli(["apikey", "--audit", "--json", ...args, "--store", store], { timeoutMs: 60_000 });
const remote = (...args: string[]) =>
  runCli(["apikey", "--audit", "--json", ...args, "--url", server.url], { env: { SERVICE_API_KEY: key }, timeoutMs: 60_000 });

describe("remote --audit", () => {
  it("lists all 10,001 events of a trail whose JSON is over 4 MiB, exactly as local --audit does", async () => {
    const [here, there] = [await local(), await remote()];
    expect(here.code, here.stderr).toBe(0);
    expect(there.stderr).toBe("");
    expect(there.code).toBe(0);
    expect(Buffer.byteLength(here.stdout)).toBeGreaterThan(4 * 1024 * 1024);
    const events = JSON.parse(here.stdout).events;
    expect(events).toHaveLength(EVENTS + 1);
    expect(events.at(-1)).toMatchObject({ action: "create", name: "auditor" });
    expect(there.stdout).toBe(here.stdout);
  }, 120_000);

  it("with --limit and --since, lists what local mode lists, also where a page cuts one millisecond's events", async () => {
    const all = JSON.parse((await local()).stdout).events as { at: string }[];
    const since = all[EVENTS - 4_321].at;
    for (const args of [["--limit", "2500"], ["--limit", "1001"], ["--limit", "1"], ["--since", since], ["--since", since, "--limit", "3000"]]) {
      const [here, there] = [await local(...args), await remote(...args)];
      expect(here.code, here.stderr).toBe(0);
      expect(there.code, `${args.join(" ")}: ${there.stderr}`).toBe(0);
      expect(there.stdout, args.join(" ")).toBe(here.stdout);
    }
    const sinceCount = JSON.parse((await remote("--since", since)).stdout).events.length;
    expect(sinceCount).toBe(all.filter((e) => e.at >= since).length);
  }, 120_000);
});

describe("remote --audit against a service whose pages never end", () => {
  it("stops with a clear error instead of asking forever", async () => {
    // Every answer is a full page of events of one time with the same cursor, whatever was asked.
    let asked = 0;
    const at = new Date().toISOString();
    const fake = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d)).on("end", () => {
        asked++;
        const { variables } = JSON.parse(body);
        const auditLog = Array.from({ length: variables.limit }, (_, i) => ({
          at, action: "create", id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, name: trailName(i),
          actor: { kind: "key", user: null, host: null, id: "11111111-1111-4111-8111-111111111111", name: "x" }, changed: null, replaced: null,
        }));
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ data: { auditTrail: { events: auditLog, cursor: "the same" } } }));
      });
    });
    await new Promise<void>((done) => fake.listen(0, "127.0.0.1", done));
    try {
      const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
      const result = await runCli(["apikey", "--audit", "--json", "--url", url], { env: { SERVICE_API_KEY: key }, timeoutMs: 60_000 });
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout)).toMatchObject({ code: "INTERNAL" });
      expect(JSON.parse(result.stdout).error).toBe("The service's audit trail came back with a page that does not move back through the trail; stopped reading");
      expect(asked).toBe(2);
    } finally {
      fake.close();
    }
  }, 60_000);
});

describe("remote --audit on a trail whose times step back", () => {
  /**
   * Appends 2,600 events to `log` as writers whose clocks disagree leave them: 1,300 a minute ago, then 1,300
   * whose times are ten minutes earlier (a clock stepped back), 10 ms apart. Paging by time skipped those.
   */
  const writeSteppedTrail = async (log: AuditLog) => {
    const start = Date.now() - 60_000;
    for (let i = 0; i < 2_600; i++) {
      const at = new Date(start + (i < 1_300 ? 0 : -600_000) + 10 * i).toISOString();
      const event: AuditEvent = { at, action: "create", id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, name: trailName(i, 40), actor: { kind: "local", user: "ops", host: i < 1_300 ? "a" : "b" } };
      await log.append(event);
    }
  };
  /** Local and remote `--audit --json` on `store` (a directory or a Redis URL), after an ADMIN key is made there. */
  const bothWays = async (store: string) => {
    const created = await runCli(["apikey", "--create", "--name", "auditor", "--roles", "ADMIN", "--json", "--store", store]);
    expect(created.code, created.stderr).toBe(0);
    const served = await startServer({ store });
    try {
      const here = await runCli(["apikey", "--audit", "--json", "--store", store], { timeoutMs: 60_000 });
      const there = await runCli(["apikey", "--audit", "--json", "--url", served.url], { env: { SERVICE_API_KEY: JSON.parse(created.stdout).key }, timeoutMs: 60_000 });
      expect(here.code, here.stderr).toBe(0);
      expect(there.code, there.stderr).toBe(0);
      return { here: JSON.parse(here.stdout).events as AuditEvent[], there: JSON.parse(there.stdout).events as AuditEvent[] };
    } finally {
      await served.stop();
    }
  };

  it("lists every event local --audit lists, on files rotated while the clock stepped back", async () => {
    const { dir, cleanup } = tempDir("service-api-audit-stepped-");
    try {
      const base = join(dir, "keys");
      const driver = fsDriver({ base, audit: { maxBytes: 32 * 1024, keep: 100 } });
      await writeSteppedTrail(driver.audit);
      const { here, there } = await bothWays(base);
      expect(here).toHaveLength(2_601);
      expect(new Set(here.map((e) => e.id)).size).toBe(2_601);
      expect(there).toEqual(here);
    } finally {
      cleanup();
    }
  }, 120_000);

  it("lists every event local --audit lists, on a real redis-server", async () => {
    const redis = await startRedis();
    try {
      const url = `${redis.url}?prefix=stepped`;
      const backend = await openRedisBackend(url);
      try {
        await writeSteppedTrail(backend.audit);
      } finally {
        await backend.dispose();
      }
      const { here, there } = await bothWays(url);
      expect(here).toHaveLength(2_601);
      expect(new Set(here.map((e) => e.id)).size).toBe(2_601);
      expect(there).toEqual(here);
    } finally {
      await redis.stop();
    }
  }, 120_000);
});
