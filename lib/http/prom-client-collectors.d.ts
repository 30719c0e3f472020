/** prom-client's default collectors, which it ships without types (see lib/http/_process-metrics.ts). */
declare module "prom-client/lib/metrics/*" {
  import type { Registry } from "prom-client";
  const collect: (registry: Registry, config: { register?: Registry; eventLoopMonitoringPrecision?: number }) => void;
  export default collect;
}
