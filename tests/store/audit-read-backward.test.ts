// Reading the audit trail from its end back: the file scanner finds the same events whatever the chunk
// boundaries fall on, a writer's clock a little ahead is still ordered by time, and `before` pages back
// the same way on memory, files and Redis.
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../lib/core/model.ts";
import { type AuditLog, createMemoryAuditLog } from "../../lib/store/audit.ts";
import { createBackwardScanner, MAX_PIECE } from "../../lib/store/drivers/_fs-audit-scan.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { openRedisBackend } from "../../lib/store/drivers/redis.ts";
import { layTrail } from "../../bench/_audit-trail.mjs";
import { tempDir } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const event = (i: number, time = T0 + i): AuditEvent => ({
  at: new Date(time).toISOString(),
  action: "create",
  id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  name: `Schlüssel ${i} 鍵`,
  actor: { kind: "local", user: "ops", host: "bastion" },
});
const line = (e: AuditEvent) => JSON.stringify(e);

/** The events the backward scanner finds in `text` fed in chunks of `size` bytes, oldest first. */
function scan(text: Buffer, size: number): AuditEvent[] {
  const found: AuditEvent[] = [];
  const scanner = createBackwardScanner({ wants: () => true, offer: (e) => found.push(e) });
  for (let end = text.length; end > 0; end -= size) scanner.push(text.subarray(Math.max(0, end - size), end));
  scanner.end(false);
  return found.reverse();
}

describe("the backward scanner", () => {
  it("finds every whole event, and only those, wherever the chunks are cut", () => {
    const parts = [
      line(event(1)), "\n",
      line(event(2)).slice(0, 45), line(event(3)), "\n", // torn, then the next writer's line glued to it
      '{"hello":"world"}\nnot json at all\n\u0000\u0000\n[1,2]\n',
      line({ ...event(4), actor: { kind: "root" } as never }), "\n",
      line(event(5)), line(event(6)), "\n", // two whole events on one line
      "\n\n", line(event(7)), "\n",
      line(event(8)).slice(0, 70), // torn last line
    ];
    const text = Buffer.from(parts.join(""), "utf8");
    const expected = [1, 3, 5, 6, 7].map((i) => event(i));
    for (const size of [1, 2, 3, 5, 7, 8, 13, 64, 100, 333, text.length]) expect(scan(text, size), `chunks of ${size}`).toEqual(expected);
  });

  it("drops a line of over 1 MiB without an event start, and the event glued before it, but keeps the others", () => {
    const text = Buffer.from([line(event(1)), `${line(event(2))}${"x".repeat(MAX_PIECE + 10)}`, line(event(3)), ""].join("\n"), "utf8");
    for (const size of [4096, 65536, text.length]) expect(scan(text, size), `chunks of ${size}`).toEqual([event(1), event(3)]);
  });
});

describe("reading files from the end", () => {
  it("orders by time a writer whose clock is under a second ahead, across chunks", async () => {
    const tmp = tempDir("service-api-audit-read-");
    try {
      const base = join(tmp.dir, "keys");
      const log = fsDriver({ base }).audit;
      await log.append(event(0));
      // 2,000 events 1 ms apart (about 340 KB), the one at 1,500 from a clock 400 ms ahead.
      const lines = Array.from({ length: 1_999 }, (_, k) => line(k + 1 === 1_500 ? event(1_500, T0 + 1_900) : event(k + 1)));
      appendFileSync(join(base, "audit", "audit.log"), `${lines.join("\n")}\n`);
      const latest = await log.read({ limit: 200 });
      expect(latest.map((e) => e.name)).toContain("Schlüssel 1500 鍵");
      expect(latest.map((e) => Date.parse(e.at) - T0)).toEqual([...Array.from({ length: 199 }, (_, k) => 1_801 + k).slice(0, 99), 1_900, ...Array.from({ length: 100 }, (_, k) => 1_900 + k)]);
      expect(await log.read({ since: T0 + 1_850 })).toHaveLength(151);
    } finally {
      tmp.cleanup();
    }
  });
});

describe("what a read costs on a trail laid out as rotation leaves it (about 20 MiB in 5 files)", () => {
  it("since and limit read the current log's last part, never the rotated files they exclude", async () => {
    const tmp = tempDir("service-api-audit-cost-");
    try {
      const base = join(tmp.dir, "keys");
      const end = Date.now() - 60_000;
      expect(layTrail(base, { events: 42_000, end })).toHaveLength(5);
      const said: string[] = [];
      const log = fsDriver({ base, debug: (m) => said.push(m) }).audit;
      const cost = async (query: object) => {
        said.length = 0;
        const events = await log.read(query);
        const [, bytes, files] = /read (\d+) bytes of (\d+) file/.exec(said.join("\n"))!.map(Number);
        return { events: events.length, bytes, files };
      };
      expect(await cost({ limit: 1 })).toMatchObject({ events: 1, files: 1 });
      expect((await cost({ limit: 1 })).bytes).toBeLessThan(1024 * 1024);
      expect(await cost({ since: end - 99 })).toMatchObject({ events: 100, files: 1 });
      expect(await cost({ since: end - 99, limit: 1000 })).toMatchObject({ events: 100, files: 1 });
      expect(await cost({ limit: 10_000 })).toMatchObject({ events: 10_000, files: 2 });
      expect(await cost({})).toMatchObject({ events: 42_000, files: 5 });
    } finally {
      tmp.cleanup();
    }
  });
});

describe("before", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());
  const tmp = tempDir("service-api-audit-before-");
  afterAll(() => tmp.cleanup());

  const logs: Record<string, () => Promise<AuditLog>> = {
    memory: async () => createMemoryAuditLog(),
    files: async () => fsDriver({ base: join(tmp.dir, "fs"), audit: { maxBytes: 1_000, keep: 100 } }).audit, // rotated every few events
    redis: async () => (await openRedisBackend(`${redis.url}?prefix=before`)).audit,
  };
  for (const [kind, open] of Object.entries(logs)) {
    it(`pages back through the trail on ${kind}: events before the instant, the latest of them`, async () => {
      mkdirSync(tmp.dir, { recursive: true });
      const log = await open();
      const times = Array.from({ length: 30 }, (_, i) => T0 + Math.floor(i / 3) * 60_000); // three events a minute
      for (let i = 0; i < 30; i++) await log.append(event(i, times[i]));
      const ids = (events: AuditEvent[]) => events.map((e) => Number(e.id.slice(-12)));
      expect(ids(await log.read({ before: times[6] }))).toEqual([0, 1, 2, 3, 4, 5]);
      expect(ids(await log.read({ before: times[6], limit: 4 }))).toEqual([2, 3, 4, 5]);
      expect(ids(await log.read({ since: times[3], before: times[9] }))).toEqual([3, 4, 5, 6, 7, 8]);
      expect(ids(await log.read({ before: times[6] + 1, limit: 2 }))).toEqual([7, 8]);
      expect(await log.read({ before: T0 })).toEqual([]);
      // Page by page, nine at a time (pages never cut a minute here): every event once, in order.
      const pages: number[] = [];
      for (let before: number | undefined; ;) {
        const page = await log.read({ limit: 9, ...(before === undefined ? {} : { before }) });
        pages.unshift(...ids(page));
        if (page.length < 9) break;
        before = Date.parse(page[0].at);
      }
      expect(pages).toEqual(Array.from({ length: 30 }, (_, i) => i));
    });
  }
});
