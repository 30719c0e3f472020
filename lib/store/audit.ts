/**
 * The audit trail's contract, and the in-process implementation (memory stores, tests). The file log
 * lives in `drivers/_fs-audit.ts`, the Redis stream in `drivers/redis.ts`.
 *
 * The store appends an event before the change it describes takes effect (write-ahead): a change is
 * never made without its event. A crash, or a race lost at the change's last step, can leave an event
 * whose change did not happen; the reverse cannot occur.
 */
import { hostname, userInfo } from "node:os";
import type { Actor, AuditEvent } from "../core/model.ts";

export interface AuditQuery {
  /** Events at or after this instant (ms since the epoch). */
  since?: number;
  /** At most this many: the latest ones (still oldest first). */
  limit?: number;
}

export interface AuditLog {
  /** Appends one event, durably, before resolving; many processes may append at once. */
  append(event: AuditEvent): Promise<void>;
  /** Events matching `query`, oldest first. */
  read(query?: AuditQuery): Promise<AuditEvent[]>;
}

/** Events a memory log keeps; older ones are dropped, as a capped log on disk or in Redis drops them. */
const MEMORY_EVENTS = 10_000;

/** An audit log in this process's memory, for the memory store and tests. */
export function createMemoryAuditLog(capacity = MEMORY_EVENTS): AuditLog {
  const events: AuditEvent[] = [];
  return {
    append: async (event) => {
      events.push(structuredClone(event));
      if (events.length > capacity) events.splice(0, events.length - capacity);
    },
    read: async (query = {}) => selectEvents(events, query),
  };
}

/** The events of `events` (oldest first) that `query` asks for. */
export function selectEvents(events: readonly AuditEvent[], { since, limit }: AuditQuery = {}): AuditEvent[] {
  const from = since === undefined ? events : events.filter((e) => Date.parse(e.at) >= since);
  return limit === undefined ? [...from] : from.slice(Math.max(0, from.length - limit));
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
