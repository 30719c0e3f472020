// The cost of reading the audit trail through the service, for one or more builds side by side in one run:
//   node bench/audit-trail.mjs before=/path/to/old/dist/cli.cjs after=dist/cli.cjs
// Each build serves its own copy of a trail laid out as rotation leaves it (four 4 MiB files and the current
// log, about 20 MiB: bench/_audit-trail.mjs). Measured per build: a GUEST's `{ me { id } }` alone; thirty
// aliases of `auditLog(limit: 1)` and `auditLog(limit: 10000)` by a key holding API_KEY:READ_ANY, each with a
// GUEST asking `{ me { id } }` one request after another beside it; and the server's resident memory before
// and at its peak (VmRSS, VmHWM). The last columns are each build's figures over the first build's.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { layTrail } from "./_audit-trail.mjs";

const RUNS = Number(process.env.RUNS ?? 3);
const builds = process.argv.slice(2).map((arg) => {
  const [name, cli] = arg.includes("=") ? arg.split("=") : [arg, arg];
  return { name, cli: resolve(cli) };
});
if (builds.length === 0) builds.push({ name: "this", cli: resolve(import.meta.dirname, "../dist/cli.cjs") });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
};

async function measure({ cli }) {
  const dir = mkdtempSync(join(tmpdir(), "service-api-bench-audit-"));
  const store = join(dir, "keys");
  layTrail(store, { events: 42_000 });
  const make = (...args) => JSON.parse(execFileSync(process.execPath, [cli, "apikey", "--create", ...args, "--json", "--store", store], { encoding: "utf8" })).key;
  const reader = make("--name", "reader", "--permissions", "API_KEY:READ_ANY");
  const guest = make("--name", "guest", "--roles", "GUEST");
  const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--store", store], { env: { ...process.env, LOG_LEVEL: "warn" } });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
  const url = await new Promise((done, fail) => {
    const timer = setInterval(() => {
      const match = /listening on (\S+)/.exec(stderr);
      if (match) (clearInterval(timer), done(match[1]));
    }, 20);
    child.on("exit", () => (clearInterval(timer), fail(new Error(stderr))));
  });
  const ask = async (query, key) => {
    const started = performance.now();
    const response = await fetch(`${url}/graphql`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: JSON.stringify({ query }) });
    const text = await response.text();
    if (!text.includes('"data"') || text.includes('"errors"')) throw new Error(text.slice(0, 300));
    return performance.now() - started;
  };
  const me = "{ me { id } }";
  /** `query` as the reader, with a GUEST asking beside it: its time and the GUEST's slowest. */
  const beside = async (query) => {
    let running = true;
    const guests = [];
    const heavy = ask(query, reader).finally(() => (running = false));
    const loop = (async () => { while (running) guests.push(await ask(me, guest)); })();
    const [ms] = await Promise.all([heavy, loop]);
    return { ms, guest: Math.max(...guests) };
  };
  try {
    for (let i = 0; i < 20; i++) await ask(me, guest);
    const before = memory(child.pid);
    const alone = [];
    for (let i = 0; i < 20; i++) alone.push(await ask(me, guest));
    const aliases = `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: auditLog(limit: 1) { at }`).join(" ")} }`;
    const rows = { aliases: [], largest: [] };
    for (let i = 0; i < RUNS; i++) {
      rows.aliases.push(await beside(aliases));
      rows.largest.push(await beside("{ auditLog(limit: 10000) { at action id name actor { kind user host id name } changed replaced } }"));
    }
    const after = memory(child.pid);
    const pick = (list, key) => median(list.map((r) => r[key]));
    return {
      "GUEST me alone, ms": median(alone),
      "30 aliases limit 1, ms": pick(rows.aliases, "ms"),
      "GUEST me beside them, slowest ms": pick(rows.aliases, "guest"),
      "limit 10000, ms": pick(rows.largest, "ms"),
      "GUEST me beside it, slowest ms": pick(rows.largest, "guest"),
      "RSS growth to peak, MB": after.peak - before.rss,
    };
  } finally {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = [];
for (const build of builds) results.push({ ...build, figures: await measure(build) });
console.log(`audit trail of about 20 MiB (42,000 events, 5 files); medians of ${RUNS} runs; ${builds.map((b) => `${b.name}=${b.cli}`).join(" ")}`);
const names = results.map((r) => r.name);
const ratios = results.slice(1).map((r) => `${r.name}/${results[0].name}`);
console.log(["", ...names, ...ratios].map((h, i) => (i ? h.padStart(14) : h.padEnd(36))).join(""));
for (const metric of Object.keys(results[0].figures)) {
  const values = results.map((r) => r.figures[metric]);
  const cells = [...values.map((v) => v.toFixed(1)), ...values.slice(1).map((v) => `${(v / values[0]).toFixed(3)}x`)];
  console.log([metric.padEnd(36), ...cells.map((c) => c.padStart(14))].join(""));
}
