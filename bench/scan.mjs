#!/usr/bin/env node
// `apikey --scan` against `grep -E` with the same pattern on the same file: 200 MB of text without secrets
// (this repository's sources, README and graphql-js's, repeated), both run alternately, medians of the wall
// times compared. Also the scan's peak RSS, where /usr/bin/time exists. Part of `npm run bench`; alone:
// `node bench/scan.mjs [--quick]` (run `npm run build` first).
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const ROOT = join(import.meta.dirname, "..");
const CLI = join(ROOT, "dist/cli.cjs");
const PATTERN = "sapi_[0-9A-Za-z]{49}";
const run = promisify(execFile);

/** Text files under `dir` (sources and docs), for a corpus that looks like what people scan. */
function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (/\.(ts|mjs|js|md)$/.test(entry.name)) out.push(path);
  }
  return out;
}

function makeCorpus(file, bytes) {
  const dirs = ["lib", "tests", "bench", "docs", "node_modules/graphql"].map((d) => join(ROOT, d)).filter(existsSync);
  const text = Buffer.concat([readFileSync(join(ROOT, "README.md")), ...dirs.flatMap((d) => sources(d)).map((f) => readFileSync(f))]);
  const fd = openSync(file, "w");
  for (let written = 0; written < bytes; written += text.length) writeSync(fd, text);
  closeSync(fd);
  return statSync(file).size;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function wall(file, argv, okCodes) {
  const start = process.hrtime.bigint();
  await run(file, argv, { maxBuffer: 1 << 26, env: { ...process.env, LOG_LEVEL: "" } }).catch((e) => {
    if (!okCodes.includes(e.code)) throw new Error(`${file} ${argv.join(" ")} failed (${e.code}): ${e.stderr}`);
  });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/**
 * Adds the scan's row to `report(what, a, b, ratio, target, note)`. `work`: a scratch folder.
 */
export async function scanBench({ quick, report, work }) {
  const mb = quick ? 20 : 200;
  const rounds = quick ? 3 : 7;
  console.error(`Scan: ${mb} MB without secrets, apikey --scan vs grep -E`);
  const file = join(work, "scan-corpus.txt");
  const size = makeCorpus(file, mb * 1e6);
  const store = join(work, "scan-store");
  // No secret in it: grep finds nothing (exit 1) and the scan reports nothing (exit 0, store never opened).
  const check = JSON.parse(spawnSync(process.execPath, [CLI, "apikey", "--scan", file, "--json", "--store", store], { encoding: "utf8" }).stdout);
  if (check.unknown + check.live + check.expired !== 0) throw new Error("the corpus holds a secret");
  const scan = [], grep = [];
  for (let i = 0; i < rounds; i++) {
    const pair = [
      async () => grep.push(await wall("grep", ["-E", PATTERN, file], [1])),
      async () => scan.push(await wall(process.execPath, [CLI, "apikey", "--scan", file, "--store", store], [0])),
    ];
    for (const step of i % 2 ? pair.reverse() : pair) await step();
  }
  const rss = existsSync("/usr/bin/time")
    ? Number(spawnSync("/usr/bin/time", ["-f", "%M", process.execPath, CLI, "apikey", "--scan", file, "--store", store], { encoding: "utf8" }).stderr.trim().split("\n").at(-1)) / 1024
    : NaN;
  report(`\`apikey --scan\` of ${(size / 1e6).toFixed(0)} MB without secrets vs \`grep -E\` (median wall)`, `${median(scan).toFixed(0)} ms`, `${median(grep).toFixed(0)} ms`,
    median(scan) / median(grep), "<=5", `${rounds} rounds; scan peak RSS ${rss.toFixed(0)} MiB (target <= 150)`);
  rmSync(file, { force: true });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const work = mkdtempSync(join(tmpdir(), "service-api-bench-scan-"));
  try {
    await scanBench({
      quick: process.argv.includes("--quick"),
      work,
      report: (what, a, b, ratio, target, note) => console.log(`${what}: ${ratio.toFixed(2)} (${a} vs ${b}; target ${target}) ${note}`),
    });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
