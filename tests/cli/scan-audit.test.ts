// What `apikey --scan` leaves in the audit trail: a revoked key's event says where it was found without
// ever holding a secret (another key's secret in the file's path included), and looking up a retired
// secret writes no `reuse` event (a scan is no presentation to the service).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";

const tmp = tempDir("service-api-scan-audit-");
afterAll(() => tmp.cleanup());
const store = join(tmp.dir, "keys");
const cli = (...args: string[]) => runCli(["apikey", ...args, "--store", store]);
const create = async (name: string) => (await cli("--create", "--name", name, "--roles", "ADMIN")).stdout.trim();

describe("apikey --scan and the audit trail", () => {
  it("--revoke's event names the place found, never a secret on disk, even one in the file's path", async () => {
    const victim = await create("victim");
    const bystander = await create("bystander");
    const dir = join(tmp.dir, "leak");
    mkdirSync(dir);
    writeFileSync(join(dir, `notes-${bystander}.txt`), `token=${victim}\n`);
    const scan = await cli("--scan", dir, "--revoke");
    expect(scan.code).toBe(1);
    const trail = readFileSync(join(store, "audit", "audit.log"), "utf8");
    expect(trail).toMatch(/"action":"delete".*"name":"victim".*"reason":"leaked: found by apikey --scan at /);
    expect(trail).not.toContain(bystander);
    expect(trail).not.toContain(bystander.slice(5, 20));
    expect(trail).not.toContain(victim);
  });

  it("scanning a retired secret twice writes no reuse event", async () => {
    const gone = await create("gone");
    expect((await cli("--delete", "--name", "gone")).code).toBe(0);
    const file = join(tmp.dir, "old.env");
    writeFileSync(file, `KEY=${gone}\n`);
    for (let i = 0; i < 2; i++) expect((await cli("--scan", file)).code).toBe(0);
    const events = JSON.parse((await cli("--audit", "--json")).stdout).events as { action: string }[];
    expect(events.filter((e) => e.action === "reuse")).toEqual([]);
  });
});
