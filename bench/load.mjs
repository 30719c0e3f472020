// The load generator of the service benchmark, in its own process (bench/_lib.mjs starts it on its own
// core), so it never shares an event loop or a core with the bench's bookkeeping or the server.
// Reads one JSON object on stdin: { url, method, headers, body, connections, duration, pid }; runs
// autocannon; prints one JSON object on stdout: { rps, p50, p90, p99, p999, requests, non2xx, errors, cpuUs }, where
// cpuUs is the server's CPU time (user + system, every thread, from /proc/<pid>/stat) over the load
// window divided by the requests answered in it.
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import autocannon from "autocannon";

const spec = JSON.parse(readFileSync(0, "utf8"));
const hz = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" })) || 100;
  } catch {
    return 100;
  }
})();
/** utime + stime of `pid` in clock ticks: fields 14 and 15, counted after the command name's ")". */
const cpuTicks = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
};

const percentile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : NaN);

const before = spec.pid ? cpuTicks(spec.pid) : NaN;
const tracker = autocannon({
  url: spec.url,
  method: spec.method,
  headers: spec.headers,
  body: spec.body,
  connections: spec.connections,
  duration: spec.duration,
});
// autocannon's own histogram keeps whole milliseconds (p99 "1" or "2" on loopback); its response
// event carries the latency measured with hrtime, in fractional ms: keep those for the percentile.
let latencies = new Float64Array(1 << 16), n = 0;
tracker.on("response", (_client, status, _bytes, ms) => {
  if (status < 200 || status > 299) return;
  if (n === latencies.length) {
    const grown = new Float64Array(n * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[n++] = ms;
});
const result = await tracker;
const sorted = latencies.subarray(0, n).sort();
const after = spec.pid ? cpuTicks(spec.pid) : NaN;
const requests = result.requests.total;
process.stdout.write(JSON.stringify({
  rps: result.requests.average,
  p50: percentile(sorted, 0.5),
  p90: percentile(sorted, 0.9),
  p99: percentile(sorted, 0.99),
  p999: percentile(sorted, 0.999),
  requests,
  non2xx: result.non2xx,
  errors: result.errors,
  cpuUs: ((after - before) / hz) * 1e6 / requests,
}));
