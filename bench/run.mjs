#!/usr/bin/env node
// npm run bench [-- --quick] [-- --write]
// Every figure is a ratio of two things measured side by side in this run, alternating A and B over
// several rounds and comparing medians, because this machine is noisy: absolutes mean little.
// --write puts the table into BENCHMARKS.md; --quick shrinks everything for the smoke test.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { createStorage } from "unstorage";
import { createKeyStore } from "../dist/mod.js";
import { fsDriver } from "../dist/lib/store/drivers/fs.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "..");
const CLI = join(ROOT, "dist/cli.cjs");
const args = new Set(process.argv.slice(2));
const quick = args.has("--quick");
const P = quick
  ? { rounds: 3, big: 300, huge: 1000, duration: 1, connections: 4, serviceRounds: 1 }
  : { rounds: 15, big: 10_000, huge: 100_000, duration: 5, connections: 10, serviceRounds: 3 };

const work = mkdtempSync(join(tmpdir(), "service-api-bench-"));
const children = new Set();
const cleanup = () => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
};
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const rows = [];
const report = (what, a, b, ratio, target, note = "") => {
  const ok = target ? (target.startsWith("<=") ? ratio <= +target.slice(2) : ratio >= +target.slice(2)) : null;
  rows.push({ what, a, b, ratio: ratio.toFixed(2), target: target ?? "report", ok: ok === null ? "" : ok ? "yes" : "NO", note });
  console.error(`  ${what}: ${ratio.toFixed(2)} (${a} vs ${b})`);
};

async function wall(file, argv, env = {}) {
  const start = process.hrtime.bigint();
  await run(file, argv, { env: { ...process.env, LOG_LEVEL: "", ...env } }).catch((e) => {
    throw new Error(`${argv.join(" ")} failed: ${e.stderr || e.message}`);
  });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Seeds a store with `n` keys through the library (without fsync: a bulk load that can be redone). */
async function seed(dir, n, prefix = "seed") {
  const driver = fsDriver({ base: dir, sync: false });
  const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
  let next = 0;
  const secrets = [];
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < n) {
      const i = next++;
      const { key } = await store.create({ name: `${prefix} ${i}`, roles: ["VIEWER"], permissions: [] });
      if (i < 4) secrets.push(key);
    }
  }));
  await store.close();
  return secrets;
}

async function coldStart() {
  console.error("CLI cold start");
  const store = join(work, "cold");
  const base = [], cli = [];
  for (let i = 0; i < P.rounds; i++) {
    base.push(await wall(process.execPath, ["-e", "0"]));
    cli.push(await wall(process.execPath, [CLI, "apikey", "--create", "--name", `cold ${i}`, "--roles", "ADMIN", "--json", "--store", store]));
  }
  report("CLI `apikey --create --json` vs `node -e 0` (median wall)", `${median(cli).toFixed(0)} ms`, `${median(base).toFixed(0)} ms`, median(cli) / median(base), "<=1.3");
  // NODE_EXTRA_CA_CERTS makes every node process parse a certificate bundle before running anything
  // (about 70% of `node -e 0`'s instructions on this machine), which flatters the ratio above.
  // Where it is set, measure the same pair without it too, so the table shows both.
  if (process.env.NODE_EXTRA_CA_CERTS) {
    const clean = { NODE_EXTRA_CA_CERTS: "" };
    const base2 = [], cli2 = [];
    for (let i = 0; i < P.rounds; i++) {
      base2.push(await wall(process.execPath, ["-e", "0"], clean));
      cli2.push(await wall(process.execPath, [CLI, "apikey", "--create", "--name", `clean ${i}`, "--roles", "ADMIN", "--json", "--store", store], clean));
    }
    report("the same with NODE_EXTRA_CA_CERTS unset (both sides)", `${median(cli2).toFixed(0)} ms`, `${median(base2).toFixed(0)} ms`, median(cli2) / median(base2), null, "node without the CA bundle; see below");
  }
}

async function scale() {
  console.error(`Scale: 10 vs ${P.big} keys`);
  const small = join(work, "small"), big = join(work, "big");
  await seed(small, 10);
  await seed(big, P.big);
  const t = { cs: [], cb: [], ds: [], db: [] };
  for (let i = 0; i < P.rounds; i++) {
    const create = (dir) => wall(process.execPath, [CLI, "apikey", "--create", "--name", `scale ${i}`, "--roles", "ADMIN", "--json", "--store", dir]);
    const del = (dir) => wall(process.execPath, [CLI, "apikey", "--delete", "--name", `scale ${i}`, "--json", "--store", dir]);
    if (i % 2) { t.cb.push(await create(big)); t.cs.push(await create(small)); }
    else { t.cs.push(await create(small)); t.cb.push(await create(big)); }
    if (i % 2) { t.db.push(await del(big)); t.ds.push(await del(small)); }
    else { t.ds.push(await del(small)); t.db.push(await del(big)); }
  }
  report(`create with ${P.big} keys vs 10 keys`, `${median(t.cb).toFixed(0)} ms`, `${median(t.cs).toFixed(0)} ms`, median(t.cb) / median(t.cs), "<=1.2");
  report(`delete with ${P.big} keys vs 10 keys`, `${median(t.db).toFixed(0)} ms`, `${median(t.ds).toFixed(0)} ms`, median(t.db) / median(t.ds), "<=1.2");
}

