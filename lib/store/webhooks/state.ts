/**
 * An endpoint's delivery state: its durable cursor in the audit trail, the retry of the message at its
 * head, and its last attempts. The cursor is an instant and the ids of the messages finished since a
 * little before it: the trail orders events by their time, and writers on several hosts or processes
 * may append an event up to a clock's skew late, so each read goes back `LOOKBACK_MS` before the cursor
 * and skips what it finished. A message is finished after a 2xx or after its retries gave up; nothing
 * else moves the cursor, so a server killed mid-delivery leaves the message at the head for the next.
 */

/** How far before the cursor each read of the trail starts (several times the trail's clock skew). */
const LOOKBACK_MS = 5_000;
/** The attempts kept for `--deliveries`. */
const KEPT_ATTEMPTS = 20;

export interface DeliveryAttempt {
  /** The message (`webhook-id`) and its event type. */
  id: string;
  type: string;
  /** When the attempt ended (ISO 8601). */
  at: string;
  /** Which attempt of this message, from 1. */
  attempt: number;
  ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why it failed, when it did not answer 2xx (never a secret). */
  error?: string;
}

export interface DeliveryState {
  cursor: { at: number; done: [id: string, at: number][] };
  /** The message at the head that failed: its attempts so far, the first one's time, and when to try again (ms). */
  retry?: { id: string; attempts: number; firstAt: number; nextAt: number };
  /** Since when every attempt failed (ms); cleared by a success. */
  failingSince?: number;
  attempts: DeliveryAttempt[];
  /** key.expiring / key.expired told of: `<type>:<key id>` -> the expiry told of (http/webhooks/expiry.ts). */
  notified?: Record<string, string>;
}

export function emptyState(from: number): DeliveryState {
  return { cursor: { at: from, done: [] }, attempts: [] };
}

/** Where the next read of the trail starts. */
export const readFrom = (state: DeliveryState): number => state.cursor.at - LOOKBACK_MS;

/** Marks a message finished: the cursor moves to its time (never past `now`) and forgets what is far behind. */
export function finish(state: DeliveryState, id: string, at: number, now: number): void {
  const cursorAt = Math.max(state.cursor.at, Math.min(at, now));
  const done = state.cursor.done.filter(([, t]) => t >= cursorAt - LOOKBACK_MS);
  done.push([id, at]);
  state.cursor = { at: cursorAt, done };
  if (state.retry?.id === id) delete state.retry;
}

/** Records an attempt, keeping the latest `KEPT_ATTEMPTS`. */
export function record(state: DeliveryState, attempt: DeliveryAttempt): void {
  state.attempts = [...state.attempts, attempt].slice(-KEPT_ATTEMPTS);
}

/**
 * When to try again after `attempts` failures (Svix's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, 10 h,
 * about 37 hours in all), with up to 20% jitter either way; undefined once the schedule is spent.
 */
const SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, 36_000_000];
export function retryDelay(attempts: number, random: () => number = Math.random): number | undefined {
  const base = SCHEDULE_MS[attempts - 1];
  return base === undefined ? undefined : Math.round(base * (0.8 + 0.4 * random()));
}

/** An endpoint whose every attempt has failed this long is disabled (and the disable audited). */
export const DISABLE_AFTER_MS = 5 * 24 * 3_600_000;
