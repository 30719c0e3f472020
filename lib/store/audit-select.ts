/**
 * Which events of an audit trail a query asks for, and when a reader going back through a trail may stop:
 * shared by the logs (`audit.ts`, the drivers) and the remote client, which pages through a service's
 * trail and must list what a local read lists. No runtime module here, so the client can take it.
 */
import { ServiceError } from "../core/errors.ts";
import type { AuditEvent } from "../core/model.ts";

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

/**
 * A page of a trail in its own order, the order its events were appended (`AuditLog.page`): paging by
 * position, never by time, finds every event once, also where times step back (a clock step, writers on
 * hosts a little apart). `since` and `before` are filters on the events' times, not the paging key.
 */
export interface AuditPageQuery {
  since?: number;
  before?: number;
  /** At most this many events (at least 1). */
  limit: number;
  /** Events before this position (a page's `cursor`); absent: from the trail's end. Opaque, made by the log. */
  cursor?: string;
}

export interface AuditPage {
  /** In trail order, oldest first: the `limit` nearest before the cursor that the filters let through. */
  events: AuditEvent[];
  /** Where the page's first event is, for the page before it; null when nothing before it can be wanted. */
  cursor: string | null;
}

/** The error for a cursor a log did not make. */
export const badCursor = (cursor: string) =>
  new ServiceError("INVALID_INPUT", `auditTrail: cursor ${JSON.stringify([...cursor].slice(0, 40).join(""))} is not one this trail gave; page with the cursor of the page before`);

/**
 * Gathers one `AuditPage` from events offered newest first in trail order, each with its position: the
 * first `limit` the filters let through. `done` says when a reader may stop: the page is full, or a stretch
 * is over `CLOCK_SKEW_MS` older than `since` (the same rule as `createEventSelector`'s).
 */
export function createPageCollector({ since = -Infinity, before = Infinity, limit }: AuditPageQuery) {
  const events: AuditEvent[] = [];
  let cursor: string | null = null;
  let ended = false;
  const wants = (time: number) => events.length < limit && time >= since && time < before;
  return {
    /** False when an event of this time would not be taken: a reader may then skip parsing the rest of it. */
    wants,
    offer(event: AuditEvent, position: string): void {
      if (!wants(Date.parse(event.at))) return;
      events.push(event);
      if (events.length === limit) cursor = position;
    },
    done(time: number): boolean {
      if (time !== -Infinity && time < since - CLOCK_SKEW_MS) ended = true;
      return ended || events.length >= limit;
    },
    result(): AuditPage {
      return { events: events.reverse(), cursor: events.length >= limit && !ended ? cursor : null };
    },
  };
}
