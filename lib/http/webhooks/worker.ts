/**
 * The delivery worker `serve` runs: every tick, for each enabled endpoint whose lease this server holds
 * (store/webhooks/lease.ts: one server per endpoint at a time, however many share the store), it reads the
 * audit trail from the endpoint's durable cursor (store/webhooks/state.ts) and delivers the messages in
 * order, one at a time. A message is finished after a 2xx or after its retries are spent (Svix's schedule,
 * with jitter: about 37 hours); only then does the cursor move past it, and the state is written after each
 * attempt, so a server killed mid-delivery leaves the message to the next holder, which sends it with the
 * same `webhook-id`. Delivery is at least once: a receiver drops a `webhook-id` it has seen.
 */
import type { KeyStore } from "../../store/types.ts";
import { messagesOf, type WebhookMessage } from "../../store/webhooks/events.ts";
import type { WebhookEndpoint, WebhookStore } from "../../store/webhooks/endpoints.ts";
import { DISABLE_AFTER_MS, type DeliveryState, finish, readFrom, record, retryDelay } from "../../store/webhooks/state.ts";
import { readTrailSince } from "../../store/webhooks/trail.ts";
import { unfinished, wants } from "../../store/webhooks/backlog.ts";
import { createWebhookStats, type WebhookStats } from "./stats.ts";
import { EXPIRY_LOOK_MS, expiryPass } from "./expiry.ts";
import { type SendResult, sendWebhook } from "./send.ts";

export interface WebhookWorkerOptions {
  /** The store: its trail and endpoints, and its keys (`listPages`) for key.expiring and key.expired. */
  store: Pick<KeyStore, "audit" | "webhooks"> & Partial<Pick<KeyStore, "listPages">>;
  /** How often endpoints are looked at (default 1,000 ms). */
  tickMs?: number;
  /** How long a lease lasts without renewal (default 15,000 ms): a killed server's endpoints wait this long. */
  leaseMs?: number;
  /** Messages delivered per endpoint per tick, at most (default 500). */
  batch?: number;
  log?: (level: "info" | "warn" | "error", line: string) => void;
  now?: () => number;
  send?: typeof sendWebhook;
  /** Where attempts and backlogs are counted (/metrics). */
  stats?: WebhookStats;
}

export interface WebhookWorker {
  /** Stops after the attempt in flight; gives up the leases. */
  stop(): Promise<void>;
  /** Resolves after one more full pass over the endpoints (tests, `--test` callers). */
  pass(): Promise<void>;
}

/** While a retry is more than this far off, the backlog is counted (the trail read) at most this often. */
const RECOUNT_MS = 30_000;

/** Delivers `messages` (those left to do for the endpoint, oldest first) while they are due; returns when one fails or none is left. */
async function deliverDue(hooks: WebhookStore, endpoint: WebhookEndpoint, messages: WebhookMessage[], state: DeliveryState, o: Required<Pick<WebhookWorkerOptions, "now" | "send" | "log" | "stats">> & { renew: () => Promise<boolean>; stopped: () => boolean }) {
  let dirty = false;
  for (const message of messages) {
    if (o.stopped()) break;
    if (!wants(endpoint, message.type)) {
      finish(state, message.id, message.at, o.now());
      dirty = true;
      continue;
    }
    if (state.retry?.id === message.id && state.retry.nextAt > o.now()) break;
    if (!(await o.renew())) break;
    const secrets = await hooks.signingSecrets(endpoint.id);
    const result: SendResult = await o.send(endpoint.url, { allowPrivate: endpoint.allowPrivate }, secrets, message, { now: o.now() });
    const attempt = (state.retry?.id === message.id ? state.retry.attempts : 0) + 1;
    record(state, { id: message.id, type: message.type, at: new Date(o.now()).toISOString(), attempt, ok: result.ok, ...(result.status ? { status: result.status } : {}), ...(result.error ? { error: result.error } : {}) });
    if (result.ok) {
      o.stats.attempts.delivered++;
      finish(state, message.id, message.at, o.now());
      delete state.failingSince;
      await hooks.saveState(endpoint.id, state);
      dirty = false;
      continue;
    }
    state.failingSince ??= o.now();
    const delay = retryDelay(attempt);
    o.stats.attempts[delay === undefined ? "gave_up" : "failed"]++;
    if (delay === undefined) {
      o.log("warn", `webhook ${endpoint.id}: gave up on ${message.id} (${message.type}) after ${attempt} attempts: ${result.error}`);
      finish(state, message.id, message.at, o.now());
    } else state.retry = { id: message.id, attempts: attempt, firstAt: state.retry?.firstAt ?? o.now(), nextAt: o.now() + delay };
    await hooks.saveState(endpoint.id, state);
    if (o.now() - state.failingSince > DISABLE_AFTER_MS) {
      o.log("error", `webhook ${endpoint.id}: every attempt failed for ${DISABLE_AFTER_MS / 86_400_000} days: endpoint disabled (webhook --update --enable to resume)`);
      await hooks.update(endpoint.id, { disabled: true, disabledReason: `failing since ${new Date(state.failingSince).toISOString()}` });
    }
    return;
  }
  if (dirty) await hooks.saveState(endpoint.id, state);
}

