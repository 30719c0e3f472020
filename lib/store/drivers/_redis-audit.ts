/**
 * The audit trail on Redis: a capped stream, `<prefix>:audit` (`XADD ... MAXLEN ~ <cap>`, 100,000 events by
 * default; Redis trims the oldest). Entry ids follow the events' own times (a Lua script adds each at
 * `max(its time, the last id)`), so `since` is one `XRANGE` from `<since>-0`, whatever the server's clock.
 * A page in trail order (`page`) goes back from an entry id, its cursor.
 */
import type { AuditEvent } from "../../core/model.ts";
import { type AuditLog, auditEventOf, badCursor, byTime, CLOCK_SKEW_MS, createPageCollector, selectEvents } from "../audit.ts";
import type { RedisConnection } from "./_redis-connection.ts";
import type { Shape } from "./_redis-desync.ts";

/**
 * Appends an event with an id at its own time (ARGV[1], ms), or just after the newest entry when that is
 * later (ids must grow; writers' clocks differ), so XRANGE by time finds every event at or after it.
 */
const AUDIT_ADD = `local ms = tonumber(ARGV[1])
local seq = 0
local last = redis.call("XREVRANGE", KEYS[1], "+", "-", "COUNT", 1)[1]
if last then
  local lms, lseq = string.match(last[1], "^(%d+)-(%d+)$")
  lms = tonumber(lms)
  if ms <= lms then
    ms = lms
    seq = tonumber(lseq) + 1
  end
end
return redis.call("XADD", KEYS[1], "MAXLEN", "~", ARGV[2], string.format("%.0f-%.0f", ms, seq), "event", ARGV[3])`;
/** Entries read per XRANGE / XREVRANGE round trip. */
const AUDIT_PAGE = 1_000;
const STREAM_ID = /^\d+-\d+$/;
/** An XRANGE reply: [id, [field, value, ...]] entries. */
const isEntries: Shape = (v) =>
  Array.isArray(v) &&
  v.every((e) => Array.isArray(e) && e.length === 2 && typeof e[0] === "string" && STREAM_ID.test(e[0]) &&
    Array.isArray(e[1]) && e[1].every((f: unknown) => typeof f === "string"));

/** The events of a page of entries; an entry that is not a whole event (written by something else) is skipped. */
const eventsOf = (entries: [string, string[]][]): AuditEvent[] =>
  entries.flatMap(([, fields]) => {
    const at = fields.indexOf("event");
    if (at < 0 || at % 2) return [];
    try {
      const event = auditEventOf(JSON.parse(fields[at + 1]));
      return event ? [event] : [];
    } catch {
      return [];
    }
  });

/** The audit log in `<prefix>:audit`, keeping about `auditCap` events. */
export function createRedisAuditLog(connection: RedisConnection, auditCap: number): AuditLog {
  const { client, redisKey, failure, wrap, shaped } = connection;
  const stream = redisKey("audit");
  const range = async (reverse: boolean, from: string, to: string): Promise<[string, string[]][]> =>
    shaped(
      await (reverse ? client.xrevrange(stream, from, to, "COUNT", AUDIT_PAGE) : client.xrange(stream, from, to, "COUNT", AUDIT_PAGE)).catch(failure),
      isEntries,
    ) as [string, string[]][];
  return {
    append: wrap(async (event) => {
      const checked = auditEventOf(event);
      if (!checked) throw new TypeError("Not an audit event");
      const id = await client.eval(AUDIT_ADD, 1, stream, String(Date.parse(checked.at)), String(auditCap), JSON.stringify(checked));
      shaped(id, (v) => typeof v === "string" && STREAM_ID.test(v));
    }),
    // Page by page from `since` (or the start); with a limit, from the newest back, only as far as needed.
    // Ids are at or after each event's time (at most a writer's clock skew after it): `before` bounds them so.
    read: wrap(async (query = {}) => {
      const start = query.since === undefined ? "-" : `${Math.max(0, Math.ceil(query.since))}-0`;
      const end = query.before === undefined ? "+" : `(${Math.max(0, Math.ceil(query.before + CLOCK_SKEW_MS))}-0`;
      const events: AuditEvent[] = [];
      if (query.limit === undefined) {
        for (let from = start; ;) {
          const page = await range(false, from, end);
          events.push(...eventsOf(page));
          if (page.length < AUDIT_PAGE) break;
          from = `(${page[page.length - 1][0]}`;
        }
      } else {
        // A page may hold some before `since` or not before `before`: they do not count.
        const wanted = (e: AuditEvent) => Date.parse(e.at) >= (query.since ?? -Infinity) && Date.parse(e.at) < (query.before ?? Infinity);
        let found = 0;
        for (let to = end; found < query.limit; ) {
          const page = await range(true, to, start);
          const got = eventsOf(page);
          events.unshift(...got.reverse());
          found += got.filter(wanted).length;
          if (page.length < AUDIT_PAGE) break;
          to = `(${page[page.length - 1][0]}`;
        }
      }
      return selectEvents(byTime(events), query);
    }),
    // In trail order, by entry id: an event whose time stepped back has a later id than its time, and is
    // still found, where a page by time would miss it.
    page: wrap(async (query) => {
      if (query.cursor !== undefined && !/^\d{1,19}-\d{1,19}$/.test(query.cursor)) throw badCursor(query.cursor); // within Redis's 64 bits
      const collector = createPageCollector(query);
      for (let to = query.cursor === undefined ? "+" : `(${query.cursor}`; ;) {
        const page = await range(true, to, "-");
        let latest = -Infinity;
        for (const entry of page) {
          const [event] = eventsOf([entry]);
          if (!event) continue;
          latest = Math.max(latest, Date.parse(event.at));
          collector.offer(event, entry[0]);
        }
        if (page.length < AUDIT_PAGE || collector.done(latest)) break;
        to = `(${page[page.length - 1][0]}`;
      }
      return collector.result();
    }),
  };
}
