// node bench/rate-limit-cost.mjs [N] [ROUNDS]: two builds (a copy of dist/ made before a change, and dist/) in one process, 4 variants alternated over many short rounds; CPU time per request. BEFORE_DIST names the copy (default /tmp/perf-before-dist).
import { pathToFileURL } from "node:url";
const builds = { before: process.env.BEFORE_DIST ?? "/tmp/perf-before-dist", after: new URL("../dist", import.meta.url).pathname };
const body = JSON.stringify({ query: "{ me { id name } }" });
const req = (key) => ({ method: "POST", url: "/graphql",
  headers: { get: (n) => (n === "authorization" ? `Bearer ${key}` : n === "content-type" ? "application/json" : n === "accept" ? "application/json" : null) },
  body: () => body, remoteAddress: "127.0.0.1" });
const variants = {};
for (const [b, dist] of Object.entries(builds)) {
  const { createKeyStore } = await import(pathToFileURL(`${dist}/mod.js`));
  const { createServiceHandler } = await import(pathToFileURL(`${dist}/lib/http/handler.js`));
  const store = createKeyStore();
  const plain = await store.create({ name: "plain", roles: ["VIEWER"], permissions: [] });
  const controls = await store.create({ name: "controls", roles: ["VIEWER"], permissions: [],
    rateLimits: [{ limit: 1_000_000, durationMs: 60_000 }], credits: { remaining: 1_000_000_000 } });
  const handle = createServiceHandler({ store, recordLastUse: false });
  variants[`${b} plain`] = [handle, req(plain.key)];
  variants[`${b} controls`] = [handle, req(controls.key)];
}
const N = Number(process.argv[2] ?? 5000), ROUNDS = Number(process.argv[3] ?? 41);
async function run([handle, request]) {
  const c = process.cpuUsage();
  for (let i = 0; i < N; i++) { let r = handle(request); if (r.then) r = await r; if (r.status !== 200) throw new Error(`status ${r.status} ${r.body}`); }
  const d = process.cpuUsage(c);
  return (d.user + d.system) / N;
}
for (let w = 0; w < 5; w++) for (const v of Object.values(variants)) await run(v);
const res = {};
const names = Object.keys(variants);
for (let round = 0; round < ROUNDS; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const n of order) (res[n] ??= []).push(await run(variants[n]));
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const m = Object.fromEntries(names.map((n) => [n, med(res[n])]));
for (const n of names) console.log(`${n}: ${m[n].toFixed(2)} µs CPU/request (median of ${ROUNDS})`);
console.log(`ratio controls/plain: before ${(m["before controls"] / m["before plain"]).toFixed(3)}, after ${(m["after controls"] / m["after plain"]).toFixed(3)}`);
console.log(`plain after/before ${(m["after plain"] / m["before plain"]).toFixed(3)}; controls after/before ${(m["after controls"] / m["before controls"]).toFixed(3)}`);
// per-round paired ratios
const paired = (a, b) => med(res[a].map((x, i) => x / res[b][i]));
console.log(`paired per-round medians: before ${paired("before controls", "before plain").toFixed(3)}, after ${paired("after controls", "after plain").toFixed(3)}, plain after/before ${paired("after plain", "before plain").toFixed(3)}`);