/** Starts delivering; `stop()` ends it. */
export function startWebhookWorker(options: WebhookWorkerOptions): WebhookWorker {
  const hooks = options.store.webhooks;
  const { tickMs = 1_000, leaseMs = 15_000, batch = 500, log = () => {}, now = Date.now, send = sendWebhook, stats = createWebhookStats() } = options;
  const owner = crypto.randomUUID();
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waiting: (() => void)[] = [];

  const lastRead = new Map<string, number>(); // endpoint id -> when its backlog was last counted
  const lastError = new Map<string, string>(); // endpoint id -> the error last logged, so a lasting one is said once
  const endpointPass = async (endpoint: WebhookEndpoint) => {
    const name = `webhook:${endpoint.id}`;
    const renew = () => hooks!.lease.hold(name, owner, leaseMs);
    if (!(await renew())) return;
    const state = await hooks!.state(endpoint.id);
    await lookAtExpiries(endpoint, state);
    // Waiting long for a retry: the trail since the cursor (perhaps a long backlog) is read only to count it, now and then.
    if (state.retry && state.retry.nextAt - now() > RECOUNT_MS && now() - (lastRead.get(endpoint.id) ?? 0) < RECOUNT_MS) return;
    lastRead.set(endpoint.id, now());
    const messages = messagesOf(await readTrailSince(options.store, readFrom(state)));
    // The batch is cut from what is left to do: a window crowded with events already done (or from before the
    // endpoint was made) must not fill it and keep the cursor where it is.
    await deliverDue(hooks!, endpoint, unfinished(messages, endpoint, state).slice(0, batch), state, { now, send, log, stats, renew, stopped: () => stopped });
    stats.backlog.set(endpoint.id, unfinished(messages, endpoint, state).filter((m) => wants(endpoint, m.type)).length);
    lastError.delete(endpoint.id);
  };
  const lastLook = new Map<string, number>(); // endpoint id -> when the keys' expiries were last looked at
  const lookAtExpiries = async (endpoint: WebhookEndpoint, state: DeliveryState) => {
    if (!options.store.listPages || now() - (lastLook.get(endpoint.id) ?? -Infinity) < EXPIRY_LOOK_MS) return;
    lastLook.set(endpoint.id, now());
    const before = JSON.stringify(state.notified ?? {});
    const { delivered, failed } = await expiryPass(options.store as Pick<KeyStore, "listPages">, hooks!, endpoint, state, { now, send });
    stats.attempts.delivered += delivered;
    stats.attempts.failed += failed;
    if (delivered || failed || JSON.stringify(state.notified ?? {}) !== before) await hooks!.saveState(endpoint.id, state);
  };
  const failed = (id: string, error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    if (lastError.get(id) !== message) log("error", `webhook ${id}: ${message}`);
    lastError.set(id, message);
  };
  // Endpoints are independent: each goes at its own pace, one slow receiver holds up no other.
  const onePass = async () => {
    if (!hooks) return;
    const endpoints = await hooks.list();
    for (const id of stats.backlog.keys()) if (!endpoints.some((e) => e.id === id && !e.disabled)) stats.backlog.delete(id);
    await Promise.all(endpoints.filter((e) => !e.disabled).map((e) => endpointPass(e).catch((error) => failed(e.id, error))));
  };
  const tick = () => {
    current = onePass().catch((error) => log("error", `webhooks: ${error instanceof Error ? error.message : String(error)}`)).finally(() => {
      for (const wake of waiting.splice(0)) wake();
      if (!stopped) timer = setTimeout(tick, tickMs);
    });
  };
  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
      for (const endpoint of (await hooks?.list().catch(() => [])) ?? []) await hooks!.lease.release(`webhook:${endpoint.id}`, owner);
    },
    pass: () => new Promise<void>((resolve) => waiting.push(() => waiting.push(resolve))),
  };
}
