// Remote mode: `apikey --url <base_url>` acts on a live server through GraphQL and must print what
// local mode prints, with the same exit statuses. Also the client's typed errors.
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunResult, runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";
import { ClientError, createClient } from "../../lib/client/client.ts";

const tmp = tempDir();
const served = join(tmp.dir, "served");
const local = join(tmp.dir, "local");
let server: ServerProcess;
let adminKey: string;

beforeAll(async () => {
  // Without last-use recording: the served store would record the admin key's use and the local one not,
  // a true difference that is not what these comparisons are about (tests/client/remote-lifecycle.test.ts has it).
  server = await startServer({ store: served, args: ["--no-last-use"] });
  // Both stores start with one admin key, so "not found" means the same thing in both.
  for (const store of [served, local]) {
    const made = await runCli(["apikey", "--create", "--name", "admin", "--roles", "ADMIN", "--json", "--store", store]);
    if (store === served) adminKey = JSON.parse(made.stdout).key;
  }
});
afterAll(async () => {
  await server?.stop("SIGKILL").catch(() => {});
  tmp.cleanup();
});

const remote = (args: string[], key = adminKey) =>
  runCli(["apikey", ...args, "--url", server.url], { env: { SERVICE_API_KEY: key, SERVICE_API_STORE: undefined } });
const localCli = (args: string[]) => runCli(["apikey", ...args, "--store", local]);

/** Output with the parts that must differ (ids, secrets, timestamps) replaced by placeholders. */
const normalize = (r: RunResult) => ({
  code: r.code,
  stdout: r.stdout
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>")
    .replace(/sapi_[0-9A-Za-z]+/g, "<key>")
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>"),
  stderr: r.stderr.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>"),
});

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("apikey --url (remote mode)", () => {
  it.each([
    ["create --json", ["--create", "--name", "remote one", "--roles", "viewer", "--description", "made over HTTP", "--json"]],
    ["create a taken name", ["--create", "--name", "remote one", "--roles", "GUEST", "--json"]],
    ["create an invalid name", ["--create", "--name", "bad-name", "--roles", "GUEST", "--json"]],
    ["create with an unknown role", ["--create", "--name", "x", "--roles", "ROOT"]],
    ["create with nothing granted", ["--create", "--name", "empty", "--json"]],
    ["create plain", ["--create", "--name", "remote two", "--permissions", "DOCKER:READ_ANY,vms:update_any"]],
    ["create --overwrite", ["--create", "--name", "remote two", "--roles", "GUEST", "--overwrite", "--json"]],
    ["list --json", ["--list", "--json"]],
    ["list", ["--list"]],
    ["delete --json", ["--delete", "--name", "remote one", "--json"]],
    ["delete a missing name --json", ["--delete", "--name", "remote one", "--json"]],
    ["delete plain", ["--delete", "--name", "remote two"]],
    ["delete a missing name plain", ["--delete", "--name", "remote two"]],
  ])("%s prints what local mode prints, with the same exit status", async (_, args) => {
    const [there, here] = await Promise.all([remote(args), localCli(args)]);
    expect(normalize(there)).toEqual(normalize(here));
  });

  it("keys made remotely live in the server's store and authenticate at once", async () => {
    const made = await remote(["--create", "--name", "remote three", "--roles", "GUEST", "--json"]);
    const { key, id } = JSON.parse(made.stdout);
    const listed = await runCli(["apikey", "--list", "--json", "--store", served]);
    expect(JSON.parse(listed.stdout).keys.map((k: { id: string }) => k.id)).toContain(id);
    expect((await gql(server.url, "{ me { id } }", { key })).body.data.me.id).toBe(id);
    await remote(["--delete", "--name", "remote three"]);
    expect((await gql(server.url, "{ me { id } }", { key })).status).toBe(401);
  });

  it("takes the URL from SERVICE_API_URL", async () => {
    const result = await runCli(["apikey", "--list", "--json"], {
      env: { SERVICE_API_URL: server.url, SERVICE_API_KEY: adminKey, SERVICE_API_STORE: join(tmp.dir, "unused") },
    });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).keys.map((k: { name: string }) => k.name)).toContain("admin");
  });

  it("fails clearly without a key, with a refused key, a key without rights, or no server", async () => {
    const noKey = await runCli(["apikey", "--list", "--json", "--url", server.url], { env: { SERVICE_API_KEY: "" } });
    expect(noKey.code).toBe(2);
    expect(JSON.parse(noKey.stdout)).toMatchObject({ code: "USAGE", error: expect.stringContaining("SERVICE_API_KEY") });

    const refused = await remote(["--list", "--json"], "sapi_not_a_real_key");
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).code).toBe("UNAUTHENTICATED");
    // A key that is no key is said to be so, naming the variable, not "should start with 'sapi_'".
    const bogus = await remote(["--list"], "sapi_bogus");
    expect(bogus.code).toBe(1);
    expect(bogus.stderr).toBe(
      "Error: SERVICE_API_KEY is not an API key: it starts with 'sapi_' but is not a whole key (its checksum does not match: cut short, mistyped or made up). Set it to the key that --create printed, copied completely\n",
    );

    const viewer = JSON.parse((await remote(["--create", "--name", "viewer", "--roles", "VIEWER", "--json"])).stdout).key;
    const forbidden = await remote(["--create", "--name", "by viewer", "--roles", "GUEST", "--json"], viewer);
    expect(forbidden.code).toBe(1);
    expect(JSON.parse(forbidden.stdout)).toMatchObject({ code: "FORBIDDEN", error: expect.stringContaining("API_KEY:CREATE_ANY") });

    const down = await runCli(["apikey", "--list", "--json", "--url", "http://127.0.0.1:1"], { env: { SERVICE_API_KEY: adminKey } });
    expect(down.code).toBe(3); // an unreachable service is a broken environment, not a refusal
    expect(JSON.parse(down.stdout)).toMatchObject({ code: "STORE_UNAVAILABLE", error: expect.stringContaining("Cannot reach the service") });
    expect(JSON.parse(down.stdout).error).toBe(
      "Cannot reach the service at http://127.0.0.1:1/graphql: fetch refuses to connect to this port (one of those browsers block); serve on another",
    );
    const closed = await closedPort();
    const refusedText = await runCli(["apikey", "--list", "--url", `http://127.0.0.1:${closed}`], { env: { SERVICE_API_KEY: adminKey } });
    expect(refusedText.code).toBe(3);
    expect(refusedText.stderr).toBe(
      `Error: Cannot reach the service at http://127.0.0.1:${closed}/graphql: connection refused: nothing listens there; is \`service-api serve\` running, on that host and port?\n`,
    );

    const both = await runCli(["apikey", "--list", "--url", server.url, "--store", local], { env: { SERVICE_API_KEY: adminKey } });
    expect(both.code).toBe(2);
  });
});

