// What one request can make the service do with a large answer, for one or more builds side by side:
//   npm run build && node bench/request-budget.mjs before=/path/to/old/dist/cli.cjs after=dist/cli.cjs
// One files store of 3,500 keys (KEYS=…), each with a 1,000-character description and 20 labels of the
// largest size allowed, is served by each build in turn. A key holding only API_KEY:READ_ANY sends each
// request below once while a GUEST asks `{ me { id } }` one request after another beside it; printed per
// request: its time, its status and error code, the GUEST's slowest wait, and the server's peak resident
// memory (VmHWM) since it started. A GUEST's `{ me { id } }` alone is the baseline.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createStorage } from "unstorage";
import { createKeyStore } from "../dist/mod.js";
import { fsDriver } from "../dist/lib/store/drivers/fs.js";

const KEYS = Number(process.env.KEYS ?? 3500);
const builds = process.argv.slice(2).map((arg) => {
  const [name, cli] = arg.includes("=") ? arg.split("=") : [arg, arg];
  return { name, cli: resolve(cli) };
});
if (builds.length === 0) builds.push({ name: "this", cli: resolve(import.meta.dirname, "../dist/cli.cjs") });

const aliased = (n, field) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(" ");
const FULL = "apiKeys { id name description labels { key value } permissions { resource actions } }";
const REQUESTS = [
  ["30 aliases of every key, all fields", `{ ${aliased(30, FULL)} }`],
  ["30 aliases of every key's usage", `{ ${aliased(30, "apiKeys { id usage { total } }")} }`],
  ["every key, all fields (allowed)", `{ ${FULL} }`],
  ["every key's usage (allowed)", "{ apiKeys { id usage { total } } }"],
  ["30 aliases of 160 keys' usage (allowed)", `{ ${aliased(30, "apiKeys(first: 160) { id usage { total } }")} }`],
];

const temp = mkdtempSync(join(tmpdir(), "service-api-bench-budget-"));
const dir = join(temp, "keys");
process.on("exit", () => rmSync(temp, { recursive: true, force: true }));

async function seed() {
  const driver = fsDriver({ base: dir, sync: false });
  const store = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
  const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${"k".repeat(60)}${String(i).padStart(3, "0")}`, "v".repeat(128)]));
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < KEYS) {
      await store.create({ name: `seed ${next++}`, description: "d".repeat(1000), labels, roles: ["VIEWER"], permissions: [] });
    }
  }));
  const reader = (await store.create({ name: "reader", roles: [], permissions: [{ resource: "API_KEY", actions: ["READ_ANY"] }] })).key;
  const guest = (await store.create({ name: "guest", roles: ["GUEST"], permissions: [] })).key;
  await store.close();
  return { reader, guest };
}

const peakMiB = (pid) => {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN; // gone
  }
};

async function measure({ cli }, { reader, guest }) {
  const rows = [];
  for (const [name, query] of [["GUEST { me { id } } alone", null], ...REQUESTS]) {
    // A fresh server per request: each starts from the same memory and nothing read yet.
    const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--store", dir], { env: { ...process.env, LOG_LEVEL: "warn" } });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    const url = await new Promise((done, fail) => {
      const timer = setInterval(() => {
        const match = /listening on (\S+)/.exec(stderr);
        if (match) (clearInterval(timer), done(match[1]));
      }, 20);
      child.on("exit", () => (clearInterval(timer), fail(new Error(stderr))));
    });
    const ask = async (text, key) => {
      const started = performance.now();
      try {
        const response = await fetch(`${url}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify({ query: text }),
        });
        const body = await response.text();
        const code = /"code":"([A-Z_]+)"/.exec(body.slice(0, 2000))?.[1] ?? "-";
        return { ms: performance.now() - started, status: response.status, code, chars: body.length };
      } catch (error) {
        // The server went away (out of memory): say so, and stop asking.
        running = false;
        return { ms: performance.now() - started, status: "died", code: error.cause?.code ?? "-", chars: 0 };
      }
    };
    let running = true;
    for (let i = 0; i < 5; i++) await ask("{ me { id } }", guest); // warm: the GUEST's key is remembered
    if (!query) {
      const alone = [];
      for (let i = 0; i < 20; i++) alone.push((await ask("{ me { id } }", guest)).ms);
      alone.sort((a, b) => a - b);
      rows.push({ request: name, ms: alone[10], status: 200, code: "-", chars: "-", guestMaxMs: "-", peakMiB: peakMiB(child.pid) });
    } else {
      const waits = [];
      const heavy = ask(query, reader).finally(() => (running = false));
      const loop = (async () => { while (running) waits.push((await ask("{ me { id } }", guest)).ms); })();
      const [answer] = await Promise.all([heavy, loop]);
      rows.push({ request: name, ...answer, guestMaxMs: Math.max(...waits), peakMiB: peakMiB(child.pid) });
    }
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((done) => child.on("exit", done));
    } else rows.at(-1).request += ` (exit ${child.exitCode}: ${/^.*(heap|memory|Error).*$/m.exec(stderr)?.[0]?.slice(0, 80) ?? ""})`;
  }
  return rows;
}

const keys = await seed();
const round = (v) => (typeof v === "number" ? Math.round(v) : v);
for (const build of builds) {
  console.log(`\n${build.name} (${build.cli}), ${KEYS} keys`);
  for (const row of await measure(build, keys)) {
    console.log([row.request.padEnd(42), `${round(row.ms)} ms`.padStart(9), String(row.status).padStart(4), row.code.padEnd(14), `answer ${round(row.chars)} chars`.padEnd(24), `guest max ${round(row.guestMaxMs)} ms`.padEnd(20), `peak ${round(row.peakMiB)} MiB`].join("  "));
  }
}
