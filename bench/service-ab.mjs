#!/usr/bin/env node
// node bench/service-ab.mjs [--rounds N] [--duration S] [NAME=path/to/cli.cjs ...]
// A focused, interleaved A/B of the service against bare node:http: for each round, every server
// (bare, then each build given, default `current=dist/cli.cjs`) is loaded in turn with autocannon
// for a remembered query (`{ me { id name } }`) and one that is never remembered (it reads the host).
// Prints medians of req/s and each build's ratio to bare for both queries. Give two builds (say a copy
// of dist/ made before a change, and dist/ after it) to compare them side by side in one run.
// A build may carry its environment after "?": `json=dist/cli.cjs?LOG_LEVEL=info&LOG_FORMAT=json`
// (default LOG_LEVEL=warn; stderr then goes to a pipe that is drained, as a log collector would).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createStorage } from "unstorage";
import { createKeyStore } from "../dist/mod.js";
import { fsDriver } from "../dist/lib/store/drivers/fs.js";

const ROOT = resolve(import.meta.dirname, "..");
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : Number(argv.splice(i, 2)[1]);
};
const rounds = opt("--rounds", 5), duration = opt("--duration", 3), connections = opt("--connections", 10);
const builds = argv.length ? argv.map((a) => a.split("=")) : [["current", join(ROOT, "dist/cli.cjs")]];

const work = mkdtempSync(join(tmpdir(), "service-api-ab-"));
const children = new Set();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function start(argvOf, extraEnv = {}) {
  const port = await freePort();
  const logs = Object.keys(extraEnv).length > 0;
  const child = spawn(process.execPath, argvOf(port), {
    stdio: ["ignore", "ignore", logs ? "pipe" : "inherit"],
    env: { ...process.env, LOG_LEVEL: "warn", ...extraEnv },
  });
  child.stderr?.resume();
  children.add(child);
  for (const deadline = Date.now() + 15_000; Date.now() < deadline;) {
    if (child.exitCode !== null) throw new Error(`${argvOf(port).join(" ")} exited`);
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      return `http://127.0.0.1:${port}/graphql`;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("server did not start");
}

const { default: autocannon } = await import("autocannon");
async function load(url, headers, body, seconds = duration) {
  const result = await autocannon({ url, method: "POST", headers, body, connections, duration: seconds });
  if (result.non2xx || result.errors) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

const store = join(work, "store");
const driver = fsDriver({ base: store, sync: false });
const keys = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
const { key } = await keys.create({ name: "bench", roles: ["ADMIN"], permissions: [] });
await keys.close();

const QUERIES = {
  "remembered `{ me { id name } }`": JSON.stringify({ query: "{ me { id name } }" }),
  "not remembered `{ me { id name } info { hostname } }`": JSON.stringify({ query: "{ me { id name } info { hostname } }" }),
};
const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
const servers = [["bare", await start((p) => [join(ROOT, "bench/bare-server.mjs"), "--port", String(p)])]];
for (const [name, spec] of builds) {
  const [cli, query = ""] = spec.split("?");
  const extraEnv = Object.fromEntries(new URLSearchParams(query));
  servers.push([name, await start((p) => [cli, "serve", "--port", String(p), "--store", store], extraEnv)]);
}

for (const [, url] of servers) for (const body of Object.values(QUERIES)) await load(url, headers, body, 1); // warm-up
const results = {};
for (let round = 0; round < rounds; round++) {
  // Rotate the order each round so no server always runs first (or right after a given other).
  const order = servers.map((_, i) => servers[(i + round) % servers.length]);
  for (const [what, body] of Object.entries(QUERIES)) {
    for (const [name, url] of order) ((results[what] ??= {})[name] ??= []).push(await load(url, headers, body));
  }
  console.error(`round ${round + 1}/${rounds} done`);
}
console.log(`${rounds} interleaved rounds of ${duration} s, ${connections} connections, node ${process.version}`);
for (const [what, by] of Object.entries(results)) {
  const bare = median(by.bare);
  console.log(`${what}: bare ${bare.toFixed(0)}/s`);
  for (const [name] of builds) {
    const m = median(by[name]);
    console.log(`  ${name}: ${m.toFixed(0)}/s, ${(m / bare).toFixed(2)} of bare (rounds: ${by[name].map((x) => (x / median(by.bare)).toFixed(2)).join(" ")})`);
  }
}
