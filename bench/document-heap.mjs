#!/usr/bin/env node
// node --expose-gc bench/document-heap.mjs [--docs N] [--dist path/to/dist]
// The heap the service holds after N distinct documents of 240 operations each, every operation run until
// it is compiled (a GUEST can send these): what the document cache's bound is for. Runs the built handler
// (default dist/, after `npm run build`) in this process with a memory store; give a copy of an older
// dist/ to compare. Prints the heap used (after full collections) every 25 documents.
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const opt = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const docs = Number(opt("--docs", 100));
const dist = resolve(opt("--dist", join(import.meta.dirname, "../dist")));
if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");

const load = (file) => import(pathToFileURL(join(dist, file)).href);
const { createKeyStore } = await load("mod.js");
const { createServiceHandler } = await load("lib/http/handler.js");
const { COMPILE_AFTER } = await load("lib/graphql/compiled.js");

const store = createKeyStore();
const { key } = await store.create({ name: "guest", roles: ["GUEST"], permissions: [] });
const handle = createServiceHandler({ store, recordLastUse: false });
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const send = async (body) => {
  const response = await handle({ method: "POST", url: "/graphql", headers: { get: (name) => headers[name] ?? null }, body: () => body });
  if (response.status !== 200) throw new Error(`status ${response.status}: ${response.body}`);
};
const heap = () => (globalThis.gc(), globalThis.gc(), process.memoryUsage().heapUsed);
const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

const OPERATIONS = 240;
const base = heap();
const started = performance.now();
console.log(`${dist}: ${docs} documents of ${OPERATIONS} operations, each run ${COMPILE_AFTER + 1} times`);
for (let d = 1; d <= docs; d++) {
  const query = Array.from({ length: OPERATIONS }, (_, i) => `query d${d}o${i}{me{id}}`).join(" ");
  for (let run = 0; run <= COMPILE_AFTER; run++) {
    for (let i = 0; i < OPERATIONS; i++) await send(JSON.stringify({ query, operationName: `d${d}o${i}` }));
  }
  if (d % 25 === 0 || d === docs) console.log(`  after ${d} documents: heap +${mb(heap() - base)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
}
await handle.close();
