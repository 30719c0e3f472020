// Keeps `npm run bench` from rotting: a quick run must finish and print every row of the table.
// (The figures of a quick run on a busy test machine mean nothing; BENCHMARKS.md has real ones.)
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { ROOT } from "./helpers/cli.ts";

it("npm run bench -- --quick prints the table of ratios", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["bench/run.mjs", "--quick"], {
    cwd: ROOT,
    timeout: 120_000,
  });
  const rows = stdout.trim().split("\n").slice(2);
  expect(rows.map((row) => row.split("|")[1].trim())).toEqual([
    expect.stringContaining("CLI `apikey --create --json` vs `node -e 0`"),
    ...(process.env.NODE_EXTRA_CA_CERTS ? [expect.stringContaining("NODE_EXTRA_CA_CERTS unset")] : []),
    expect.stringContaining("create with"),
    expect.stringContaining("delete with"),
    expect.stringContaining("vs bare node:http"),
    expect.stringContaining("service with"),
    expect.stringContaining("peak RSS"),
  ]);
  for (const row of rows) expect(Number(row.split("|")[4])).toBeGreaterThan(0);
}, 150_000);
