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

export function createUseRecorder(store: Pick<KeyStore, "recordUse">, options: UseRecorderOptions = {}): UseRecorder {
  const tickMs = options.tickMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 60_000;
  const now = options.now ?? Date.now;
  const pending = new Map<string, Pending>(); // id -> uses not yet written
  const written = new Map<string, number>(); // id -> when this server last wrote it
  let timer: ReturnType<typeof setInterval> | undefined;
  let writing: Promise<void> = Promise.resolve();
  let closed = false;
  // The current UTC day, found again only when the clock leaves it (not a date format per request).
  let dayStart = NaN;
  let day = "";
  const arm = () => {
    if (timer || closed) return;
    timer = setInterval(tick, tickMs);
    timer.unref?.();
  };

  const write = (force: boolean) => {
    const at = now();
    const due = new Map<string, Pending>();
    for (const [id, used] of pending) {
      const last = written.get(id);
      if (force || last === undefined || at - last >= intervalMs) due.set(id, used);
    }
    if (!due.size) return writing;
    const before = new Map<string, number | undefined>();
    for (const [id] of due) {
      pending.delete(id);
      before.set(id, written.get(id));
      written.delete(id); // re-inserted last: the map stays in order of writing, oldest first
      written.set(id, at);
    }
    while (written.size > WRITTEN_MAX) written.delete(written.keys().next().value!);
    writing = writing.then(() => store.recordUse(due as ReadonlyMap<string, KeyUse>)).catch((error) => {
      // Not written: pending again, as if never attempted, so the next tick retries it (not a minute later).
      const unwritten = unwrittenOf(error);
      for (const [id, used] of due) {
        if (unwritten && !unwritten.has(id)) continue; // written before the failure

        const since = pending.get(id);
        if (since) {
          since.at = Math.max(since.at, used.at);
          for (const [day, n] of Object.entries(used.days)) since.days[day] = (since.days[day] ?? 0) + n;
        } else pending.set(id, used);
        const last = before.get(id);
        if (written.get(id) === at) last === undefined ? written.delete(id) : written.set(id, last);
      }
      options.onError?.(error);
      arm();
    });
    return writing;
  };

  const tick = () => {
    void write(false);
    if (!pending.size && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  return {
    seen(id) {
      const at = now();
      if (!(at >= dayStart && at < dayStart + DAY_MS)) {
        dayStart = at - (at % DAY_MS);
        day = dayOf(at);
      }
      const use = pending.get(id);
      if (use) {
        use.at = at;
        use.days[day] = (use.days[day] ?? 0) + 1;
      } else pending.set(id, { at, days: { [day]: 1 } });
      arm();
    },
    flush: () => write(true),
    close: async () => {
      closed = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await write(true);
    },
  };
}
