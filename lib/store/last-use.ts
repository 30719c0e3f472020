/**
 * Last use and use counts without a store write per request. The service tells the recorder which key
 * authenticated each request (`seen`: one map update, no I/O, no promise); a timer writes the latest
 * time and the requests counted per UTC day per key through `KeyStore.recordUse`, off the request path:
 * - a key this server has not written yet is written at the next tick, within `tickMs` (5 s);
 * - after that at most once per `intervalMs` (a minute) per key, with the latest time seen meanwhile;
 * - `close` writes what is pending, so a server that stops loses nothing it saw.
 * Several servers each write their own latest time and their own counts; the store keeps the latest of
 * all times and adds the counts (`recordUse`, under the key's lock), and never writes a deleted key back.
 * A failed write keeps the counts it did not write pending, added to those seen meanwhile (see `UNWRITTEN`).
 */
import type { KeyStore, KeyUse, UseRecorderOptions } from "./types.ts";

export type { UseRecorderOptions };

const DAY_MS = 86_400_000;

/**
 * On an error of `recordUse`: the ids it did not write (the one that failed and those after it). A
 * recorder retries only those, so counts written before the failure are not added twice. (A write whose
 * outcome is unknown, a connection lost after the store applied it, may still count twice.)
 */
export const UNWRITTEN: unique symbol = Symbol.for("service-api-keys: recordUse unwritten ids, v1");

/** The ids an error of `recordUse` says were not written (its own, or its cause's), or undefined: all of them. */
function unwrittenOf(error: unknown): ReadonlySet<string> | undefined {
  for (let e = error as { [UNWRITTEN]?: string[]; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (Array.isArray(e[UNWRITTEN])) return new Set(e[UNWRITTEN]);
  }
  return undefined;
}
/** The UTC day of `ms`, `YYYY-MM-DD` (found once per day by a recorder, so toISOString's cost does not matter). */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** A key's uses not yet written: the latest time and the count per day. */
interface Pending {
  at: number;
  days: Record<string, number>;
}

export interface UseRecorder {
  /** Notes that key `id` authenticated a request now: its last use, and one more request today. */
  seen(id: string): void;
  /** Writes what is pending now (tests, shutdown). */
  flush(): Promise<void>;
  /** Flushes and stops the timer. */
  close(): Promise<void>;
}


/** Keys whose last write is remembered; beyond that the oldest are forgotten (their next use writes again, once). */
const WRITTEN_MAX = 100_000;

/** One recorder's state, shared by its steps. */
interface Recorder {
  store: Pick<KeyStore, "recordUse">;
  options: UseRecorderOptions;
  tickMs: number;
  intervalMs: number;
  now: () => number;
  pending: Map<string, Pending>; // id -> uses not yet written
  written: Map<string, number>; // id -> when this server last wrote it
  timer: ReturnType<typeof setInterval> | undefined;
  writing: Promise<void>;
  closed: boolean;
  // The current UTC day, found again only when the clock leaves it (not a date format per request).
  dayStart: number;
  day: string;
}

/** Starts the timer, unless it runs or the recorder is closed. */
function arm(r: Recorder): void {
  if (r.timer || r.closed) return;
  r.timer = setInterval(() => tick(r), r.tickMs);
  r.timer.unref?.();
}

/** Marks the uses of `due` as written at `at`, remembering when each was written before (for `requeue`). */
function markWritten(r: Recorder, due: ReadonlyMap<string, Pending>, at: number): Map<string, number | undefined> {
  const before = new Map<string, number | undefined>();
  for (const [id] of due) {
    r.pending.delete(id);
    before.set(id, r.written.get(id));
    r.written.delete(id); // re-inserted last: the map stays in order of writing, oldest first
    r.written.set(id, at);
  }
  while (r.written.size > WRITTEN_MAX) r.written.delete(r.written.keys().next().value!);
  return before;
}

/** After a failed write: the uses of `due` not written are pending again, as if never attempted, so the next tick retries them (not a minute later). */
function requeue(r: Recorder, due: ReadonlyMap<string, Pending>, before: ReadonlyMap<string, number | undefined>, at: number, error: unknown): void {
  const unwritten = unwrittenOf(error);
  for (const [id, used] of due) {
    if (unwritten && !unwritten.has(id)) continue; // written before the failure

    const since = r.pending.get(id);
    if (since) {
      since.at = Math.max(since.at, used.at);
      for (const [day, n] of Object.entries(used.days)) since.days[day] = (since.days[day] ?? 0) + n;
    } else r.pending.set(id, used);
    const last = before.get(id);
    if (r.written.get(id) === at) last === undefined ? r.written.delete(id) : r.written.set(id, last);
  }
  r.options.onError?.(error);
  arm(r);
}

/** Writes the pending uses that are due (all of them when `force`), after any write still in flight. */
function write(r: Recorder, force: boolean): Promise<void> {
  const at = r.now();
  const due = new Map<string, Pending>();
  for (const [id, used] of r.pending) {
    const last = r.written.get(id);
    if (force || last === undefined || at - last >= r.intervalMs) due.set(id, used);
  }
  if (!due.size) return r.writing;
  const before = markWritten(r, due, at);
  r.writing = r.writing.then(() => r.store.recordUse(due as ReadonlyMap<string, KeyUse>)).catch((error) => requeue(r, due, before, at, error));
  return r.writing;
}

/** The timer's turn: writes what is due, and stops the timer once nothing is pending. */
function tick(r: Recorder): void {
  void write(r, false);
  if (!r.pending.size && r.timer) {
    clearInterval(r.timer);
    r.timer = undefined;
  }
}

/** `UseRecorder.seen`: one map update, no I/O, no promise. */
function seen(r: Recorder, id: string): void {
  const at = r.now();
  if (!(at >= r.dayStart && at < r.dayStart + DAY_MS)) {
    r.dayStart = at - (at % DAY_MS);
    r.day = dayOf(at);
  }
  const use = r.pending.get(id);
  if (use) {
    use.at = at;
    use.days[r.day] = (use.days[r.day] ?? 0) + 1;
  } else r.pending.set(id, { at, days: { [r.day]: 1 } });
  arm(r);
}

/** A use recorder writing through `store.recordUse` (see the top of this file). */
export function createUseRecorder(store: Pick<KeyStore, "recordUse">, options: UseRecorderOptions = {}): UseRecorder {
  const r: Recorder = {
    store,
    options,
    tickMs: options.tickMs ?? 5_000,
    intervalMs: options.intervalMs ?? 60_000,
    now: options.now ?? Date.now,
    pending: new Map(),
    written: new Map(),
    timer: undefined,
    writing: Promise.resolve(),
    closed: false,
    dayStart: NaN,
    day: "",
  };
  return {
    seen: (id) => seen(r, id),
    flush: () => write(r, true),
    close: async () => {
      r.closed = true;
      if (r.timer) clearInterval(r.timer);
      r.timer = undefined;
      await write(r, true);
    },
  };
}
