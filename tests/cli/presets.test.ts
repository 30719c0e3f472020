// Presets and --dry-run, as a user meets them: the CLI as a child process over a fresh fs store, and
// GraphQL `apiKeyPresets` and `create(input: { preset })` against `serve --port 0`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interactiveCreate, type PromptFn } from "../../lib/cli/prompts.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { cliWithStore } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

const DOCKER_CRUD = { resource: "DOCKER", actions: ["CREATE_ANY", "READ_ANY", "UPDATE_ANY", "DELETE_ANY"] };
let env: ReturnType<typeof cliWithStore>;

beforeAll(() => void (env = cliWithStore()));
afterAll(() => env?.cleanup());

const json = async (...args: string[]) => {
  const result = await env.cli("apikey", ...args, "--json");
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

describe("--preset", () => {
  it("gives a key exactly the preset's pairs, added to -r and -p", async () => {
    await json("--create", "--name", "dockhand", "--preset", "docker_manager", "-r", "guest", "-p", "info:read_any");
    const [made] = (await json("--list", "--filter", "dockhand")).keys;
    expect(made.roles).toEqual(["GUEST"]);
    expect(made.permissions).toEqual([DOCKER_CRUD, { resource: "INFO", actions: ["READ_ANY"] }]);
    await json("--create", "--name", "ops", "--preset", "vm_manager,monitoring");
    const [both] = (await json("--list", "--filter", "name:ops")).keys;
    expect(both.permissions.find((p: { resource: string }) => p.resource === "VMS").actions).toEqual(["CREATE_ANY", "READ_ANY", "UPDATE_ANY", "DELETE_ANY"]);
    expect(both.permissions.find((p: { resource: string }) => p.resource === "LOGS").actions).toEqual(["READ_ANY"]);
  });

  it("answers a mistyped preset with a did-you-mean and exit 2, creating nothing", async () => {
    const result = await env.cli("apikey", "--create", "--name", "typo", "--preset", "docker_manger");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`Unknown preset "docker_manger". Did you mean 'docker_manager'?`);
    expect(result.stderr).toContain("Valid presets: docker_manager, vm_manager, monitoring, backup_manager, network_admin");
    expect(result.stderr).not.toMatch(/at .*\.c?js/);
    expect((await json("--list")).keys.map((k: { name: string }) => k.name)).not.toContain("typo");
  });

  it("at the interactive prompt gives the permissions, so only name, description and roles are asked", async () => {
    const asked: string[] = [];
    const answers = ["from prompt", "", ["GUEST"]];
    const prompt: PromptFn = async (message) => answers[asked.push(message) - 1];
    const store = createKeyStore();
    const out = await interactiveCreate({ create: true, preset: "docker_manager" }, store, { prompt });
    expect(asked).toHaveLength(3);
    expect(asked[2]).toMatch(/Roles/);
    expect(await store.verify(out.stdout!.trim())).toMatchObject({ roles: ["GUEST"], permissions: [DOCKER_CRUD] });
    await expect(interactiveCreate({ create: true, preset: "vm_manger" }, store, { prompt })).rejects.toThrow("Did you mean 'vm_manager'?");
    expect(asked).toHaveLength(3); // the typo is refused before any question
  });

  it("on update replaces the permissions with the preset's (and -p's)", async () => {
    const updated = await json("--update", "--name", "dockhand", "--preset", "network_admin");
    expect(updated.permissions.map((p: { resource: string }) => p.resource)).toEqual(["CONNECT", "CONNECT__REMOTE_ACCESS", "NETWORK", "SERVICES"]);
    expect(updated.roles).toEqual(["GUEST"]);
  });
});

