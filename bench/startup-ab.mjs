// Side by side start-up of `apikey --create --name X --roles ADMIN --json --store <dir>` (files store)
// for several builds of the CLI, each against `node -e 0`, with NODE_EXTRA_CA_CERTS as set and unset.
// Every round runs every (environment, command) pair once, in an order rotated each round; each create
// gets a fresh, empty store directory (made and removed outside the timing). Median wall time in ms and
// its ratio to `node -e 0` in the same environment.
//
// With --shared, each (environment, build) keeps one store across rounds instead, as `npm run bench`
// does (bench/run.mjs): a create then pays for no first-use set-up (folders, revision file, audit reserve).
//
// Usage: node bench/startup-ab.mjs [--rounds 25] [--cpu 1] [--shared] [--certs set|unset] name=path/to/cli.cjs ...
//   e.g. node bench/startup-ab.mjs --rounds 30 before=/tmp/startup-before-dist/cli.cjs after=dist/cli.cjs
// --cpu N runs every command under `taskset -c N` (all sides alike).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
let rounds = 25, cpu, shared = false, only;
const builds = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--rounds") rounds = Number(args[++i]);
  else if (args[i] === "--cpu") cpu = args[++i];
  else if (args[i] === "--shared") shared = true;
  else if (args[i] === "--certs") only = args[++i];
  else {
    const [name, path] = args[i].includes("=") ? args[i].split("=") : [args[i], args[i]];
    builds.push({ name, path: resolve(path) });
  }
}
if (builds.length === 0) builds.push({ name: "dist", path: resolve(import.meta.dirname, "../dist/cli.cjs") });

const CERTS = process.env.NODE_EXTRA_CA_CERTS ?? "/etc/ssl/certs/ca-certificates.crt";
const envs = {
  set: { ...process.env, LOG_LEVEL: "", NODE_EXTRA_CA_CERTS: CERTS },
  unset: (() => { const e = { ...process.env, LOG_LEVEL: "" }; delete e.NODE_EXTRA_CA_CERTS; return e; })(),
};
if (only) for (const name of Object.keys(envs)) if (name !== only) delete envs[name];
const scratch = mkdtempSync(join(tmpdir(), "startup-ab-"));
let n = 0;
const commands = [
  { name: "node -e 0", argv: () => ["-e", "0"] },
  ...builds.map((b) => ({
    name: b.name,
    argv: (store) => [b.path, "apikey", "--create", "--name", `bench ${n++}`, "--roles", "ADMIN", "--json", "--store", store],
  })),
];
const pairs = Object.keys(envs).flatMap((env) => commands.map((command) => ({ env, command })));

const stores = new Map();
function once({ env, command }, check = false) {
  const key = `${env} ${command.name}`;
  if (shared && !stores.has(key)) stores.set(key, mkdtempSync(join(scratch, "s-")));
  const store = shared ? stores.get(key) : mkdtempSync(join(scratch, "s-"));
  const argv = command.argv(join(store, "keys"));
  const [file, full] = cpu ? ["taskset", ["-c", cpu, process.execPath, ...argv]] : [process.execPath, argv];
  const start = process.hrtime.bigint();
  const r = spawnSync(file, full, { env: envs[env], stdio: check ? "pipe" : "ignore", encoding: "utf8" });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (!shared) rmSync(store, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`${command.name} (${env}): exit ${r.status} ${r.stderr ?? ""}`);
  if (check && command.name !== "node -e 0" && !/"key":"/.test(r.stdout)) throw new Error(`${command.name}: unexpected output ${r.stdout}`);
  return ms;
}

for (const p of pairs) once(p, true); // each works; warms the page cache
const times = new Map(pairs.map((p) => [p, []]));
const load = [loadavg()[0]];
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < pairs.length; i++) {
    const p = pairs[(i + round) % pairs.length];
    times.get(p).push(once(p));
  }
  load.push(loadavg()[0]);
}
rmSync(scratch, { recursive: true, force: true });

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log(`${rounds} rounds, rotated, ${shared ? "one store per build kept across rounds" : "a fresh store per create"}; load average (1 min) ${Math.min(...load).toFixed(2)}-${Math.max(...load).toFixed(2)}${cpu ? `; taskset -c ${cpu}` : ""}`);
console.log(`| certs | ${commands.map((c) => c.name).join(" | ")} |`);
console.log(`|---|${commands.map(() => "---").join("|")}|`);
const series = (env, command) => times.get(pairs.find((p) => p.env === env && p.command === command));
for (const env of Object.keys(envs)) {
  const base = median(series(env, commands[0]));
  const cells = commands.map((c, i) => {
    const m = median(series(env, c));
    return i === 0 ? m.toFixed(1) : `${m.toFixed(1)} (${(m / base).toFixed(3)}x)`;
  });
  console.log(`| ${env} | ${cells.join(" | ")} |`);
}
// The machine's speed drifts over a run: the ratio within each round (its runs are seconds apart), median
// over rounds, is steadier than the ratio of two medians.
console.log(`\nmedian of per-round ratios to node -e 0:`);
for (const env of Object.keys(envs)) {
  const base = series(env, commands[0]);
  const cells = commands.slice(1).map((c) => `${c.name} ${median(series(env, c).map((t, i) => t / base[i])).toFixed(3)}x`);
  console.log(`  ${env}: ${cells.join(", ")}`);
}
