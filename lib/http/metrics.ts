/**
 * The service's Prometheus metrics, with prom-client: the de-facto standard client for Node, whose
 * registry also brings the process metrics (CPU, memory, event-loop lag, open files) and writes the
 * text format correctly (escaping, histogram buckets, HELP/TYPE lines). Its cost per request is a few
 * counter increments and one histogram observation; see the README ("Watching the service").
 *
 * The number of keys is not counted per scrape (a full listing): it is refreshed in the background at
 * most every `keysEveryMs` (default 30 s), so it may be that much behind.
 */
import * as client from "prom-client";
import type { KeyStore } from "../store/key-store.ts";
import type { AuthFailure, MetricsEndpoint, RequestEvent, ServiceObserver } from "./types.ts";

export interface ServiceMetrics extends ServiceObserver, MetricsEndpoint {}

export interface MetricsOptions {
  store: KeyStore;
  /** Addresses allowed to read /metrics without a key (default loopback). */
  allow?: readonly string[];
  /** Refresh the key count at most this often (default 30 s). */
  keysEveryMs?: number;
  /** Collect Node's process metrics (default true). */
  processMetrics?: boolean;
}

export const DEFAULT_METRICS_ALLOW: readonly string[] = ["127.0.0.1", "::1"];

/** @example const metrics = createMetrics({ store }); serve({ store, observer: metrics, metrics }); */
export function createMetrics(options: MetricsOptions): ServiceMetrics {
  const registry = new client.Registry();
  if (options.processMetrics !== false) client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({
    name: "service_api_requests_total",
    help: "Requests answered, by GraphQL operation type (none: not executed, or another route) and HTTP status.",
    labelNames: ["operation", "status"] as const,
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: "service_api_request_duration_seconds",
    help: "Time from receiving a request to having its answer, in seconds.",
    labelNames: ["operation"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const authFailures = new client.Counter({
    name: "service_api_auth_failures_total",
    help: "Requests refused for their key: missing, malformed, unknown (never issued or revoked), or expired.",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  for (const reason of ["missing", "malformed", "unknown", "expired"]) authFailures.inc({ reason }, 0);
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
  // Label children resolved once: `labels()` per request would hash the label values every time.
  const children = new Map<string, client.Counter.Internal>();
  const timers = new Map<string, client.Histogram.Internal<"operation">>();

  return {
    allow: options.allow ?? DEFAULT_METRICS_ALLOW,
    request(event: RequestEvent) {
      const id = `${event.operation} ${event.status}`;
      let child = children.get(id);
      if (!child) children.set(id, (child = requests.labels(event.operation, String(event.status))));
      child.inc();
      let timer = timers.get(event.operation);
      if (!timer) timers.set(event.operation, (timer = duration.labels(event.operation)));
      timer.observe(event.ms / 1000);
    },
    authFailed: (reason: AuthFailure) => authFailures.inc({ reason }),
    storeError: () => storeErrors.inc(),
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}

/** Several observers as one (the access log and the metrics). */
export function observers(...all: Partial<ServiceObserver>[]): ServiceObserver {
  return {
    request: (event) => all.forEach((o) => o.request?.(event)),
    authFailed: (reason) => all.forEach((o) => o.authFailed?.(reason)),
    storeError: () => all.forEach((o) => o.storeError?.()),
  };
}
