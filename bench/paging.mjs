// Time of GraphQL `apiKeys(first: 50)` and of a page deep in (`after:` the cursor of the 50,000th key) on a
// file store of 100,000 keys, through `serve` in a child process; optionally side by side with another build
// (`--before <its dist/cli.cjs>`), alternating, on the same store. Each page is asked of a freshly started
// server ("cold": nothing read yet) and again of the same one ("warm"). Then `order/` is removed and the
// first page is timed again: the one-off migration of a store written before the index.
//
//   npm run build && node bench/paging.mjs [--keys 100000] [--rounds 3] [--store <dir>] [--before <cli.cjs>]
//
// --store reuses a store seeded by an earlier run (it is kept; without --store a temporary one is removed).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createStorage } from "unstorage";
import { createKeyStore } from "../dist/mod.js";
import { fsDriver } from "../dist/lib/store/drivers/fs.js";

const ROOT = resolve(import.meta.dirname, "..");
const { values } = parseArgs({ options: { keys: { type: "string", default: "100000" }, rounds: { type: "string", default: "3" }, store: { type: "string" }, before: { type: "string" } } });
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
const temp = values.store ? undefined : mkdtempSync(join(tmpdir(), "service-api-bench-paging-"));
const dir = values.store ? resolve(values.store) : join(temp, "keys");
const builds = [...(values.before ? [["before", resolve(values.before)]] : []), ["after", join(ROOT, "dist/cli.cjs")]];
const children = new Set();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  if (temp) rmSync(temp, { recursive: true, force: true });
});

const open = () => {
  const driver = fsDriver({ base: dir, sync: false });
  return createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
};

async function seed(store, n) {
  let next = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < n) await store.create({ name: `seed ${next++}`, roles: ["VIEWER"], permissions: [] });
  }));
}

function start(cli) {
  const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--store", dir], { env: { ...process.env, LOG_LEVEL: "" }, stdio: ["ignore", "ignore", "pipe"] });
  children.add(child);
  let err = "";
  return new Promise((done, fail) => {
    child.stderr.setEncoding("utf8").on("data", (d) => {
      const url = /listening on (http:\/\/\S+)/.exec((err += d))?.[1];
      if (url) done({ url, stop: () => (children.delete(child), child.kill("SIGTERM"), new Promise((r) => child.once("exit", r))) });
    });
    child.once("exit", (code) => fail(new Error(`${cli} exited (${code}): ${err}`)));
  });
}

const PAGE = "query($after: String) { apiKeys(first: 50, after: $after) { id cursor } }";
async function page(url, secret, after) {
  const began = performance.now();
  const response = await fetch(`${url}/graphql`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${secret}` }, body: JSON.stringify({ query: PAGE, variables: { after } }) });
  const body = await response.json();
  if (!body.data?.apiKeys) throw new Error(JSON.stringify(body));
  return { ms: performance.now() - began, ids: body.data.apiKeys.map((k) => k.id).join() };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const store = open();
let count = 0;
for await (const chunk of store.listPages()) count += chunk.length;
if (count < KEYS) {
  process.stderr.write(`Seeding ${KEYS - count} keys into ${dir}...\n`);
  await seed(store, KEYS - count);
}
const admin = await store.create({ name: `bench admin ${crypto.randomUUID().replaceAll("-", "")}`, roles: ["ADMIN"], permissions: [] });
// The cursor of the 50,000th key in listing order (creation time, then id), as the service hands them out.
const all = [];
for await (const chunk of store.listPages()) for (const k of chunk) all.push(k);
all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
const middle = all[Math.floor(all.length / 2) - 1];
const cursor = btoa(`${middle.createdAt}|${middle.id}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
process.stderr.write(`${all.length} keys; deep cursor after key ${all.length >> 1}\n`);

const times = Object.fromEntries(builds.map(([name]) => [name, { firstCold: [], firstWarm: [], deepCold: [], deepWarm: [] }]));
const answers = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, cli] of builds) {
    const t = times[name];
    let server = await start(cli);
    const first = await page(server.url, admin.key);
    t.firstCold.push(first.ms);
    t.firstWarm.push((await page(server.url, admin.key)).ms);
    const deep = await page(server.url, admin.key, cursor);
    t.deepWarm.push(deep.ms);
    await server.stop();
    server = await start(cli);
    t.deepCold.push((await page(server.url, admin.key, cursor)).ms);
    await server.stop();
    answers[name] = [first.ids, deep.ids];
  }
}
if (values.before && JSON.stringify(answers.before) !== JSON.stringify(answers.after)) throw new Error("the builds answered different pages");

const fmt = (xs) => `${median(xs).toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(", ")})`;
for (const [name] of builds) {
  const t = times[name];
  console.log(`${name}: first:50 cold ${fmt(t.firstCold)}, warm ${fmt(t.firstWarm)}; after the middle key cold ${fmt(t.deepCold)}, warm ${fmt(t.deepWarm)}`);
}
if (values.before) {
  const ratio = (k) => (median(times.before[k]) / median(times.after[k])).toFixed(0);
  console.log(`before/after: first:50 cold ${ratio("firstCold")}x, warm ${ratio("firstWarm")}x; deep cold ${ratio("deepCold")}x, warm ${ratio("deepWarm")}x`);
}

// The migration: a store without order/ builds it on its first page, once.
rmSync(join(dir, "order"), { recursive: true, force: true });
const server = await start(join(ROOT, "dist/cli.cjs"));
const migrated = await page(server.url, admin.key);
const next = await page(server.url, admin.key);
await server.stop();
console.log(`after, store without order/: first page ${migrated.ms.toFixed(0)} ms (builds the index), the next ${next.ms.toFixed(0)} ms`);
if (!existsSync(join(dir, "order"))) throw new Error("order/ was not rebuilt");
await store.deleteById(admin.id);
await store.close();
