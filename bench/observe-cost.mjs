#!/usr/bin/env node
// node bench/observe-cost.mjs 2>&1 >/dev/null | cat   (stderr through a pipe, as a log collector reads it)
// In-process cost of watching the service, per request of the everyday remembered `{ me { id name } }`
// through the runtime-neutral handler (no HTTP, so the machine's load matters less than with autocannon):
// the handler alone (with and without last-use recording), with the metrics (prom-client), with the metrics and the access log (text, JSON),
// and with a log written line by line (one stderr write per request). Variants alternate over 7 rounds;
// medians in microseconds per request go to the file given (default bench-observe.txt).
import { writeFileSync } from "node:fs";
import { createKeyStore } from "../dist/mod.js";
import { createServiceHandler } from "../dist/lib/http/handler.js";
import { createMetrics, observers } from "../dist/lib/http/metrics.js";
import { createServiceLog } from "../dist/lib/http/service-log.js";

const out = process.argv[2] ?? "bench-observe.txt";
const store = createKeyStore();
const { key } = await store.create({ name: "bench", roles: ["ADMIN"], permissions: [] });
const body = JSON.stringify({ query: "{ me { id name } }" });
const request = {
  method: "POST",
  url: "/graphql",
  headers: { get: (n) => (n === "authorization" ? `Bearer ${key}` : n === "content-type" ? "application/json" : n === "accept" ? "application/json" : null) },
  body: () => body,
  remoteAddress: "127.0.0.1",
};
const metrics = createMetrics({ store, processMetrics: false });
const env = { LOG_LEVEL: "info" };
const variants = {
  "handler alone": createServiceHandler({ store }),
  // Last-use recording is on by default (a Map write per request, the store written by a timer).
  "handler alone, last use off": createServiceHandler({ store, recordLastUse: false }),
  "+ metrics": createServiceHandler({ store, observer: metrics, metrics }),
  "+ metrics + text log": createServiceHandler({ store, observer: observers(createServiceLog({ env }), metrics), metrics }),
  "+ metrics + JSON log": createServiceHandler({ store, observer: observers(createServiceLog({ env: { ...env, LOG_FORMAT: "json" } }), metrics), metrics }),
};
// Unbatched: flush after every line, as a plain console.error per request would.
const unbatchedLog = createServiceLog({ env, write: (t) => process.stderr.write(t) });
variants["+ metrics + text log, one write per line"] = createServiceHandler({
  store,
  observer: observers({ request: (e) => (unbatchedLog.request(e), unbatchedLog.flush()) }, metrics),
  metrics,
});

const N = 20_000, CONCURRENCY = 10;
async function run(handle) {
  const started = performance.now();
  let left = N;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (left-- > 0) {
      const r = await handle(request);
      if (r.status !== 200) throw new Error(`status ${r.status}`);
    }
  }));
  await new Promise((r) => setImmediate(r));
  return ((performance.now() - started) * 1000) / N;
}
const results = {};
for (const handle of Object.values(variants)) await run(handle); // warm-up
for (let round = 0; round < 7; round++) for (const [name, handle] of Object.entries(variants)) (results[name] ??= []).push(await run(handle));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const lines = [`node ${process.version}, ${N} requests x 7 rounds, ${CONCURRENCY} concurrent, in process (no HTTP)`];
for (const [name, xs] of Object.entries(results)) lines.push(`${name}: ${median(xs).toFixed(2)} µs/request`);
writeFileSync(out, lines.join("\n") + "\n");
