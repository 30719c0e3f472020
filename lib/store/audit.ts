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

export interface AuditQuery {
  /** Events at or after this instant (ms since the epoch). */
  since?: number;
  /** Events before this instant (ms since the epoch): the page before one already read. */
  before?: number;
  /** At most this many: the latest ones (still oldest first). */
  limit?: number;
}

/**
 * How far apart the clocks of a trail's writers may be (ms). Logs are read from their end and stop once
 * a stretch of events is this much older than anything the answer can still hold: an event written this
 * much later in the log than its time says (a writer's clock behind) is still found, one written earlier
 * (a clock ahead) may not be.
 */
export const CLOCK_SKEW_MS = 1_000;

export interface AuditLog {
  /** Appends one event, durably, before resolving; many processes may append at once. */
  append(event: AuditEvent): Promise<void>;
  /** Events matching `query`, oldest first. */
  read(query?: AuditQuery): Promise<AuditEvent[]>;
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
  return {
    append: async (event) => {
      events.push(structuredClone(event));
      if (events.length > capacity) events.splice(0, events.length - capacity);
    },
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

/** The events of `events` (oldest first) that `query` asks for. */
export function selectEvents(events: readonly AuditEvent[], { since, before, limit }: AuditQuery = {}): AuditEvent[] {
  const from = since === undefined && before === undefined
    ? events
    : events.filter((e) => Date.parse(e.at) >= (since ?? -Infinity) && Date.parse(e.at) < (before ?? Infinity));
  return limit === undefined ? [...from] : from.slice(Math.max(0, from.length - limit));
}

/**
 * `selectEvents` over events offered one at a time, newest first in log order, keeping only what the answer
 * can hold: those at or after `since` and before `before`, and with `limit` at most about twice that many at
 * any moment (the latest by time, log order among equal times, as `byTime` orders them). Memory is bounded
 * by the answer, never by the log; `done` says when a reader going back through the log may stop.
 */
export function createEventSelector({ since, before, limit }: AuditQuery = {}) {
  let kept: { time: number; seq: number; event: AuditEvent }[] = [];
  let seq = 0;
  const until = before ?? Infinity;
  const cap = limit === undefined ? Infinity : Math.max(0, limit);
  const trimAt = Math.max(2 * cap, 1024);
  /** Once `cap` events are kept, an event before the earliest of them can never be among the latest. */
  let floor = since ?? -Infinity;
  let sorted = true;
  const order = () => {
    if (sorted) return;
    sorted = true;
    kept.sort((a, b) => a.time - b.time || a.seq - b.seq);
    if (kept.length > cap) kept = kept.slice(kept.length - cap);
    if (kept.length === cap && cap > 0) floor = Math.max(floor, kept[0].time);
  };
  const wants = (time: number) => cap > 0 && time >= floor && time < until;
  return {
    /** False when an event of this time would not be kept: a reader may then skip parsing the rest of it. */
    wants,
    /**
     * True when the events before a stretch of the log whose latest time is `time` cannot change the answer:
     * `time` is over `CLOCK_SKEW_MS` older than `since`, or than the earliest of `limit` events already kept.
     */
    done(time: number): boolean {
      if (cap === 0) return true;
      if (kept.length >= cap) order();
      return time < floor - CLOCK_SKEW_MS;
    },
    offer(event: AuditEvent): void {
      const time = Date.parse(event.at);
      if (!wants(time)) return;
      kept.push({ time, seq: seq--, event }); // offered newest first: log order is the reverse
      sorted = false;
      if (kept.length >= trimAt) order();
    },
    /** The selected events, oldest first. */
    result(): AuditEvent[] {
      order();
      return kept.map((k) => k.event);
    },
  };
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
