#!/usr/bin/env node
// npm run bench [-- --quick] [-- --write]
// Every figure is a ratio of two things measured side by side in this run, alternating A and B over
// several rounds and comparing medians, because this machine is noisy: absolutes mean little.
// --write puts the table into docs/performance.md; --quick shrinks everything for the smoke test.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  hasTaskset, killChildrenOnExit, load, median, post, ROOT, seed, spread, startBare, startMercurius, startServer, startService,
} from "./_lib.mjs";
import { scanBench } from "./scan.mjs";

const run = promisify(execFile);
const CLI = join(ROOT, "dist/cli.cjs");
const args = new Set(process.argv.slice(2));
const quick = args.has("--quick");
const P = quick
  ? { rounds: 3, cliRounds: 3, big: 300, huge: 1000, duration: 1, connections: 4, serviceRounds: 1 }
  : { rounds: 15, cliRounds: 40, big: 10_000, huge: 100_000, duration: 5, connections: 10, serviceRounds: 5 };

const work = mkdtempSync(join(tmpdir(), "service-api-bench-"));
killChildrenOnExit(() => rmSync(work, { recursive: true, force: true }));

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

async function coldStart() {
  console.error("CLI cold start");
  const store = join(work, "cold");
  const base = [], cli = [];
  // Many short rounds, the pair's order swapped every round: this machine's speed drifts within a run.
  for (let i = 0; i < P.cliRounds; i++) {
    const pair = [
      async () => base.push(await wall(process.execPath, ["-e", "0"])),
      async () => cli.push(await wall(process.execPath, [CLI, "apikey", "--create", "--name", `cold ${i}`, "--roles", "ADMIN", "--json", "--store", store])),
    ];
    for (const step of i % 2 ? pair.reverse() : pair) await step();
  }
  // The target: a create, with platform crypto, no slower than 1.3 times `node -e 0`.
  report("CLI `apikey --create --json` vs `node -e 0` (median wall)", `${median(cli).toFixed(0)} ms`, `${median(base).toFixed(0)} ms`, median(cli) / median(base), "<=1.3");
  // NODE_EXTRA_CA_CERTS makes every node process parse a certificate bundle before running anything
  // (about 70% of `node -e 0`'s instructions on this machine), which flatters the ratio above.
  // Where it is set, measure the same pair without it too, so the table shows both.
  if (process.env.NODE_EXTRA_CA_CERTS) {
    const clean = { NODE_EXTRA_CA_CERTS: "" };
    const base2 = [], cli2 = [];
    for (let i = 0; i < P.cliRounds; i++) {
      const pair = [
        async () => base2.push(await wall(process.execPath, ["-e", "0"], clean)),
        async () => cli2.push(await wall(process.execPath, [CLI, "apikey", "--create", "--name", `clean ${i}`, "--roles", "ADMIN", "--json", "--store", store], clean)),
      ];
      for (const step of i % 2 ? pair.reverse() : pair) await step();
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

const QUERIES = {
  me: "{ me { id name } }",
  info: "{ me { id name } info { hostname } }",
};
const body = (q) => JSON.stringify({ query: QUERIES[q] });
/** /auth as a reverse proxy asks it (nginx's auth_request, Caddy's forward_auth): a GET with the key and the permission required. */
const AUTH = { path: "/auth", headers: (secret) => ({ authorization: `Bearer ${secret}`, "x-required-permission": "DOCKER:READ_ANY" }) };
const auth = (secret) => ({ "content-type": "application/json", authorization: `Bearer ${secret}` });

/** Fails loudly unless both servers answer both queries with the same status and the same JSON. */
async function sameAnswers(a, b, secret) {
  for (const q of Object.keys(QUERIES)) {
    const [x, y] = await Promise.all([a, b].map((s) => post(`${s.url}/graphql`, auth(secret), body(q))));
    const same = x.status === 200 && y.status === 200 && JSON.stringify(JSON.parse(x.text)) === JSON.stringify(JSON.parse(y.text));
    if (!same || !JSON.parse(x.text).data?.me?.id) {
      throw new Error(`the servers answer \`${QUERIES[q]}\` differently:\n  ${x.status} ${x.text}\n  ${y.status} ${y.text}`);
    }
  }
}

/** Fails loudly unless /auth lets the bench's key through with its identity: a run of 401s would measure nothing. */
async function authAnswers(server) {
  const response = await fetch(server.url + AUTH.path, { headers: AUTH.headers(server.secret) });
  if (response.status !== 200 || !response.headers.get("x-api-key-id")) throw new Error(`/auth answers ${response.status}: ${await response.text()}`);
}

async function service() {
  console.error(`Service vs Mercurius + graphql-jit vs bare node:http${hasTaskset ? " (servers on CPU 1, load on CPU 0)" : " (no taskset: not pinned)"}`);
  const small = join(work, "svc-small"), big = join(work, "svc-big");
  const [key] = await seed(small, 10);
  const [bigKey] = await seed(big, P.big);
  // A key with a rate limit and credits (never reached in a run), beside the plain `key`: the price of counting both.
  const controlled = JSON.parse((await run(process.execPath, [CLI, "apikey", "--create", "--name", "controlled", "--roles", "VIEWER",
    "--rate-limit", "1000000/1s", "--credits", "1000000000", "--json", "--store", small], { env: { ...process.env, LOG_LEVEL: "" } })).stdout);
  // As shipped: LOG_LEVEL unset is info (one access line per request on stderr, drained from a pipe)
  // and the Prometheus metrics are always on. `warn` differs only by the access log.
  const servers = {
    service: { start: () => startService(small, { env: { LOG_LEVEL: "" } }), secret: key.key },
    mercurius: { start: () => startMercurius([key], join(work, "mercurius-keys.json")), secret: key.key },
    // Also asked the /auth request: a constant answer to it is the floor /auth is held to.
    bare: { start: startBare, secret: key.key, extra: ["auth"] },
    warn: { start: () => startService(small, { env: { LOG_LEVEL: "warn" } }), secret: key.key },
    // Last-use recording is on by default: the same service with it off, to price it.
    nouse: { start: () => startService(small, { env: { LOG_LEVEL: "", SERVICE_API_LAST_USE: "off" } }), secret: key.key },
    big: { start: () => startService(big, { env: { LOG_LEVEL: "" } }), secret: bigKey.key, only: "me" },
    // The same server, asked with the key that has a rate limit and credits.
    controls: { start: () => startService(small, { env: { LOG_LEVEL: "" } }), secret: controlled.key, only: "me" },
    // The same server as shipped, asked /auth (forward authentication) instead of /graphql.
    auth: { start: () => startService(small, { env: { LOG_LEVEL: "" } }), secret: key.key, only: "auth" },
  };
  const running = async (names, use) => {
    const started = await Promise.all(names.map((name) => servers[name].start()));
    try {
      return await use(Object.fromEntries(names.map((name, i) => [name, { ...servers[name], ...started[i] }])));
    } finally {
      await Promise.all(started.map((s) => s.stop()));
    }
  };
  await running(["service", "mercurius", "warn", "nouse"], async (s) => {
    await sameAnswers(s.service, s.mercurius, key.key);
    await sameAnswers(s.service, s.warn, key.key);
    await sameAnswers(s.service, s.nouse, key.key);
  });

  const loadOn = (s, q, duration) =>
    q === "auth"
      ? load({ url: s.url + AUTH.path, method: "GET", headers: AUTH.headers(s.secret), connections: P.connections, duration, pid: s.pid })
      : load({ url: `${s.url}/graphql`, headers: auth(s.secret), body: body(q), connections: P.connections, duration, pid: s.pid });
  const r = {};
  const names = Object.keys(servers);
  for (let round = 0; round < P.serviceRounds; round++) {
    // Interleaved, and rotated each round so that no server always runs first or right after another.
    // Each server is a new process every round: two processes of one build can differ by 10-15% in CPU
    // per request for their whole life (the same build read 37 and 43 µs in one run), which medians over
    // rounds of one process cannot even out (docs/performance.md, "Method").
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) {
      await running([name], async ({ [name]: server }) => {
        const queries = server.only ? [server.only] : [...Object.keys(QUERIES), ...(server.extra ?? [])];
        if (name === "auth") await authAnswers(server);
        // Warm-up on every query it will get (JIT, caches, graphql-jit's compilation), then the rounds.
        for (const q of queries) await loadOn(server, q, 1);
        for (const q of queries) ((r[q] ??= {})[name] ??= []).push(await loadOn(server, q, P.duration));
      });
    }
    console.error(`  round ${round + 1}/${P.serviceRounds} done (load ${loadavg()[0].toFixed(2)})`);
  }

  const of = (q, name, m) => r[q][name].map((x) => x[m]);
  const rps = (q, name) => spread(of(q, name, "rps"), 0, "/s");
  const cpu = (q, name) => spread(of(q, name, "cpuUs"), 1, " µs");
  const p99 = (q, name) => spread(of(q, name, "p99"), 2, " ms");
  const ratio = (q, a, b, m) => median(of(q, a, m)) / median(of(q, b, m));
  const label = (q) => `\`${QUERIES[q]}\``;
  report(`service ${label("me")} vs Mercurius (req/s)`, rps("me", "service"), rps("me", "mercurius"), ratio("me", "service", "mercurius", "rps"), ">=1.2");
  report(`service ${label("info")} vs Mercurius (req/s)`, rps("info", "service"), rps("info", "mercurius"), ratio("info", "service", "mercurius", "rps"), ">=1.0");
  for (const q of Object.keys(QUERIES)) {
    report(`service ${label(q)} vs Mercurius (server CPU per request)`, cpu(q, "service"), cpu(q, "mercurius"), ratio(q, "service", "mercurius", "cpuUs"), "<=1.0");
  }
  for (const q of Object.keys(QUERIES)) {
    report(`service ${label(q)} vs Mercurius (p99 latency)`, p99(q, "service"), p99(q, "mercurius"), ratio(q, "service", "mercurius", "p99"), "<=1.0");
  }
  report(`service ${label("me")} vs bare node:http (req/s)`, rps("me", "service"), rps("me", "bare"), ratio("me", "service", "bare", "rps"), null,
    `CPU per request ${median(of("me", "service", "cpuUs")).toFixed(1)} vs ${median(of("me", "bare", "cpuUs")).toFixed(1)} µs; ` +
    `${label("info")}: ${ratio("info", "service", "bare", "rps").toFixed(2)} of bare`);
  report(`service at LOG_LEVEL=warn (no access log) vs the default, ${label("me")} (server CPU per request)`, cpu("me", "warn"), cpu("me", "service"), ratio("me", "warn", "service", "cpuUs"), null,
    `${label("info")}: ${cpu("info", "warn")} vs ${cpu("info", "service")}, ${ratio("info", "warn", "service", "cpuUs").toFixed(2)}; metrics stay on`);
  for (const q of Object.keys(QUERIES)) {
    report(`last-use recording on (default) vs off, ${label(q)} (server CPU per request)`, cpu(q, "service"), cpu(q, "nouse"), ratio(q, "service", "nouse", "cpuUs"), "<=1.05",
      `req/s ${ratio(q, "service", "nouse", "rps").toFixed(2)}x`);
  }
  report(`a key with a rate limit and credits vs one without, ${label("me")}, files store (server CPU per request)`, cpu("me", "controls"), cpu("me", "service"),
    ratio("me", "controls", "service", "cpuUs"), "<=1.10", `req/s ${ratio("me", "controls", "service", "rps").toFixed(2)}x; memory stores count in the same in-process counters`);
  await memoryControls(loadOn);
  report("/auth with a permission check vs bare node:http answering a constant (req/s)", rps("auth", "auth"), rps("auth", "bare"), ratio("auth", "auth", "bare", "rps"), ">=0.8",
    `CPU per request ${median(of("auth", "auth", "cpuUs")).toFixed(1)} vs ${median(of("auth", "bare", "cpuUs")).toFixed(1)} µs; both asked the same GET, access log on`);
  report(`service with ${P.big} keys vs 10 keys (req/s)`, rps("me", "big"), rps("me", "service"), ratio("me", "big", "service", "rps"), ">=0.83",
    `CPU per request ${ratio("me", "big", "service", "cpuUs").toFixed(2)}x`);

  console.error(`Memory: ${P.huge} keys vs 10`);
  const huge = join(work, "svc-huge");
  const [hugeKey] = await seed(huge, P.huge, "mem");
  const sm = await startService(small, { env: { LOG_LEVEL: "" } }), hu = await startService(huge, { env: { LOG_LEVEL: "" } });
  await loadOn({ ...sm, secret: key.key }, "me", P.duration);
  await loadOn({ ...hu, secret: hugeKey.key }, "me", P.duration);
  const [ks, kh] = [peakRssKb(sm.pid), peakRssKb(hu.pid)];
  report(`service peak RSS with ${P.huge} keys vs 10 keys`, `${(kh / 1024).toFixed(0)} MiB`, `${(ks / 1024).toFixed(0)} MiB`, kh / ks, null, "after the same load");
  await Promise.all([sm.stop(), hu.stop()]);
}

/**
 * The same pair on a memory store: one server process (bench/memory-server.mjs) answering both keys in
 * alternation, so the two sides share a process and only the counting differs.
 */
async function memoryControls(loadOn) {
  let secrets = null;
  const server = await startServer(() => [join(ROOT, "bench/memory-server.mjs")], {
    portFromStdout: true,
    env: { LOG_LEVEL: "" },
    onStdout: (d) => { for (const line of String(d).split("\n")) if (line.startsWith("{")) secrets = JSON.parse(line); },
  });
  try {
    while (!secrets) await new Promise((r) => setTimeout(r, 20));
    const r = { plain: [], controls: [] };
    for (const side of ["plain", "controls"]) await loadOn({ ...server, secret: secrets[side] }, "me", 1);
    for (let i = 0; i < P.rounds; i++) {
      for (const side of i % 2 ? ["controls", "plain"] : ["plain", "controls"]) {
        r[side].push(await loadOn({ ...server, secret: secrets[side] }, "me", Math.max(1, Math.round(P.duration / 2))));
      }
    }
    const cpu = (side) => r[side].map((x) => x.cpuUs);
    report("a key with a rate limit and credits vs one without, `{ me { id name } }`, memory store (server CPU per request)",
      spread(cpu("controls"), 1, " µs"), spread(cpu("plain"), 1, " µs"), median(cpu("controls")) / median(cpu("plain")), "<=1.10", "one server process, the two keys alternated");
  } finally {
    await server.stop();
  }
}

const peakRssKb = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);

const started = Date.now();
const loadBefore = loadavg();
await coldStart();
await scale();
await scanBench({ quick, report, work });
await service();

const table = [
  "| measurement | A | B | A/B | target | met | note |",
  "|---|---|---|---|---|---|---|",
  ...rows.map((r) => `| ${r.what} | ${r.a} | ${r.b} | ${r.ratio} | ${r.target} | ${r.ok} | ${r.note} |`),
].join("\n");
console.log(table);
const loads = (l) => l.map((x) => x.toFixed(2)).join(" ");
const machine = `load average ${loads(loadBefore)} at the start, ${loads(loadavg())} at the end`;
console.error(`(${((Date.now() - started) / 1000).toFixed(0)} s, node ${process.version}, ${quick ? "quick" : "full"} run, ${machine})`);
if (args.has("--write")) {
  // The table lives in docs/performance.md between two markers; the page's other sections stay as written.
  const page = join(ROOT, "docs/performance.md");
  const text = readFileSync(page, "utf8");
  const start = text.indexOf("\n", text.indexOf("<!-- bench:table:start")) + 1, end = text.indexOf("<!-- bench:table:end");
  if (start === 0 || end < start) throw new Error(`${page}: the bench:table:start and bench:table:end markers are missing`);
  writeFileSync(page, `${text.slice(0, start)}Made by \`npm run bench -- --write\` on ${new Date().toISOString().slice(0, 10)} (node ${process.version}, 2 cores, ${machine}).
Each ratio compares two things measured alternately in the same run: medians of ${P.cliRounds} rounds (order swapped each round) for the
CLI start-up, of ${P.rounds} for the key-count rows; for the service, ${P.serviceRounds} interleaved rounds (service, Mercurius, bare, ... rotated each round; every server a new process each round, warmed up for 1 s per query) of
${P.duration} s of autocannon with ${P.connections} connections per server and query, each server in its own
process${hasTaskset ? " on CPU 1 and autocannon in another on CPU 0 (taskset)" : " (not pinned: no taskset)"}. A and B read
"median (min–max over the rounds)"; the ratio is of the medians. CPU per request is the server process's
user + system time (\`/proc/<pid>/stat\`) over the load window divided by the requests it answered; p99 is
of every 2xx latency autocannon measured (hrtime, fractional ms). Mercurius: \`bench/mercurius-server.mjs\`
(Fastify, \`jit: 1\`, its query cache on, logger off; the same key check: SHA-256 of the secret in a Map).

${table}
${text.slice(end)}`);
}
