/**
 * The service's Prometheus metrics, with prom-client: the de-facto standard client for Node, whose
 * registry also brings the process metrics (CPU, memory, event-loop lag, open files; GC durations on
 * request, see `_process-metrics.ts`) and writes the
 * text format correctly (escaping, histogram buckets, HELP/TYPE lines). A request costs no prom-client
 * call: its status and duration are counted in plain numbers and a bucket array, which the metrics' `collect()`
 * hands to prom-client when /metrics is scraped (a counter increment and a histogram observation through
 * prom-client cost 7-8 µs a request under load: label hashing, validation, objects). See
 * docs/operations.md ("Logs, health and metrics").
 *
 * The number of keys is not counted per scrape (a full listing): it is refreshed in the background at
 * most every `keysEveryMs` (default 30 s), so it may be that much behind.
 */
import * as client from "prom-client";
import type { KeyStore } from "../store/key-store.ts";
import { collectProcessMetrics } from "./_process-metrics.ts";
import type { AuthFailure, MetricsEndpoint, RequestEvent, ServiceObserver } from "./types.ts";
import { DELIVERY_RESULTS, type WebhookStats } from "./webhooks/stats.ts";

export interface ServiceMetrics extends ServiceObserver, MetricsEndpoint {}

export interface MetricsOptions {
  store: KeyStore;
  /** Addresses allowed to read /metrics without a key (default loopback). */
  allow?: readonly string[];
  /** Refresh the key count at most this often (default 30 s). */
  keysEveryMs?: number;
  /** Collect Node's process metrics (default true). */
  processMetrics?: boolean;
  /**
   * Also `nodejs_gc_duration_seconds`, prom-client's GC histogram (default false): it has Node report every
   * garbage collection to JavaScript, which costs the service about 7% of its p99 under load.
   */
  gcMetrics?: boolean;
  /** The webhook worker's counts (`http/webhooks/stats.ts`). */
  webhooks?: WebhookStats;
}

export const DEFAULT_METRICS_ALLOW: readonly string[] = ["127.0.0.1", "::1"];

/** The duration histogram's upper bounds, in seconds. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** One operation's duration histogram, as prom-client would hold it after the same observations. */
interface Durations {
  /** Observations per bucket (not cumulative), the last one above every bound. */
  buckets: Float64Array;
  /** Summed in arrival order, as prom-client's `observe` does: the same float. */
  sum: number;
  count: number;
}

/**
 * Requests counted on the request path without prom-client, and handed to it at scrape time: the counter
 * by increments of what was counted since the last scrape, the histogram by setting its label set's
 * buckets, sum and count. Label sets appear in the order first seen, as they did with `inc()`/`observe()`.
 */
function createTally(bounds: readonly number[]) {
  interface Counted { operation: string; status: number; n: number; reported: number }
  const counted: Counted[] = []; // in the order first seen
  const byOperation = new Map<string, { statuses: Map<number, Counted>; durations: Durations }>();
  const durations = new Map<string, Durations>(); // in the order first seen

  return {
    count(operation: string, status: number, seconds: number) {
      let op = byOperation.get(operation);
      if (!op) {
        const d: Durations = { buckets: new Float64Array(bounds.length + 1), sum: 0, count: 0 };
        byOperation.set(operation, (op = { statuses: new Map(), durations: d }));
        durations.set(operation, d);
      }
      let c = op.statuses.get(status);
      if (!c) op.statuses.set(status, (c = { operation, status, n: 0, reported: 0 })), counted.push(c);
      c.n++;
      if (!Number.isFinite(seconds)) return; // prom-client would throw: leave the histogram out
      const d = op.durations;
      let i = 0;
      while (i < bounds.length && !(seconds <= bounds[i])) i++;
      d.buckets[i]++;
      d.sum += seconds;
      d.count++;
    },

    toCounter(counter: client.Counter<"operation" | "status">) {
      for (const c of counted) {
        if (c.n === c.reported) continue;
        counter.inc({ operation: c.operation, status: String(c.status) }, c.n - c.reported);
        c.reported = c.n;
      }
    },

    toHistogram(histogram: client.Histogram<"operation">) {
      // prom-client has no setter for a histogram: its label set is created by `zero()` (the public
      // way), then its buckets, sum and count are set to ours. tests/http/metrics-exposition.test.ts compares the
      // exposition with prom-client's own observations, so a change of that shape fails there.
      const held = (histogram as unknown as { hashMap: Record<string, PromBucketValues> }).hashMap;
      for (const [operation, d] of durations) {
        let entry = Object.values(held).find((e) => e.labels.operation === operation);
        if (!entry) {
          histogram.zero({ operation });
          entry = Object.values(held).find((e) => e.labels.operation === operation)!;
        }
        bounds.forEach((bound, i) => (entry.bucketValues[bound] = d.buckets[i]));
        entry.sum = d.sum;
        entry.count = d.count;
      }
    },
  };
}

