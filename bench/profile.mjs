#!/usr/bin/env node
// node bench/profile.mjs [--seconds S] [--interval µs] [--connections C] [--keep DIR]
// Where the service spends its CPU per request, against Mercurius + graphql-jit, on both benchmark
// queries. For each query and each server (the service as shipped, at LOG_LEVEL=warn, without access
// log and metrics, and Mercurius: bench/profile-server.mjs), one process on CPU 1 is warmed up, then
// loaded for S seconds from CPU 0 while a CPU profiler samples its main thread. Prints, per query and
// server, the process's CPU per request (/proc, every thread) and the profile's self time per request
// grouped by where it runs (our lib/ files, graphql-js, graphql-http, prom-client, Node's HTTP and
// streams, native calls, GC), then the heaviest functions. Profiles are left in --keep DIR if given.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killChildrenOnExit, load, ROOT, seed, startServer } from "./_lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const seconds = Number(opt("--seconds", 10)), interval = Number(opt("--interval", 200)), connections = Number(opt("--connections", 10));
const work = mkdtempSync(join(tmpdir(), "service-api-profile-"));
const keep = opt("--keep");
if (keep) mkdirSync(keep, { recursive: true });
killChildrenOnExit(() => rmSync(work, { recursive: true, force: true }));

const store = join(work, "store");
const [key] = await seed(store, 10);
const keysFile = join(work, "keys.json");
writeFileSync(keysFile, JSON.stringify([key]), { mode: 0o600 });

const QUERIES = { me: "{ me { id name } }", info: "{ me { id name } info { hostname } }" };
// NODE_ENV=production everywhere: dist/cli.cjs's bundle has it built in (scripts/build.mjs), and
// without it graphql-js's cross-realm `instanceof` checks would show in the profile of dist/lib.
const SERVERS = {
  "service (as shipped)": { target: "service", env: { LOG_LEVEL: "", NODE_ENV: "production" } },
  "service LOG_LEVEL=warn": { target: "service", env: { LOG_LEVEL: "warn", NODE_ENV: "production" } },
  "service, no log, no metrics": { target: "service-quiet", env: { LOG_LEVEL: "warn", NODE_ENV: "production" } },
  mercurius: { target: "mercurius", env: { NODE_ENV: "production" } },
};

/** Which part of the stack a profile node belongs to. */
function group({ url, functionName }) {
  if (!url) {
    if (/^\((garbage collector|program|idle|root)\)$/.test(functionName)) return functionName;
    return `native: ${functionName || "(anonymous)"}`;
  }
  let m;
  if ((m = /\/dist\/lib\/(.+)\.js$/.exec(url))) {
    if (m[1] === "http/service-log") return "access log (lib/http/service-log)";
    if (m[1] === "http/metrics") return "metrics (lib/http/metrics)";
    return `lib/${m[1]}`;
  }
  if ((m = /node_modules\/graphql\/(execution|language|validation|utilities|type|jsutils|error)\//.exec(url))) return `graphql-js ${m[1]}`;
  if ((m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url))) return m[1] === "prom-client" ? "metrics (prom-client)" : m[1];
  if (url.includes("bench/mercurius-server")) return "bench/mercurius-server";
  if ((m = /^node:(?:internal\/)?(.*)$/.exec(url))) {
    const name = m[1];
    if (/^_http|^http/.test(name)) return "node: http";
    if (/^streams|^stream|^net|^stream_base|^dns/.test(name)) return "node: net/streams";
    if (/^timers|^process\/task_queues|^async_hooks|^process\/promises/.test(name)) return "node: timers/ticks/promises";
    return `node: ${name.split("/")[0]}`;
  }
  return url;
}

/** Self time (µs) per node id, from samples and their time deltas. */
function selfTimes(profile) {
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  return self;
}

function summarize(profile, requests) {
  const self = selfTimes(profile);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const groups = new Map(), functions = new Map();
  let busy = 0;
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (node.callFrame.functionName === "(idle)") continue;
    busy += us;
    const g = group(node.callFrame);
    groups.set(g, (groups.get(g) ?? 0) + us);
    const f = `${node.callFrame.functionName || "(anonymous)"} ${g}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ""}`;
    functions.set(f, (functions.get(f) ?? 0) + us);
  }
  const per = (us) => us / requests;
  return { busy: per(busy), groups: [...groups].map(([g, us]) => [g, per(us)]).sort((a, b) => b[1] - a[1]), functions: [...functions].map(([f, us]) => [f, per(us)]).sort((a, b) => b[1] - a[1]) };
}

for (const [q, query] of Object.entries(QUERIES)) {
  const body = JSON.stringify({ query });
  for (const [name, { target, env }] of Object.entries(SERVERS)) {
    const out = join(keep ?? work, `${q}-${name.replace(/\W+/g, "-")}.cpuprofile`);
    const isService = target !== "mercurius";
    const server = await startServer(
      (port) => [join(ROOT, "bench/profile-server.mjs"), target, "--out", out, "--interval", String(interval), ...(isService ? ["--port", String(port), "--store", store] : ["--keys", keysFile])],
      { env, portFromStdout: !isService },
    );
    const headers = { "content-type": "application/json", authorization: `Bearer ${key.key}` };
    const run = (duration) => load({ url: `${server.url}/graphql`, headers, body, connections, duration, pid: server.pid });
    await run(2);
    process.kill(server.pid, "SIGUSR2");
    await new Promise((r) => setTimeout(r, 100));
    const result = await run(seconds);
    process.kill(server.pid, "SIGUSR2");
    let profile;
    for (let i = 0; i < 100 && !profile; i++) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        profile = JSON.parse(readFileSync(out, "utf8"));
      } catch {} // not written yet
    }
    await server.stop();
    const s = summarize(profile, result.requests);
    console.log(`\n## ${query} — ${name}: ${result.rps.toFixed(0)}/s, process CPU ${result.cpuUs.toFixed(1)} µs/request, main thread sampled ${s.busy.toFixed(1)} µs/request`);
    console.log(s.groups.filter(([, us]) => us >= 0.5).map(([g, us]) => `  ${us.toFixed(1).padStart(6)} µs  ${g}`).join("\n"));
    console.log("  top functions (self):");
    console.log(s.functions.slice(0, 15).map(([f, us]) => `    ${us.toFixed(1).padStart(6)} µs  ${f}`).join("\n"));
  }
}
