/**
 * The audit trail's contract, and the in-process implementation (memory stores, tests). The file log
 * lives in `drivers/_fs-audit.ts`, the Redis stream in `drivers/_redis-audit.ts`.
 *
 * The store appends an event before the change it describes takes effect (write-ahead): a change is
 * never made without its event. A crash, or a race lost at the change's last step, can leave an event
 * whose change did not happen; the reverse cannot occur.
 */
import { hostname, userInfo } from "node:os";
import { type Actor, AUDIT_ACTIONS, type AuditEvent } from "../core/model.ts";
import { type AuditPage, type AuditPageQuery, type AuditQuery, badCursor, createEventSelector, createPageCollector } from "./audit-select.ts";

export {
  type AuditPage,
  type AuditPageQuery,
  type AuditQuery,
  badCursor,
  CLOCK_SKEW_MS,
  createEventSelector,
  createPageCollector,
  selectEvents,
} from "./audit-select.ts";

export interface AuditLog {
  /** Appends one event, durably, before resolving; many processes may append at once. */
  append(event: AuditEvent): Promise<void>;
  /** Events matching `query`, oldest first. */
  read(query?: AuditQuery): Promise<AuditEvent[]>;
  /**
   * A page of the trail in the order it was written, from `cursor` back (see `AuditPage`). Absent (a log of
   * the library user's): `pageOf` pages through what `read` returns.
   */
  page?(query: AuditPageQuery): Promise<AuditPage>;
  /**
   * False while a log on a disk that filled up has spent the room it keeps in reserve: writes that are
   * only nice to have (a retired secret's entry) then leave the space to the events. Absent: always room.
   */
  hasRoom?(): Promise<boolean>;
}

/** Events a memory log keeps; older ones are dropped, as a capped log on disk or in Redis drops them. */
const MEMORY_EVENTS = 10_000;
/** Events a memory log reads between two checks of whether the answer is complete. */
const MEMORY_STRETCH = 256;

/** An audit log in this process's memory, for the memory store and tests. */
export function createMemoryAuditLog(capacity = MEMORY_EVENTS): AuditLog {
  const events: AuditEvent[] = [];
  let dropped = 0; // events[i] is the trail's event number dropped + i: its position
  return {
    append: async (event) => {
      events.push(structuredClone(event));
      if (events.length > capacity) dropped += events.splice(0, events.length - capacity).length;
    },
    page: async (query) => pageOfList(events, dropped, query),
    // From the newest back, as far as the answer needs: by time, like the logs of several writers.
    read: async (query = {}) => {
      const selector = createEventSelector(query);
      for (let end = events.length; end > 0; end -= MEMORY_STRETCH) {
        let latest = -Infinity;
        for (let i = end - 1; i >= Math.max(0, end - MEMORY_STRETCH); i--) {
          const time = Date.parse(events[i].at);
          latest = Math.max(latest, time);
          if (selector.wants(time)) selector.offer(structuredClone(events[i]));
        }
        if (selector.done(latest)) break;
      }
      return selector.result();
    },
  };
}

/** A page of `list`, a trail whose first event is number `first`, by those numbers (`AuditLog.page`). */
function pageOfList(list: readonly AuditEvent[], first: number, query: AuditPageQuery): AuditPage {
  const collector = createPageCollector(query);
  const cursor = query.cursor === undefined ? first + list.length : Number(query.cursor);
  if (!(Number.isSafeInteger(cursor) && cursor >= 0 && String(cursor) === (query.cursor ?? String(cursor)))) throw badCursor(query.cursor!);
  for (let p = Math.min(cursor, first + list.length) - 1; p >= first;) {
    let latest = -Infinity;
    for (const stop = Math.max(first, p - MEMORY_STRETCH); p >= stop; p--) {
      const time = Date.parse(list[p - first].at);
      latest = Math.max(latest, time);
      if (collector.wants(time)) collector.offer(structuredClone(list[p - first]), String(p));
    }
    if (collector.done(latest)) break;
  }
  return collector.result();
}

/** `AuditLog.page` of a log without one: pages through everything `read` returns (a log of the library user's). */
export async function pageOf(log: AuditLog, query: AuditPageQuery): Promise<AuditPage> {
  return log.page ? log.page(query) : pageOfList(await log.read(), 0, query);
}

const isText = (value: unknown): value is string => typeof value === "string";

/**
 * The event `value` holds, with its fields in the stored order (`at` first) and nothing else; null when
 * it is not a whole event (a torn line, a foreign entry). Logs that outlive the process check what they read.
 */
export function auditEventOf(value: unknown): AuditEvent | null {
  if (typeof value !== "object" || value === null) return null;
  const { at, action, id, name, actor, changed, replaced, reason } = value as Record<string, unknown>;
  if (!isText(at) || !Number.isFinite(Date.parse(at)) || !AUDIT_ACTIONS.includes(action as never) || !isText(id) || !isText(name)) return null;
  if (typeof actor !== "object" || actor === null) return null;
  const a = actor as Record<string, unknown>;
  const who: Actor | null = a.kind === "local" && isText(a.user) && isText(a.host)
    ? { kind: "local", user: a.user, host: a.host }
    : a.kind === "key" && isText(a.id) && isText(a.name)
    ? { kind: "key", id: a.id, name: a.name }
    : null;
  if (!who) return null;
  if (changed !== undefined && !(Array.isArray(changed) && changed.every(isText))) return null;
  if (replaced !== undefined && !isText(replaced)) return null;
  if (reason !== undefined && !isText(reason)) return null;
  return {
    at,
    action: action as AuditEvent["action"],
    id,
    name,
    actor: who,
    ...(changed ? { changed: [...(changed as string[])] } : {}),
    ...(replaced !== undefined ? { replaced } : {}),
    ...(reason !== undefined ? { reason } : {}),
  };
}

/** Events oldest first by their time, in log order among equal times (writers on several hosts or processes may append out of step). */
export function byTime(events: AuditEvent[]): AuditEvent[] {
  const times = new Map(events.map((e) => [e, Date.parse(e.at)]));
  return events.sort((a, b) => times.get(a)! - times.get(b)!);
}

let local: Actor | undefined;
/** The person at this host: the login name (or uid, when the user has no name) and the host name. */
export function localActor(): Actor {
  if (!local) {
    let user: string;
    try {
      user = userInfo().username;
    } catch {
      user = `uid ${process.getuid?.() ?? "?"}`; // an arbitrary container UID with no passwd entry
    }
    local = { kind: "local", user, host: hostname() };
  }
  return local;
}

/** An actor for display: `alice@build-7` or `key 'deploy' (3f2c…)`. */
export function describeActor(actor: Actor): string {
  return actor.kind === "local" ? `${actor.user}@${actor.host}` : `key '${actor.name}' (${actor.id})`;
}