interface PromBucketValues {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/** @example const metrics = createMetrics({ store }); serve({ store, observer: metrics, metrics }); */
export function createMetrics(options: MetricsOptions): ServiceMetrics {
  const registry = new client.Registry();
  if (options.processMetrics !== false) collectProcessMetrics(registry, { gc: options.gcMetrics === true });
  const requests: client.Counter<"operation" | "status"> = new client.Counter({
    name: "service_api_requests_total",
    help: "Requests answered, by GraphQL operation type (none: not executed, or another route) and HTTP status.",
    labelNames: ["operation", "status"] as const,
    registers: [registry],
    collect: (): void => tally.toCounter(requests),
  });
  const duration: client.Histogram<"operation"> = new client.Histogram({
    name: "service_api_request_duration_seconds",
    help: "Time from receiving a request to having its answer, in seconds.",
    labelNames: ["operation"] as const,
    buckets: BUCKETS,
    registers: [registry],
    collect: (): void => tally.toHistogram(duration),
  });
  const authFailures = new client.Counter({
    name: "service_api_auth_failures_total",
    help: "Requests refused for their key: missing, malformed, unknown (never issued or revoked), expired, or disabled.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const reason of ["missing", "malformed", "unknown", "expired", "disabled", "address"]) authFailures.inc({ reason }, 0);
  const storeErrors = new client.Counter({
    name: "service_api_store_errors_total",
    help: "Requests answered 503 because the key store failed.",
    registers: [registry],
  });
  const every = options.keysEveryMs ?? 30_000;
  let counted = -Infinity;
  let counting: Promise<void> | undefined;
  new client.Gauge({
    name: "service_api_keys",
    help: `API keys in the store, refreshed at most every ${every / 1000} s (may lag by that much).`,
    registers: [registry],
    async collect() {
      if (performance.now() - counted < every) return;
      counting ??= options.store.list().then(
        (keys) => void this.set(keys.length),
        () => {}, // the store is down: keep the last count (store errors say why)
      ).finally(() => ((counted = performance.now()), (counting = undefined)));
      await counting;
    },
  });
  const retiredUses = new client.Counter({
    name: "service_api_retired_key_uses_total",
    help: "Requests refused for a secret the store retired (its key deleted or replaced): the usual sign of a leak or of a missed rotation.",
    registers: [registry],
  });
  const throttled = new client.Counter({
    name: "service_api_auth_throttled_total",
    help: "Failed authentications answered 429 because their client address was over --auth-failure-limit (not in auth_failures_total).",
    registers: [registry],
  });
  const tally = createTally(BUCKETS);
  if (options.webhooks) webhookMetrics(registry, options.webhooks);

  return {
    allow: options.allow ?? DEFAULT_METRICS_ALLOW,
    request: (event: RequestEvent) => tally.count(event.operation, event.status, event.ms / 1000),
    authFailed: (reason: AuthFailure) => authFailures.inc({ reason }),
    storeError: () => storeErrors.inc(),
    retiredKeyUsed: () => retiredUses.inc(),
    authThrottled: () => throttled.inc(),
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}

/** The webhook deliveries by result and the messages waiting, read from the worker's counts at scrape time. */
function webhookMetrics(registry: client.Registry, stats: WebhookStats): void {
  new client.Gauge({
    name: "service_api_webhook_backlog",
    help: "Webhook messages waiting for delivery, summed over the endpoints this server delivers (as of its last pass).",
    registers: [registry],
    collect() {
      this.set([...stats.backlog.values()].reduce((a, b) => a + b, 0));
    },
  });
  new client.Counter({
    name: "service_api_webhook_deliveries_total",
    help: "Webhook delivery attempts by this server, by result: delivered (2xx), failed (to be retried), gave_up (retries spent).",
    labelNames: ["result"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const result of DELIVERY_RESULTS) this.inc({ result }, stats.attempts[result]);
    },
  });
}

/** Several observers as one (the access log and the metrics). */
export function observers(...all: Partial<ServiceObserver>[]): ServiceObserver {
  const onRequest = all.flatMap((o) => (o.request ? [o.request.bind(o)] : []));
  return {
    request: (event) => {
      for (const request of onRequest) request(event);
    },
    authFailed: (reason) => all.forEach((o) => o.authFailed?.(reason)),
    storeError: () => all.forEach((o) => o.storeError?.()),
    retiredKeyUsed: (use) => all.forEach((o) => o.retiredKeyUsed?.(use)),
    authThrottled: () => all.forEach((o) => o.authThrottled?.()),
  };
}
