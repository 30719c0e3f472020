// Start-up of `apikey --create ... --json` under Node 20, 22 and 24, four ways of loading the same
// bundle (dist/cli-main.cjs), each against `node -e 0`, with NODE_EXTRA_CA_CERTS unset and set:
//   vm-same   the vm loader with a code cache made by the same Node version (dist/cli.cjs as built)
//   vm-other  the vm loader made to read a cache from another version (V8 refuses it)
//   require   plain require() of the bundle
//   compile   module.enableCompileCache() (Node 22.1+), then require(); cache warmed first
//   no-cache  dist/cli.cjs with no cache for this V8: what it does then (compile cache where it exists)
// Interleaved rounds, median wall time. Usage: node bench/startup-loaders.mjs [rounds] [node20 node22 node24]
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const rounds = Number(process.argv[2] ?? 15);
const nodes = process.argv.length > 3 ? process.argv.slice(3) : [
  process.execPath,
  "/work/scratch/n22/node_modules/.bin/node",
  "/work/scratch/n24/node_modules/.bin/node",
];
const scratch = mkdtempSync(join(tmpdir(), "startup-loaders-"));
const version = (node) => spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
const major = (node) => version(node).split(".")[0];
const CERTS = process.env.NODE_EXTRA_CA_CERTS ?? "/etc/ssl/certs/ca-certificates.crt";

// A copy of dist per Node version, its cache made by that version.
const dists = {};
for (const node of nodes) {
  const dir = join(scratch, major(node));
  cpSync(join(ROOT, "dist"), dir, { recursive: true });
  spawnSync(node, [join(dir, "cli.cjs"), "apikey", "--create", "--name", "warm", "--roles", "ADMIN", "--json", "--store", join(dir, "warm")], {
    env: { ...process.env, SERVICE_API_CODE_CACHE: "write" },
  });
  writeFileSync(join(dir, "plain.cjs"), `require("./cli-main.cjs");\n`);
  writeFileSync(join(dir, "compile.cjs"), `require("node:module").enableCompileCache?.(require("node:path").join(__dirname, ".compile-cache"));\nrequire("./cli-main.cjs");\n`);
  dists[node] = dir;
}
const v8 = (node) => spawnSync(node, ["-p", "process.versions.v8"], { encoding: "utf8" }).stdout.trim();
const cacheOf = (node) => join(dists[node], `cli-main.${v8(node)}.cache`);
// vm-other: each version's loader finds another version's cache under its own name.
for (const [i, node] of nodes.entries()) {
  const dir = join(scratch, `${major(node)}-other`);
  cpSync(dists[node], dir, { recursive: true });
  cpSync(cacheOf(nodes[(i + 1) % nodes.length]), join(dir, `cli-main.${v8(node)}.cache`));
  dists[`${node} other`] = dir;
  const bare = join(scratch, `${major(node)}-none`);
  cpSync(dists[node], bare, { recursive: true });
  for (const f of readdirSync(bare)) if (f.endsWith(".cache")) rmSync(join(bare, f));
  dists[`${node} none`] = bare;
}

let n = 0;
const create = (dir) => ["apikey", "--create", "--name", `bench ${n++}`, "--roles", "ADMIN", "--json", "--store", join(dir, "keys")];
const cases = [];
for (const node of nodes) {
  const v = major(node);
  const dir = dists[node];
  cases.push(
    { name: `${v} node -e 0`, node, args: () => ["-e", "0"] },
    { name: `${v} vm-same`, node, args: () => [join(dir, "cli.cjs"), ...create(dir)] },
    { name: `${v} vm-other`, node, args: () => [join(dists[`${node} other`], "cli.cjs"), ...create(dir)] },
    { name: `${v} require`, node, args: () => [join(dir, "plain.cjs"), ...create(dir)] },
    { name: `${v} compile`, node, args: () => [join(dir, "compile.cjs"), ...create(dir)] },
    { name: `${v} no-cache`, node, args: () => [join(dists[`${node} none`], "cli.cjs"), ...create(dir)] },
  );
}
const envs = {
  unset: (() => { const e = { ...process.env, LOG_LEVEL: "" }; delete e.NODE_EXTRA_CA_CERTS; return e; })(),
  set: { ...process.env, LOG_LEVEL: "", NODE_EXTRA_CA_CERTS: CERTS },
};
// Check every case works, and warm the compile caches.
for (const c of cases) {
  const r = spawnSync(c.node, c.args(), { env: envs.unset, encoding: "utf8" });
  if (r.status !== 0 || (c.name.endsWith("-e 0") ? false : !r.stdout.includes('"key"'))) throw new Error(`${c.name}: ${r.status} ${r.stderr}`);
}
const times = {};
for (let round = 0; round < rounds; round++) {
  for (const [envName, env] of Object.entries(envs)) {
    for (const c of cases) {
      const start = process.hrtime.bigint();
      spawnSync(c.node, c.args(), { env, stdio: "ignore" });
      (times[`${envName} ${c.name}`] ??= []).push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log(`rounds: ${rounds}; ${nodes.map(version).join(", ")}`);
console.log("| certs | node | node -e 0 | vm-same | vm-other | require | compile | no-cache |");
console.log("|---|---|---|---|---|---|---|---|");
for (const envName of Object.keys(envs)) {
  for (const node of nodes) {
    const v = major(node);
    const base = median(times[`${envName} ${v} node -e 0`]);
    const cell = (k) => { const m = median(times[`${envName} ${v} ${k}`]); return `${m.toFixed(1)} (${(m / base).toFixed(2)}x)`; };
    console.log(`| ${envName} | ${version(node)} | ${base.toFixed(1)} | ${cell("vm-same")} | ${cell("vm-other")} | ${cell("require")} | ${cell("compile")} | ${cell("no-cache")} |`);
  }
}
rmSync(scratch, { recursive: true, force: true });
