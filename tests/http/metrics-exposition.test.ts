// The request metrics are counted in plain numbers and handed to prom-client only at scrape time: the
// exposition must stay what prom-client writes when told of each request as it happens (names, labels
// and their order, buckets, values, the float sum), scrape after scrape.
import { describe, expect, it } from "vitest";
import * as client from "prom-client";
import { createMetrics } from "../../lib/http/metrics.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import type { RequestEvent } from "../../lib/http/types.ts";

/** What the request metrics were before: one prom-client increment and observation per request. */
function reference() {
  const registry = new client.Registry();
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
  return {
    request(event: RequestEvent) {
      requests.labels(event.operation, String(event.status)).inc();
      duration.labels(event.operation).observe(event.ms / 1000);
    },
    render: () => registry.metrics(),
  };
}

/** The request counter's and the duration histogram's lines, HELP and TYPE included. */
const requestSections = (text: string) =>
  text.split("\n").filter((l) => /^(# (HELP|TYPE) )?service_api_request(s_total|_duration_seconds)/.test(l)).join("\n");

describe("request metrics", () => {
  it("expose the same counters, buckets, sums and counts as prom-client told of each request", async () => {
    const ours = createMetrics({ store: createKeyStore(), processMetrics: false });
    const theirs = reference();
    // Durations on and around every bound (in ms), beyond the last one, zero, and fractions that do not
    // add up exactly in binary (the sum must be the same float, so added in the same order).
    const durations = [0, 0.1, 0.5, 0.50001, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 2500.1, 9000, 0.3, 0.7, 1.1, 12.345];
    const operations: RequestEvent["operation"][] = ["query", "none", "mutation"];
    const statuses = [200, 401, 200, 400, 503, 404];
    let seen = 0;
    const send = (n: number) => {
      for (let i = 0; i < n; i++, seen++) {
        const event: RequestEvent = {
          method: "POST",
          path: "/graphql",
          status: statuses[(seen * 7) % statuses.length],
          ms: durations[(seen * 5) % durations.length] + (seen % 2 ? seen / 1e4 : 0), // every other exactly on a bound
          operation: operations[(seen * 3 + (seen >> 2)) % operations.length],
        };
        ours.request(event);
        theirs.request(event);
      }
    };
    const same = async () => {
      const [a, b] = [requestSections((await ours.render()).body), requestSections(await theirs.render())];
      expect(a).toBe(b);
      return a;
    };
    expect(await same()).toContain("# TYPE service_api_requests_total counter"); // nothing counted yet
    send(1);
    await same();
    send(500);
    const text = await same();
    expect(text).toMatch(/service_api_request_duration_seconds_bucket\{le="\+Inf",operation="mutation"\} \d+/);
    expect(text).toMatch(/service_api_requests_total\{operation="none",status="503"\} \d+/);
    // Scraped again without requests, then after more: what was handed over is not handed over twice.
    await same();
    send(333);
    await same();
    await same();
  });

  it("observers() tells every observer of each request", () => {
    const seen: string[] = [];
    return import("../../lib/http/metrics.ts").then(({ observers }) => {
      const both = observers({ request: (e) => void seen.push(`a ${e.status}`) }, {}, { request: (e) => void seen.push(`b ${e.status}`) });
      both.request({ method: "GET", path: "/", status: 200, ms: 1, operation: "none" });
      both.authFailed("missing");
      expect(seen).toEqual(["a 200", "b 200"]);
    });
  });
});
