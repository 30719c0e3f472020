// Keeps `npm run bench` from rotting: a quick run must finish and print every row of the table, each with
// a positive ratio, and each target row with its target and a verdict.
// (The figures of a quick run on a busy test machine mean nothing; docs/performance.md has real ones.)
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { ROOT } from "../helpers/cli.ts";

it("npm run bench -- --quick prints the table of ratios", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["bench/run.mjs", "--quick"], {
    cwd: ROOT,
    timeout: 170_000,
  });
  const rows = stdout.trim().split("\n").slice(2).map((row) => row.split("|").map((cell) => cell.trim()));
  const ME = "`{ me { id name } }`", INFO = "`{ me { id name } info { hostname } }`";
  // [what the row's name holds, its target]
  const expected: [string, string][] = [
    ["CLI `apikey --create --json` vs `node -e 0`", "<=1.3"],
    ...(process.env.NODE_EXTRA_CA_CERTS ? [["NODE_EXTRA_CA_CERTS unset", "report"] as [string, string]] : []),
    ["create with", "<=1.2"],
    ["delete with", "<=1.2"],
    ["`apikey --scan` of", "<=5"],
    [`service ${ME} vs Mercurius (req/s)`, ">=1.2"],
    [`service ${INFO} vs Mercurius (req/s)`, ">=1.0"],
    [`service ${ME} vs Mercurius (server CPU per request)`, "<=1.0"],
    [`service ${INFO} vs Mercurius (server CPU per request)`, "<=1.0"],
    [`service ${ME} vs Mercurius (p99 latency)`, "<=1.0"],
    [`service ${INFO} vs Mercurius (p99 latency)`, "<=1.0"],
    [`service ${ME} vs bare node:http`, "report"],
    ["LOG_LEVEL=warn", "report"],
    [`last-use recording on (default) vs off, ${ME}`, "<=1.05"],
    [`last-use recording on (default) vs off, ${INFO}`, "<=1.05"],
    [`a key with a rate limit and credits vs one without, ${ME}, files store`, "<=1.10"],
    [`a key with a rate limit and credits vs one without, ${ME}, memory store`, "<=1.10"],
    ["/auth with a permission check vs bare node:http", ">=0.8"],
    ["service with", ">=0.83"],
    ["peak RSS", "report"],
  ];
  expect(rows.map((row) => [row[1], row[5]])).toEqual(expected.map(([what, target]) => [expect.stringContaining(what), target]));
  for (const row of rows) {
    expect(Number(row[4])).toBeGreaterThan(0);
    expect(row[6]).toEqual(row[5] === "report" ? "" : expect.stringMatching(/^(yes|NO)$/));
  }
}, 200_000);
