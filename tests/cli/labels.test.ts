// Labels and list filters: `--label`/`--unlabel` on create and update, `--list --filter`, the same over
// GraphQL (`ApiKey.labels`, `apiKeys(filter:)`, label inputs) and in remote mode; mistyped filter words
// and roles get a did-you-mean instead of matching nothing.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";
import { applyLabels, checkLabels, parseLabelFlag } from "../../lib/core/labels.ts";
import { parseFilter } from "../../lib/core/filter.ts";
import { generateSecret } from "../../lib/core/secret.ts";

const tmp = tempDir("service-api-labels-");
const store = join(tmp.dir, "keys");
const cli = (...args: string[]) => runCli(["apikey", ...args, "--store", store]);
let server: ServerProcess;
let admin: string;

beforeAll(async () => {
  admin = JSON.parse((await cli("--create", "--name", "admin", "-r", "ADMIN", "--json")).stdout).key;
  server = await startServer({ store });
});
afterAll(async () => {
  await server?.stop();
  tmp.cleanup();
});

const names = async (...filter: string[]) => JSON.parse((await cli("--list", "--json", ...filter)).stdout).keys.map((k: { name: string }) => k.name);

describe("labels on the command line", () => {
  it("are set on create, merged and removed on update (an audited change), and filter the list", async () => {
    expect((await cli("--create", "--name", "deploy prod", "-r", "VIEWER", "--label", "env=prod,team=ops")).code).toBe(0);
    expect((await cli("--create", "--name", "deploy dev", "-r", "VIEWER", "--label", "env=dev")).code).toBe(0);
    const updated = await cli("--update", "--name", "deploy dev", "--label", "owner=ada@example.org", "--unlabel", "env", "--json");
    expect(updated.code, updated.stderr).toBe(0);
    const [dev] = JSON.parse((await cli("--list", "--json", "--filter", "name:dev")).stdout).keys;
    expect(dev.labels).toEqual({ owner: "ada@example.org" });
    expect((await cli("--audit", "--json")).stdout).toMatch(/"action":"update","id":"[^"]+","name":"deploy dev".*"changed":\["labels"\]/);

    expect(await names("--filter", "label:env=prod")).toEqual(["deploy prod"]);
    expect(await names("--filter", "label:owner")).toEqual(["deploy dev"]);
    expect(await names("--filter", "deploy role:viewer")).toEqual(["deploy prod", "deploy dev"]);
    expect(await names("--filter", "role:ADMIN state:active")).toEqual(["admin"]);
    const none = await cli("--list", "--filter", "label:env=nowhere");
    expect([none.code, none.stdout, none.stderr]).toEqual([0, "", `No API key matches the filter (3 keys stored in fs:${store})\n`]);
    const lines = (await cli("--list", "--filter", "label:team=ops")).stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0].split("\t").at(-1)).toBe("env=prod,team=ops"); // the pipe format's last field
  });

  it("refuses bad labels and mistyped filters with exit 2, naming the fix", async () => {
    const cases: [string[], RegExp][] = [
      [["--create", "--name", "bad", "-r", "GUEST", "--label", "Env=prod"], /Invalid label key "Env"/],
      [["--create", "--name", "bad", "-r", "GUEST", "--label", "env"], /expected key=value/],
      [["--create", "--name", "bad", "-r", "GUEST", "--label", `token=${generateSecret()}`], /must not hold an API key secret/],
      [["--create", "--name", "bad", "-r", "viewr"], /Unknown role "VIEWR"\. Did you mean 'VIEWER'\?/],
      [["--create", "--name", "bad", "-p", "DOKER:READ_ANY"], /Did you mean 'DOCKER'\?/],
      [["--list", "--filter", "role:admn"], /Unknown role 'admn' in the filter\. Did you mean 'ADMIN'\?/],
      [["--list", "--filter", "stat:expired"], /Unknown filter 'stat:'\. Did you mean 'state'\?/],
      [["--list", "--filter", "state:gone"], /Unknown state 'gone'/],
      [["--list", "--filter", "label:=prod"], /needs a label key and, after '=', a value/],
      [["--list", "--filter", "label:env="], /needs a label key and, after '=', a value/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr, args.join(" ")).toMatch(message);
      expect(result.stderr).not.toMatch(/sapi_[0-9A-Za-z]{49}/);
    }
    expect(await names("--filter", "name:bad")).toEqual([]);
  });

  it("keeps at most 20 labels a key", () => {
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v"]));
    expect(Object.keys(checkLabels(twenty)!)).toHaveLength(20);
    expect(() => applyLabels(twenty, parseLabelFlag("one=more"))).toThrow(/at most 20 labels/);
    expect(() => checkLabels({ ...twenty, k20: "v" })).toThrow(/at most 20 labels/);
    expect(parseFilter("label:k1=v")({ id: "x", name: "n", roles: [], permissions: [], createdAt: "", labels: twenty }, 0)).toBe(true);
  });
});

describe("labels over GraphQL and in remote mode", () => {
  it("are set on create, replaced on update, read as ApiKey.labels and filtered by apiKeys(filter:)", async () => {
    const created = await gql(server.url, `mutation { apiKey { create(input: { name: "gql", roles: [GUEST], labels: [{ key: "env", value: "stage" }] }) { id labels { key value } } } }`, { key: admin });
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data.apiKey.create.labels).toEqual([{ key: "env", value: "stage" }]);
    const filtered = await gql(server.url, `{ apiKeys(filter: "label:env=stage") { name labels { key value } } }`, { key: admin });
    expect(filtered.body.data.apiKeys).toEqual([{ name: "gql", labels: [{ key: "env", value: "stage" }] }]);
    const bad = await gql(server.url, `{ apiKeys(filter: "role:admn") { name } }`, { key: admin });
    expect(bad.body.errors[0].message).toMatch(/Did you mean 'ADMIN'\?/);
    const refused = await gql(server.url, `mutation { apiKey { update(input: { id: "${created.body.data.apiKey.create.id}", labels: [{ key: "Bad", value: "x" }] }) { id } } }`, { key: admin });
    expect(refused.body.errors[0].message).toMatch(/Invalid label key "Bad"/);
  });

  it("remote mode sets, merges and lists labels through the service", async () => {
    const remote = (...args: string[]) => runCli(["apikey", ...args, "--url", server.url], { env: { SERVICE_API_KEY: admin, SERVICE_API_STORE: undefined } });
    expect((await remote("--create", "--name", "remote", "-r", "GUEST", "--label", "env=prod")).code).toBe(0);
    const updated = await remote("--update", "--name", "remote", "--label", "team=ops");
    expect(updated.code, updated.stderr).toBe(0);
    const listed = JSON.parse((await remote("--list", "--json", "--filter", "name:remote label:team=ops")).stdout).keys;
    expect(listed.map((k: { name: string; labels: unknown }) => [k.name, k.labels])).toEqual([["remote", { env: "prod", team: "ops" }]]);
  });
});
