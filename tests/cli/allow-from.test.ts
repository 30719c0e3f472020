// `apikey --allow-from`: the IP allow-list a key is stored with (normalised), what --list, --list --json,
// the pipe format and --dry-run show, --update's replacement and `any`, a rotation keeping it, and the
// refusal of a bad entry (exit 2, the entry named, nothing created).
import { describe, expect, it } from "vitest";
import { freshStores } from "../helpers/cli.ts";
import { listTable } from "../../lib/cli/list.ts";

const fresh = freshStores();
type Cli = ReturnType<typeof fresh>["cli"];
const listed = async (cli: Cli) => JSON.parse((await cli("apikey", "--list", "--json")).stdout).keys;

describe("apikey --allow-from", () => {
  it("stores a normalised allow-list; --list, its pipe format and --dry-run show it; --update replaces it and any removes it", async () => {
    const { cli } = fresh();
    const preview = await cli("apikey", "--create", "--name", "office", "-r", "VIEWER", "--allow-from", "192.0.2.7, 10.1.2.3/16,::ffff:198.51.100.9", "--dry-run");
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain("allow from   192.0.2.7/32,10.1.0.0/16,198.51.100.9/32\n");
    const made = await cli("apikey", "--create", "--name", "office", "-r", "VIEWER", "--allow-from", "192.0.2.7, 10.1.2.3/16,2001:DB8::/32", "--json");
    expect(made.code, made.stderr).toBe(0);
    expect((await listed(cli))[0].allowFrom).toEqual(["192.0.2.7/32", "10.1.0.0/16", "2001:db8::/32"]);
    const line = (await cli("apikey", "--list")).stdout.replace(/\n$/, "").split("\t");
    expect(line).toHaveLength(15);
    expect(line[14]).toBe("192.0.2.7/32,10.1.0.0/16,2001:db8::/32");
    expect(listTable(await listed(cli), 200)).toMatch(/ALLOW FROM[^\n]*\n.*192\.0\.2\.7\/32/);

    expect((await cli("apikey", "--rotate", "--name", "office")).code).toBe(0);
    expect((await listed(cli))[0].allowFrom).toEqual(["192.0.2.7/32", "10.1.0.0/16", "2001:db8::/32"]);
    const dry = await cli("apikey", "--update", "--name", "office", "--allow-from", "any", "--dry-run", "--json");
    expect(JSON.parse(dry.stdout).changed).toEqual(["allowFrom"]);
    expect((await cli("apikey", "--update", "--name", "office", "--allow-from", "::1")).code).toBe(0);
    expect((await listed(cli))[0].allowFrom).toEqual(["::1/128"]);
    expect((await cli("apikey", "--update", "--name", "office", "--allow-from", "any")).code).toBe(0);
    expect((await listed(cli))[0].allowFrom).toBeUndefined();
    expect(listTable(await listed(cli), 200)).not.toContain("ALLOW FROM");
    const events = JSON.parse((await cli("apikey", "--audit", "--json")).stdout).events.filter((e: { action: string }) => e.action === "update");
    expect(events.map((e: { changed: string[] }) => e.changed)).toEqual([["allowFrom"], ["allowFrom"]]);
  });

  it("refuses a bad entry with exit 2 naming it, and creates or changes nothing", async () => {
    const { cli } = fresh();
    const bad = await cli("apikey", "--create", "--name", "office", "-r", "VIEWER", "--allow-from", "10.0.0.0/8,10.0.0.300", "--json");
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toEqual({ error: expect.stringContaining('Invalid allow-list entry: "10.0.0.300" is not an IP address or CIDR block; use'), code: "INVALID_INPUT" });
    expect(await listed(cli)).toEqual([]);
    expect((await cli("apikey", "--create", "--name", "office", "-r", "VIEWER", "--allow-from", "10.0.0.0/8")).code).toBe(0);
    const wide = await cli("apikey", "--update", "--name", "office", "--allow-from", "::/129");
    expect(wide.code).toBe(2);
    expect(wide.stderr).toContain('"::/129" has a prefix length outside 0 to 128');
    expect((await listed(cli))[0].allowFrom).toEqual(["10.0.0.0/8"]);
    const delete_ = await cli("apikey", "--delete", "--name", "office", "--allow-from", "any");
    expect([delete_.code, delete_.stderr]).toEqual([2, "Error: --delete does not take --allow-from. Run 'service-api apikey --help'.\n"]);
  });
});