describe("createClient", () => {
  it("returns data, and throws typed errors for 401, FORBIDDEN and service error codes", async () => {
    const client = createClient({ baseUrl: server.url, apiKey: adminKey });
    expect(await client.request<{ online: boolean }>("{ online }")).toEqual({ online: true });

    const anonymous = createClient({ baseUrl: `${server.url}/graphql`, apiKey: "sapi_x" });
    const denied = await anonymous.request("{ online }").catch((e) => e);
    expect(denied).toBeInstanceOf(ClientError);
    expect(denied).toMatchObject({ code: "UNAUTHENTICATED", httpStatus: 401 });

    const guestKey = JSON.parse((await remote(["--create", "--name", "client guest", "--roles", "GUEST", "--json"])).stdout).key;
    const guest = createClient({ baseUrl: server.url, apiKey: guestKey });
    const partial = await guest.request("{ me { name } online }").catch((e) => e);
    expect(partial).toMatchObject({ code: "FORBIDDEN", httpStatus: 200, data: { me: { name: "client guest" }, online: null } });

    const taken = await client
      .request(`mutation { apiKey { create(input: { name: "admin", roles: [GUEST] }) { id } } }`)
      .catch((e) => e);
    expect(taken).toMatchObject({ code: "NAME_TAKEN", exitCode: 1 });
    const syntax = await client.request("{ online").catch((e) => e);
    expect(syntax).toMatchObject({ code: "INVALID_INPUT" });
  });
});
