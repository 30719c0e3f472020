// `apikey --credits`, `--refill`, `--no-credits`: what --list, --list --json and --update show, the
// refusals of bad values (exit 2, the valid form named, nothing changed), the audit trail, and the
// remote client (`--url`) carrying credits both ways.
import { describe, expect, it } from "vitest";
import { freshStores, runCli } from "../helpers/cli.ts";
import { listTable } from "../../lib/cli/list.ts";
import { startServer } from "../helpers/server.ts";

const fresh = freshStores();
const listJson = async (cli: ReturnType<typeof fresh>["cli"]) => JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys;

describe("apikey --credits", () => {
  it("stores credits and a refill; --list --json and the pipe format's 13th field show them; --update sets and --no-credits removes them", async () => {
    const { cli } = fresh();
    const made = await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", "--credits", "1000", "--refill", "1000/day", "--json");
    expect(made.code, made.stderr).toBe(0);
    expect((await listJson(cli))[0].credits).toEqual({ remaining: 1000, refill: { amount: 1000, interval: "day" } });
    const line = (await cli("apikey", "--list")).stdout.replace(/\n$/, "").split("\t");
    expect(line).toHaveLength(15);
    expect(line[12]).toBe("1000 (1000/day)");

    expect((await cli("apikey", "--update", "--name", "ci", "--credits", "5")).code).toBe(0);
    expect((await listJson(cli))[0].credits).toEqual({ remaining: 5 });
    expect((await cli("apikey", "--update", "--name", "ci", "--credits", "7", "--refill", "50000/month")).code).toBe(0);
    expect((await listJson(cli))[0].credits).toEqual({ remaining: 7, refill: { amount: 50000, interval: "month" } });
    expect((await cli("apikey", "--rotate", "--name", "ci")).code).toBe(0); // kept
    expect((await listJson(cli))[0].credits).toEqual({ remaining: 7, refill: { amount: 50000, interval: "month" } });
    expect((await cli("apikey", "--update", "--name", "ci", "--no-credits")).code).toBe(0);
    expect((await listJson(cli))[0].credits).toBeUndefined();
    expect((await cli("apikey", "--list")).stdout.replace(/\n$/, "").split("\t")).toHaveLength(15);
    expect((await cli("apikey", "--list")).stdout).toMatch(/\tactive\t\t\t\t\t\n$/); // labels, rate limits, credits, old secret, allow-list: empty

    const events = JSON.parse((await cli("apikey", "--audit", "--json")).stdout).events.filter((e: { action: string }) => e.action === "update");
    expect(events.map((e: { changed: string[] }) => e.changed)).toEqual([["credits"], ["credits"], ["credits"]]);
    expect(JSON.stringify(events)).not.toMatch(/sapi_/);
  });

  it("shows a CREDITS column on a terminal only when some key has credits", () => {
    const key = { id: "0b6f1c2e-8d4a-4f3b-9a1e-5c7d2e8f9a10", name: "ci", roles: ["VIEWER" as const], permissions: [], createdAt: "2026-11-22T21:08:09.123Z" };
    expect(listTable([key], 200)).not.toContain("CREDITS");
    const lines = listTable([key, { ...key, name: "capped", credits: { remaining: 42, refill: { amount: 100, interval: "day" as const } } }], 200).split("\n");
    expect(lines[0]).toMatch(/ CREDITS$/);
    expect(lines[2]).toMatch(/ 42 \(100\/day\)$/);
  });

  it("refuses bad values with exit 2, naming the valid form, and changes nothing", async () => {
    const { cli } = fresh();
    const cases: [string[], RegExp][] = [
      [["--credits", "ten"], /--credits needs a whole number of requests, 0 to 1,000,000,000/],
      [["--credits=-1"], /0 to 1,000,000,000/],
      [["--credits", "1000000001"], /0 to 1,000,000,000/],
      [["--credits", "1.5"], /0 to 1,000,000,000/],
      [["--credits", "10", "--refill", "10/week"], /--refill needs <amount>\/<day\|month>, like 1000\/day/],
      [["--credits", "10", "--refill", "0/day"], /--refill needs <amount>\/<day\|month>/],
      [["--credits", "10", "--refill", "1000000001/day"], /amount 1 to 1,000,000,000/],
      [["--refill", "10/day"], /--refill goes with --credits/],
      [["--credits"], /--credits needs a whole number of requests/], // bare: the next word is no count
    ];
    for (const [flags, message] of cases) {
      const result = await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", ...flags);
      expect(result.code, `${flags.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr, flags.join(" ")).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await listJson(cli)).toEqual([]);
    await cli("apikey", "--create", "--name", "ci", "-r", "VIEWER", "--credits", "3");
    for (const flags of [["--credits", "x"], ["--refill", "5/day"], ["--no-credits", "--refill", "5/day"], ["--credits", "4", "--no-credits"]]) {
      const result = await cli("apikey", "--update", "--name", "ci", ...flags);
      expect(result.code, `${flags.join(" ")}: ${result.stderr}`).toBe(2);
    }
    expect((await listJson(cli))[0].credits).toEqual({ remaining: 3 });
    expect((await cli("apikey", "--list", "--no-credits")).code).toBe(2); // not a --list flag
  });

  it("the remote client (--url) sets, shows and removes credits", async () => {
    const { cli, store } = fresh();
    const admin = JSON.parse((await cli("apikey", "--create", "--name", "admin", "-r", "ADMIN", "--json")).stdout).key;
    const server = await startServer({ store });
    try {
      const run = (...args: string[]) => runCli(["apikey", ...args, "--url", server.url], { env: { SERVICE_API_KEY: admin, SERVICE_API_STORE: undefined } });
      expect((await run("--create", "--name", "svc", "-r", "VIEWER", "--credits", "9", "--refill", "9/day")).code).toBe(0);
      const listed = JSON.parse((await run("--list", "--json")).stdout).keys.find((k: { name: string }) => k.name === "svc");
      expect(listed.credits).toEqual({ remaining: 9, refill: { amount: 9, interval: "day" } });
      expect((await run("--update", "--name", "svc", "--no-credits")).code).toBe(0);
      const after = JSON.parse((await run("--list", "--json")).stdout).keys.find((k: { name: string }) => k.name === "svc");
      expect(after.credits).toBeUndefined();
    } finally {
      await server.stop();
    }
  });
});