describe("--dry-run", () => {
  it("create: prints what would be made with its effective permissions, exit 0, and makes nothing", async () => {
    const before = await env.cli("apikey", "--audit", "--json");
    const text = await env.cli("apikey", "--create", "--name", "preview", "--preset", "docker_manager", "-r", "guest", "--label", "env=prod", "--expires-in", "7d", "--dry-run");
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("Would create API key 'preview' (dry run: nothing was changed)");
    expect(text.stdout).toMatch(/permissions +DOCKER:CREATE_ANY,DOCKER:READ_ANY,DOCKER:UPDATE_ANY,DOCKER:DELETE_ANY\n/);
    expect(text.stdout).toMatch(/DOCKER +CREATE_ANY CREATE_OWN READ_ANY READ_OWN UPDATE_ANY UPDATE_OWN DELETE_ANY DELETE_OWN\n/);
    expect(text.stdout).toMatch(/ME +READ_ANY READ_OWN\n/);
    expect(text.stdout).toMatch(/labels +env=prod\n/);
    expect(text.stdout).not.toContain("sapi_");
    const asJson = await json("--create", "--name", "preview", "-r", "viewer", "--dry-run");
    expect(asJson).toMatchObject({ dryRun: true, action: "create", key: { name: "preview", roles: ["VIEWER"], permissions: [] } });
    expect(asJson.effectivePermissions).toContainEqual({ resource: "DOCKER", actions: ["READ_ANY", "READ_OWN"] });
    expect(JSON.stringify(asJson)).not.toContain("sapi_");
    expect((await json("--list")).keys.map((k: { name: string }) => k.name)).not.toContain("preview");
    expect((await env.cli("apikey", "--audit", "--json")).stdout).toBe(before.stdout);
  });

  it("create: refuses what the real create would refuse, the same way", async () => {
    const taken = await env.cli("apikey", "--create", "--name", "dockhand", "-r", "guest", "--dry-run");
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain("API key with name 'dockhand' already exists");
    const bad = await env.cli("apikey", "--create", "--name", "x", "-p", "DOCKER:FLY", "--dry-run");
    expect(bad.code).toBe(2);
    const replace = await json("--create", "--name", "dockhand", "-r", "guest", "--overwrite", "--dry-run");
    expect(replace).toMatchObject({ action: "overwrite", replaces: { id: expect.any(String) } });
  });

  it("update: shows each change and the effective permissions after it, and changes nothing", async () => {
    const [key] = (await json("--list", "--filter", "dockhand")).keys;
    const text = await env.cli("apikey", "--update", "--name", "dockhand", "--rename", "dock hand", "-r", "viewer", "--dry-run");
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`Would update API key 'dockhand' (id ${key.id})`);
    expect(text.stdout).toMatch(/name +dockhand -> dock hand\n/);
    expect(text.stdout).toMatch(/roles +GUEST -> VIEWER\n/);
    const asJson = await json("--update", "--name", "dockhand", "-r", "viewer", "--dry-run");
    expect(asJson).toMatchObject({ dryRun: true, action: "update", id: key.id, changed: ["roles"], after: { roles: ["VIEWER"] } });
    expect((await json("--list", "--filter", "dockhand")).keys).toEqual([key]);
  });
});

describe("GraphQL", () => {
  let server: ServerProcess;
  let admin: string;
  beforeAll(async () => {
    admin = (await json("--create", "--name", "admin", "-r", "admin")).key;
    server = await startServer({ store: env.store });
  }, 60_000);
  afterAll(async () => void (await server?.stop()));

  it("apiKeyPresets lists the five presets with their exact pairs", async () => {
    const answer = await gql(server.url, "{ apiKeyPresets { name description roles permissions { resource actions } } }", { key: admin });
    expect(answer.body.errors).toBeUndefined();
    const presets = answer.body.data.apiKeyPresets;
    expect(presets.map((p: { name: string }) => p.name)).toEqual(["docker_manager", "vm_manager", "monitoring", "backup_manager", "network_admin"]);
    expect(presets[0]).toMatchObject({ roles: [], permissions: [DOCKER_CRUD] });
  });

  it("create takes a preset, and refuses a mistyped one with a did-you-mean", async () => {
    const create = "mutation($input: CreateApiKeyInput!) { apiKey { create(input: $input) { name permissions { resource actions } } } }";
    const made = await gql(server.url, create, { key: admin, variables: { input: { name: "from console", preset: "docker_manager" } } });
    expect(made.body.data.apiKey.create.permissions).toEqual([DOCKER_CRUD]);
    const typo = await gql(server.url, create, { key: admin, variables: { input: { name: "typo", preset: "vm_manger" } } });
    expect(typo.body.errors[0].message).toContain("Did you mean 'vm_manager'?");
  });
});
