#!/usr/bin/env node
// node bench/service-ab.mjs [--rounds N] [--duration S] [--connections C] [--mercurius] [NAME=path/to/cli.cjs ...]
// A focused, interleaved A/B of the service against bare node:http: for each round, every server
// (bare, then each build given, default `current=dist/cli.cjs`; with --mercurius also the Mercurius peer)
// is loaded in turn with autocannon for a remembered query (`{ me { id name } }`) and one that is never
// remembered (it reads the host). Prints medians of req/s and of the server's CPU per request (with each
// round's CPU per request, to show the spread), and each
// build's ratio to bare for both queries. Give two builds (say a copy of dist/ made before a change, and
// dist/ after it) to compare them side by side in one run. Servers and load are pinned apart as in
// `npm run bench` (bench/_lib.mjs).
// A build may carry its environment after "?": `json=dist/cli.cjs?LOG_LEVEL=info&LOG_FORMAT=json`
// (default LOG_LEVEL=warn; stderr always goes to a pipe that is drained, as a log collector would).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killChildrenOnExit, load, median, ROOT, seed, startBare, startMercurius, startService } from "./_lib.mjs";

const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : Number(argv.splice(i, 2)[1]);
};
const flag = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 && argv.splice(i, 1).length > 0;
};
const rounds = opt("--rounds", 5), duration = opt("--duration", 3), connections = opt("--connections", 10);
const withMercurius = flag("--mercurius");
const builds = argv.length ? argv.map((a) => a.split("=")) : [["current", join(ROOT, "dist/cli.cjs")]];

const work = mkdtempSync(join(tmpdir(), "service-api-ab-"));
killChildrenOnExit(() => rmSync(work, { recursive: true, force: true }));

const store = join(work, "store");
const [key] = await seed(store, 1, "bench", ["ADMIN"]);

const QUERIES = {
  "remembered `{ me { id name } }`": JSON.stringify({ query: "{ me { id name } }" }),
  "not remembered `{ me { id name } info { hostname } }`": JSON.stringify({ query: "{ me { id name } info { hostname } }" }),
};
const headers = { "content-type": "application/json", authorization: `Bearer ${key.key}` };
const servers = [["bare", await startBare()]];
if (withMercurius) servers.push(["mercurius", await startMercurius([key], join(work, "keys.json"))]);
for (const [name, spec] of builds) {
  const [cli, query = ""] = spec.split("?");
  const env = { LOG_LEVEL: "warn", ...Object.fromEntries(new URLSearchParams(query)) };
  servers.push([name, await startService(store, { cli, env })]);
}

const run = (server, body, seconds) => load({ url: `${server.url}/graphql`, headers, body, connections, duration: seconds, pid: server.pid });
for (const [, server] of servers) for (const body of Object.values(QUERIES)) await run(server, body, 1); // warm-up
const results = {};
for (let round = 0; round < rounds; round++) {
  // Rotate the order each round so no server always runs first (or right after a given other).
  const order = servers.map((_, i) => servers[(i + round) % servers.length]);
  for (const [what, body] of Object.entries(QUERIES)) {
    for (const [name, server] of order) ((results[what] ??= {})[name] ??= []).push(await run(server, body, duration));
  }
  console.error(`round ${round + 1}/${rounds} done`);
}
await Promise.all(servers.map(([, server]) => server.stop()));

console.log(`${rounds} interleaved rounds of ${duration} s, ${connections} connections, node ${process.version}`);
for (const [what, by] of Object.entries(results)) {
  const rps = (name) => median(by[name].map((x) => x.rps));
  const cpu = (name) => median(by[name].map((x) => x.cpuUs));
  const bare = rps("bare");
  // Every round's CPU per request too, in run order, so the spread behind each median shows.
  const cpuRounds = (name) => by[name].map((x) => x.cpuUs.toFixed(1)).join(" ");
  console.log(`${what}: bare ${bare.toFixed(0)}/s, ${cpu("bare").toFixed(1)} µs CPU per request (rounds: ${cpuRounds("bare")})`);
  for (const [name] of servers.slice(1)) {
    const rounds = by[name].map((x) => (x.rps / bare).toFixed(2)).join(" ");
    console.log(`  ${name}: ${rps(name).toFixed(0)}/s, ${(rps(name) / bare).toFixed(2)} of bare (rounds: ${rounds}), ${cpu(name).toFixed(1)} µs CPU per request (rounds: ${cpuRounds(name)})`);
  }
}
