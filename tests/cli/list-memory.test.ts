// `apikey --list` of 30,000 keys on a fs store, the CLI as a child process: its peak RSS stays under a fixed
// bound, as a pipe and as --json, because it writes keys as it reads them instead of holding them all.
// Measured on Node 20 (peak RSS, KB): 30,000 keys, before streaming ~120,000 (pipe) and ~130,000 (--json);
// streamed ~90,000 for both, and ~98,000 at 100,000 keys, where the whole list took ~194,000.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { fsDriver } from "../../lib/store/drivers/fs.ts";
import { CLI, tempDir } from "../helpers/cli.ts";

const KEYS = 30_000;
const BOUND_KB = 105_000;
let tmp: ReturnType<typeof tempDir>;
let store: string;
let probe: string;

beforeAll(async () => {
  tmp = tempDir("service-api-list-memory-");
  store = join(tmp.dir, "keys");
  // Reports the process's peak RSS (KB) on stderr as it exits.
  probe = join(tmp.dir, "peak-rss.cjs");
  writeFileSync(probe, `process.on("exit", () => require("node:fs").writeSync(2, "\\npeak-rss-kb=" + process.resourceUsage().maxRSS + "\\n"));\n`);
  const driver = fsDriver({ base: store, sync: false }); // a bulk load that can be redone: no fsync
  const seeding = createKeyStore({ storage: createStorage({ driver }), atomic: driver.atomic });
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < KEYS) await seeding.create({ name: `seed ${next++}`, roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }] });
  }));
  await seeding.close();
}, 300_000);
afterAll(() => tmp?.cleanup(), 300_000);

/** Runs `apikey --list ...args`, counting its output rather than keeping it; resolves with the peak RSS. */
function list(args: string[]): Promise<{ code: number | null; bytes: number; lines: number; peakKb: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-r", probe, CLI, "apikey", "--list", ...args, "--store", store], {
      env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let [bytes, lines, stderr, last] = [0, 0, "", ""];
    child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      for (const byte of chunk) if (byte === 10) lines++;
      last = chunk.subarray(-3).toString();
    });
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      const peakKb = Number(/peak-rss-kb=(\d+)/.exec(stderr)?.[1]);
      resolve({ code, bytes, lines: args.includes("--json") ? (last === "]}\n" ? 1 : 0) : lines, peakKb, stderr });
    });
  });
}

describe(`apikey --list of ${KEYS.toLocaleString("en")} keys`, () => {
  it(`stays under ${BOUND_KB.toLocaleString("en")} KB peak RSS as a pipe, every key listed`, async () => {
    const result = await list([]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.lines).toBe(KEYS);
    expect(result.peakKb).toBeGreaterThan(0);
    expect(result.peakKb).toBeLessThan(BOUND_KB);
  }, 120_000);

  it(`stays under ${BOUND_KB.toLocaleString("en")} KB peak RSS with --json, one whole JSON object`, async () => {
    const result = await list(["--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.lines).toBe(1);
    expect(result.bytes).toBeGreaterThan(KEYS * 100);
    expect(result.peakKb).toBeLessThan(BOUND_KB);
  }, 120_000);
});
