/**
 * prom-client's default process metrics, collector by collector, without its GC histogram unless asked
 * for. `collectDefaultMetrics` always adds `nodejs_gc_duration_seconds`, which subscribes a
 * `PerformanceObserver` to every garbage collection: Node then builds a performance entry in JavaScript
 * after each one (two deprecation wrappers included on Node 20), dozens of times a second under load,
 * right after the pause every request in flight already waits for. Side by side (`node bench/tail.mjs`)
 * the service's p99 is about 0.1 ms (7%) lower without it, at the same CPU.
 * The other collectors cost nothing between scrapes but the event-loop delay histogram, which is native.
 *
 * The list mirrors prom-client's `lib/defaultMetrics.js` (15.x); tests/http/metrics-process.test.ts fails if
 * prom-client's defaults name a metric this does not serve.
 */
import type { Registry } from "prom-client";
import eventLoopLag from "prom-client/lib/metrics/eventLoopLag.js";
import gc from "prom-client/lib/metrics/gc.js";
import heapSizeAndUsed from "prom-client/lib/metrics/heapSizeAndUsed.js";
import heapSpacesSizeAndUsed from "prom-client/lib/metrics/heapSpacesSizeAndUsed.js";
import osMemoryHeap from "prom-client/lib/metrics/osMemoryHeap.js";
import processCpuTotal from "prom-client/lib/metrics/processCpuTotal.js";
import processHandles from "prom-client/lib/metrics/processHandles.js";
import processMaxFileDescriptors from "prom-client/lib/metrics/processMaxFileDescriptors.js";
import processOpenFileDescriptors from "prom-client/lib/metrics/processOpenFileDescriptors.js";
import processRequests from "prom-client/lib/metrics/processRequests.js";
import processResources from "prom-client/lib/metrics/processResources.js";
import processStartTime from "prom-client/lib/metrics/processStartTime.js";
import version from "prom-client/lib/metrics/version.js";

const WITHOUT_GC = [
  processCpuTotal,
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  eventLoopLag,
  processResources, // a no-op where process.getActiveResourcesInfo is missing, as in prom-client
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
];

/**
 * Registers prom-client's default process metrics on `registry`, with the GC histogram only when `gc`.
 * @example collectProcessMetrics(new Registry(), { gc: false });
 */
export function collectProcessMetrics(registry: Registry, options: { gc: boolean }): void {
  const config = { register: registry, eventLoopMonitoringPrecision: 10 }; // prom-client's default precision
  for (const collect of options.gc ? [...WITHOUT_GC, gc] : WITHOUT_GC) collect(registry, config);
}
