#!/usr/bin/env node
// node bench/tail.mjs [--rounds N] [--duration S] [--query me|info] [NAME=path/to/cli.cjs[?ENV=V&...] ...]
// Tail latency and young-generation GC pauses, side by side: each build of the service given (default
// `service=dist/cli.cjs?LOG_LEVEL=info`) and Mercurius + graphql-jit, each in its own process on CPU 1 under
// `node --trace-gc`, loaded in turn (order rotated each round) by autocannon on CPU 0 with 10 connections.
// Prints per server the median p99 (and every round's), the median p50 and p99.9, the CPU per request,
// and the scavenges seen during the load windows: how many per second, their mean and longest pause. A
// pause holds every request in flight, which is what p99 sees when the CPU per request is lower.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killChildrenOnExit, load, median, ROOT, seed, startServer } from "./_lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : argv.splice(i, 2)[1];
};
const rounds = Number(opt("--rounds", 5)), duration = Number(opt("--duration", 4));
const QUERIES = { me: "{ me { id name } }", info: "{ me { id name } info { hostname } }" };
const query = QUERIES[opt("--query", "info")];
if (!query) throw new Error("--query is me or info");
const builds = argv.length ? argv : [`service=${join(ROOT, "dist/cli.cjs")}?LOG_LEVEL=info`];

const work = mkdtempSync(join(tmpdir(), "service-api-tail-"));
killChildrenOnExit(() => rmSync(work, { recursive: true, force: true }));

const store = join(work, "store");
const [key] = await seed(store, 10);
const keysFile = join(work, "keys.json");
writeFileSync(keysFile, JSON.stringify([key]), { mode: 0o600 });

/** Starts `node --trace-gc …args` on the server core; collects its scavenge pauses (ms) while `counting`. */
async function start(name, args, { env, portFromStdout = false }) {
  let partial = "";
  const server = { name, counting: false, pauses: [] };
  const onStdout = (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop();
    if (!server.counting) return;
    for (const line of lines) {
      const m = /Scavenge[^,]*, ([\d.]+) \/ [\d.]+ ms/.exec(line);
      if (m) server.pauses.push(Number(m[1]));
    }
  };
  const { pid, url } = await startServer((port) => ["--trace-gc", ...args(port)], { env, portFromStdout, onStdout });
  return Object.assign(server, { pid, url });
}

const servers = [];
for (const spec of builds) {
  const name = spec.slice(0, spec.indexOf("=")), target = spec.slice(spec.indexOf("=") + 1);
  const [cli, query = ""] = target.split("?");
  servers.push(await start(name, (port) => [cli, "serve", "--port", String(port), "--store", store], { env: Object.fromEntries(new URLSearchParams(query)) }));
}
servers.push(await start("mercurius", () => [join(ROOT, "bench/mercurius-server.mjs"), "--keys", keysFile], { env: { NODE_ENV: "production" }, portFromStdout: true }));

const body = JSON.stringify({ query });
const headers = { authorization: `Bearer ${key.key}`, "content-type": "application/json" };
const run = (server, seconds) => load({ url: `${server.url}/graphql`, headers, body, connections: 10, duration: seconds, pid: server.pid });
for (const server of servers) await run(server, 2); // warm-up: compiled queries, caches, JIT
const results = new Map(servers.map((s) => [s, { p50: [], p99: [], p999: [], cpu: [], seconds: 0 }]));
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < servers.length; i++) {
    const server = servers[(i + round) % servers.length];
    server.counting = true;
    const out = await run(server, duration);
    server.counting = false;
    const r = results.get(server);
    r.p50.push(out.p50);
    r.p99.push(out.p99);
    r.p999.push(out.p999);
    r.cpu.push(out.cpuUs);
    r.seconds += duration;
  }
  console.error(`round ${round + 1}/${rounds} done`);
}
console.log(`${rounds} rotated rounds of ${duration} s, 10 connections, query ${query}, node ${process.version}`);
for (const [server, r] of results) {
  const p = server.pauses;
  const mean = p.length ? p.reduce((a, b) => a + b, 0) / p.length : 0;
  console.log(
    `${server.name.padEnd(12)} p99 ${median(r.p99).toFixed(2)} ms (rounds ${r.p99.map((x) => x.toFixed(2)).join(" ")}), ` +
      `p50 ${median(r.p50).toFixed(2)}, p99.9 ${median(r.p999).toFixed(2)} ms, CPU ${median(r.cpu).toFixed(1)} µs/request, scavenges ${(p.length / r.seconds).toFixed(1)}/s, ` +
      `mean ${mean.toFixed(2)} ms, longest ${p.length ? Math.max(...p).toFixed(2) : "-"} ms`,
  );
}
process.exit(0);
