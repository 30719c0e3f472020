// Helpers shared by bench/run.mjs and bench/service-ab.mjs: statistics, starting a server under test in
// its own process (pinned to a core where `taskset` exists), seeding keys through the library, and
// loading a server with autocannon from another child process (bench/load.mjs, pinned to another core),
// which also reads the server's CPU time from /proc/<pid>/stat around the load window.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { createStorage } from "unstorage";
import { createKeyStore } from "../dist/mod.js";
import { fsDriver } from "../dist/lib/store/drivers/fs.js";

export const ROOT = resolve(import.meta.dirname, "..");

// The peers (Fastify + Mercurius) and the load generator (autocannon) are benchmark-only: they live in
// bench/package.json, so a plain install of the project stays small and prints no engine warning on
// Node 20. Every benchmark script imports this module first, so the first run of any of them installs them.
if (!existsSync(join(ROOT, "bench/node_modules/autocannon/package.json"))) {
  process.stderr.write("Installing the benchmark's peers (npm ci --prefix bench)...\n");
  execFileSync("npm", ["ci", "--prefix", join(ROOT, "bench"), "--no-audit", "--no-fund", "--loglevel=error"], { stdio: ["ignore", 2, 2] });
}

export const median = (xs) => quantile(xs, 0.5);
/** Linear interpolation between the closest ranks (the usual definition; quartiles of 3 values are fine). */
export function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const at = (s.length - 1) * q, lo = Math.floor(at), hi = Math.ceil(at);
  return s[lo] + (s[hi] - s[lo]) * (at - lo);
}
/** "median (min–max)" with `digits` decimals. */
export const spread = (xs, digits = 0, unit = "") =>
  `${median(xs).toFixed(digits)}${unit} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

/** True when `taskset` runs here (util-linux); then servers and load generators are pinned apart. */
export const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
export const SERVER_CPU = "1";
export const LOAD_CPU = "0";

/** [file, argv] for `node …argv`, pinned to `cpu` when taskset exists (it execs: the pid stays node's). */
export const pinned = (cpu, argv) => (hasTaskset ? ["taskset", ["-c", cpu, process.execPath, ...argv]] : [process.execPath, argv]);

export async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

const children = new Set();
/** Kills every child still running (on exit, and on SIGINT/SIGTERM through process.exit). */
export function killChildrenOnExit(cleanup = () => {}) {
  process.on("exit", () => {
    for (const child of children) child.kill("SIGKILL");
    cleanup();
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));
}

/**
 * Starts `node …argv` on SERVER_CPU and resolves once it serves: when `portFromStdout`, once it prints
 * its port; otherwise once GET /healthz on `port` answers. `onStdout` is given everything it prints.
 * stderr is drained (a log collector reading a pipe, as in production), keeping only its tail for error
 * messages.
 */
export async function startServer(argvOf, { env = {}, portFromStdout = false, onStdout } = {}) {
  let port = portFromStdout ? 0 : await freePort();
  const [file, argv] = pinned(SERVER_CPU, argvOf(port));
  const child = spawn(file, argv, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.add(child);
  let tail = "";
  child.stderr.on("data", (d) => (tail = (tail + d).slice(-4000)));
  const exited = new Promise((r) => child.once("exit", r));
  if (onStdout) child.stdout.on("data", onStdout);
  if (portFromStdout) {
    // The port is the first line that is only digits (node --trace-gc may print before it).
    let out = "";
    port = await Promise.race([
      new Promise((r) => {
        const read = (d) => {
          const found = /^(\d+)$/m.exec((out += d));
          if (found) child.stdout.off("data", read), r(Number(found[1]));
        };
        child.stdout.on("data", read);
      }),
      exited.then(() => { throw new Error(`${argv.join(" ")} exited: ${tail}`); }),
    ]);
    child.stdout.resume();
  } else {
    child.stdout.resume();
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${argv.join(" ")} exited: ${tail}`);
      if (Date.now() > deadline) throw new Error(`${argv.join(" ")} did not answer /healthz in 15 s: ${tail}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
      } catch {}
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    stop: () => {
      children.delete(child);
      if (child.exitCode !== null) return Promise.resolve();
      child.kill("SIGTERM");
      return exited;
    },
  };
}

/** `node dist/cli.cjs serve` (or another build's cli.cjs) on a free port, with the store given. */
export const startService = (store, { cli = join(ROOT, "dist/cli.cjs"), env = {} } = {}) =>
  startServer((port) => [cli, "serve", "--port", String(port), "--store", store], { env });

/**
 * The Mercurius peer (bench/mercurius-server.mjs) knowing `keys` ([{ key, id, name, roles }]), with
 * NODE_ENV=production as a deployment would run it: the service's bundle has it built in (graphql-js
 * skips its cross-realm `instanceof` checks then).
 */
export function startMercurius(keys, keysFile) {
  writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
  return startServer(() => [join(ROOT, "bench/mercurius-server.mjs"), "--keys", keysFile], { portFromStdout: true, env: { NODE_ENV: "production" } });
}

/** The floor: bench/bare-server.mjs, node:http answering a constant body. */
export const startBare = () => startServer(() => [join(ROOT, "bench/bare-server.mjs")], { portFromStdout: true });

/**
 * Seeds a store with `n` keys through the library (without fsync: a bulk load that can be redone).
 * Resolves to the first four created keys ({ key, id, name, roles }).
 */
export async function seed(dir, n, prefix = "seed", roles = ["VIEWER"]) {
  const driver = fsDriver({ base: dir, sync: false });
  const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
  let next = 0;
  const first = [];
  await Promise.all(Array.from({ length: Math.min(64, n) }, async () => {
    while (next < n) {
      const i = next++;
      const created = await store.create({ name: `${prefix} ${i}`, roles, permissions: [] });
      if (i < 4) first[i] = { key: created.key, id: created.id, name: created.name, roles: created.roles };
    }
  }));
  await store.close();
  return first;
}

/**
 * Loads `url` with autocannon in a child process on LOAD_CPU (bench/load.mjs) and resolves to
 * { rps, p99 (ms), requests, cpuUs (server CPU µs per request, when `pid` is given) }. Throws on any
 * non-2xx answer or error.
 */
export async function load({ url, method = "POST", headers, body, connections, duration, pid }) {
  const [file, argv] = pinned(LOAD_CPU, [join(ROOT, "bench/load.mjs")]);
  const child = spawn(file, argv, { stdio: ["pipe", "pipe", "inherit"] });
  children.add(child);
  child.stdin.end(JSON.stringify({ url, method, headers, body, connections, duration, pid }));
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const code = await new Promise((r) => child.once("exit", r));
  children.delete(child);
  if (code !== 0) throw new Error(`load generator for ${url} exited ${code}`);
  const result = JSON.parse(out);
  if (result.non2xx || result.errors) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result;
}

/** POSTs `body` and resolves to { status, text }. */
export async function post(url, headers, body) {
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, text: await response.text() };
}
