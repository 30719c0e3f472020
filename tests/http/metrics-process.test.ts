// The process metrics on /metrics: every default metric prom-client has, except its GC histogram, which
// makes Node report each garbage collection to JavaScript (it cost the service about 7% of its p99; see
// lib/http/_process-metrics.ts) and is served only when asked for.
import { collectDefaultMetrics, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { startServer } from "../helpers/server.ts";
import { createMetrics } from "../../lib/http/metrics.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";

const GC = "nodejs_gc_duration_seconds";

/** The metric names of an exposition (its TYPE lines). */
const names = (text: string) => new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));

async function defaultNames(): Promise<Set<string>> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return names(await registry.metrics());
}

describe("process metrics", () => {
  it("serves every default metric of prom-client but the GC histogram, unless gcMetrics is set", async () => {
    const expected = await defaultNames();
    expect(expected.has(GC)).toBe(true); // what prom-client's defaults would add
    expect(expected.size).toBeGreaterThan(20);

    const served = names((await createMetrics({ store: createKeyStore() }).render()).body);
    for (const name of expected) if (name !== GC) expect(served, name).toContain(name);
    expect(served).not.toContain(GC);

    const withGc = names((await createMetrics({ store: createKeyStore(), gcMetrics: true }).render()).body);
    for (const name of expected) expect(withGc, name).toContain(name);
  });

  it("processMetrics: false serves none of them", async () => {
    const served = names((await createMetrics({ store: createKeyStore(), processMetrics: false }).render()).body);
    expect([...served].filter((name) => !name.startsWith("service_api_"))).toEqual([]);
  });

  it("serve: the GC histogram only with SERVICE_API_METRICS_GC=on, and then it counts collections", async () => {
    const scrape = async (env: Record<string, string>) => {
      const server = await startServer({ store: "memory:", env });
      try {
        // Enough allocation for young-generation collections in the server (each request makes garbage).
        await Promise.all(Array.from({ length: 200 }, () => fetch(`${server.url}/healthz`).then((r) => r.text())));
        return await (await fetch(`${server.url}/metrics`)).text();
      } finally {
        await server.stop();
      }
    };
    const off = await scrape({});
    expect(off).toContain("nodejs_eventloop_lag_seconds");
    expect(off).not.toContain(GC);
    expect(await scrape({ SERVICE_API_METRICS_GC: "off" })).not.toContain(GC);
    const on = await scrape({ SERVICE_API_METRICS_GC: "on" });
    expect(on).toContain(`# TYPE ${GC} histogram`);
    const counted = [...on.matchAll(new RegExp(`^${GC}_count\\{[^}]*\\} (\\d+)$`, "gm"))].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(counted).toBeGreaterThan(0);
  });

  it("a SERVICE_API_METRICS_GC it cannot read stops serve with exit 2, naming the variable", async () => {
    const result = await runCli(["serve", "--port", "0", "--store", "memory:"], { env: { SERVICE_API_METRICS_GC: "sometimes" } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("SERVICE_API_METRICS_GC");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
