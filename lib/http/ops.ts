/**
 * What `serve` adds for operators, loaded with the command (prom-client is not needed by the CLI's other
 * commands, nor by the library's handler unless asked): the log, the metrics, the allow-list check.
 */
export { createServiceLog, isJsonFormat, type ServiceLog } from "./service-log.ts";
export { createMetrics, DEFAULT_METRICS_ALLOW, observers, type ServiceMetrics } from "./metrics.ts";
export { addressMatcher } from "./ops-routes.ts";
export { checkAuthThrottle } from "./auth-throttle.ts";