/** Starts `service-api serve` on a free port and resolves once /healthz answers. */
async function startService(store) {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--store", store], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, LOG_LEVEL: "warn" },
  });
  children.add(child);
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`serve exited: ${stderr}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    peakRssKb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    },
    stop: () => new Promise((r) => { child.once("exit", r); child.kill("SIGTERM"); children.delete(child); }),
  };
}

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function load(url, headers, body, p = P) {
  const { default: autocannon } = await import("autocannon");
  const result = await autocannon({
    url, method: "POST", headers, body, connections: p.connections, duration: p.duration,
  });
  if (result.non2xx || result.errors) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const ME = JSON.stringify({ query: "{ me { id name } }" });

async function service() {
  console.error("Service throughput");
  const bare = spawn(process.execPath, [join(ROOT, "bench/bare-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  children.add(bare);
  const barePort = await new Promise((r) => bare.stdout.once("data", (d) => r(String(d).trim())));
  const bareUrl = `http://127.0.0.1:${barePort}/graphql`;

  const small = join(work, "svc-small"), big = join(work, "svc-big");
  const [key] = await seed(small, 10);
  const [bigKey] = await seed(big, P.big);
  const a = await startService(small);
  const b = await startService(big);
  const headers = (k) => ({ "content-type": "application/json", authorization: `Bearer ${k}` });
  const probe = await fetch(`${a.url}/graphql`, { method: "POST", headers: headers(key), body: ME });
  if (probe.status !== 200) throw new Error(`service answered ${probe.status}: ${await probe.text()}`);

  // Warm up all three (JIT, caches) before anything is counted.
  const warm = { ...P, duration: 1 };
  for (const [url, h] of [[bareUrl, { "content-type": "application/json" }], [`${a.url}/graphql`, headers(key)], [`${b.url}/graphql`, headers(bigKey)]]) {
    await load(url, h, ME, warm);
  }
  const r = { bare: [], svc: [], big: [] };
  for (let i = 0; i < P.serviceRounds; i++) {
    r.bare.push(await load(bareUrl, { "content-type": "application/json" }, ME));
    r.svc.push(await load(`${a.url}/graphql`, headers(key), ME));
    r.big.push(await load(`${b.url}/graphql`, headers(bigKey), ME));
  }
  const rps = (xs) => median(xs.map((x) => x.rps));
  const p99 = (xs) => median(xs.map((x) => x.p99));
  report("service `{ me { id name } }` vs bare node:http (req/s)", `${rps(r.svc).toFixed(0)}/s p99 ${p99(r.svc)} ms`, `${rps(r.bare).toFixed(0)}/s p99 ${p99(r.bare)} ms`, rps(r.svc) / rps(r.bare), ">=0.6");
  report(`service with ${P.big} keys vs 10 keys (req/s)`, `${rps(r.big).toFixed(0)}/s`, `${rps(r.svc).toFixed(0)}/s`, rps(r.big) / rps(r.svc), ">=0.83");
  bare.kill("SIGTERM");
  children.delete(bare);
  await Promise.all([a.stop(), b.stop()]);

  console.error(`Memory: ${P.huge} keys vs 10`);
  const huge = join(work, "svc-huge");
  const [hugeKey] = await seed(huge, P.huge, "mem");
  const sm = await startService(small), hu = await startService(huge);
  await load(`${sm.url}/graphql`, headers(key), ME);
  await load(`${hu.url}/graphql`, headers(hugeKey), ME);
  const [ks, kh] = [sm.peakRssKb(), hu.peakRssKb()];
  report(`service peak RSS with ${P.huge} keys vs 10 keys`, `${(kh / 1024).toFixed(0)} MiB`, `${(ks / 1024).toFixed(0)} MiB`, kh / ks, null, "after the same load");
  await Promise.all([sm.stop(), hu.stop()]);
}

const started = Date.now();
await coldStart();
await scale();
await service();

const table = [
  "| measurement | A | B | A/B | target | met | note |",
  "|---|---|---|---|---|---|---|",
  ...rows.map((r) => `| ${r.what} | ${r.a} | ${r.b} | ${r.ratio} | ${r.target} | ${r.ok} | ${r.note} |`),
].join("\n");
console.log(table);
console.error(`(${((Date.now() - started) / 1000).toFixed(0)} s, node ${process.version}, ${quick ? "quick" : "full"} run)`);
if (args.has("--write")) {
  writeFileSync(join(ROOT, "BENCHMARKS.md"), `# Benchmarks

Made by \`npm run bench -- --write\` on ${new Date().toISOString().slice(0, 10)} (node ${process.version}, 2 cores).
Each ratio compares two things measured alternately in the same run (medians of ${P.rounds} rounds for the
CLI, ${P.serviceRounds} autocannon runs of ${P.duration} s with ${P.connections} connections for the service).

${table}

${readFileSync(join(ROOT, "bench/NOTES.md"), "utf8")}`);
}
