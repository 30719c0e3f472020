/**
 * What the delivery worker counts for /metrics: attempts by result, and the messages each endpoint still
 * waits for (as of the worker's last pass over it). Plain numbers; the metrics read them at scrape time.
 */
export const DELIVERY_RESULTS = ["delivered", "failed", "gave_up"] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

export interface WebhookStats {
  attempts: Record<DeliveryResult, number>;
  /** Endpoint id -> messages waiting. */
  backlog: Map<string, number>;
}

export function createWebhookStats(): WebhookStats {
  return { attempts: { delivered: 0, failed: 0, gave_up: 0 }, backlog: new Map() };
}
