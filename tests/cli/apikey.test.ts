// The non-interactive `service-api apikey` command, run as a user runs it: the built CLI in a child
// process over a temporary fs store. Covers every row of the specification's operation and error tables.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openKeyStore } from "../../lib/store/config.ts";
import { CLI, cliWithStore, runCli, type RunResult } from "../helpers/cli.ts";

let env: ReturnType<typeof cliWithStore>;
beforeEach(() => (env = cliWithStore()));
afterEach(() => env.cleanup());

const cli = (...args: string[]) => env.cli(...args);
const SECRET = /sapi_[0-9A-Za-z]{49}/;

/** stdout must be exactly one JSON object (and nothing else). */
function oneJson(result: RunResult): Record<string, unknown> {
  const lines = result.stdout.trim().split("\n");
  expect(lines).toHaveLength(1);
  const value = JSON.parse(lines[0]);
  expect(typeof value).toBe("object");
  return value;
}

async function verify(secret: string) {
  const store = await openKeyStore({ kind: "fs", dir: env.store });
  try {
    return await store.verify(secret);
  } finally {
    await store.close();
  }
}

async function listJson(): Promise<Array<Record<string, unknown>>> {
  const result = await cli("apikey", "--list", "--json");
  expect(result.code).toBe(0);
  return oneJson(result).keys as Array<Record<string, unknown>>;
}

describe("apikey --create", () => {
  it("prints {key, name, id} with --json, and the key authenticates", async () => {
    const result = await cli("apikey", "--create", "--name", "deploy key", "--roles", "ADMIN", "--json");
    expect(result.code).toBe(0);
    const body = oneJson(result);
    expect(Object.keys(body).sort()).toEqual(["id", "key", "name"]);
    expect(body.name).toBe("deploy key");
    expect(body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(body.key).toMatch(SECRET);
    expect((await verify(body.key as string))?.id).toBe(body.id);
  });

  it("prints the secret alone on stdout without --json, and a summary on stderr", async () => {
    const result = await cli("apikey", "--create", "--name", "ci", "--permissions", "DOCKER:READ_ANY");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${SECRET.source}\n$`));
    expect(result.stderr).toContain("Created API key 'ci'");
    expect(result.stderr).not.toMatch(SECRET);
  });

  it("stores description, roles and permissions, case-insensitively and without duplicates", async () => {
    const result = await cli(
      "apikey", "--create", "--name", "Überprüfung 東京 2", "--roles", "viewer, Guest,VIEWER",
      "--permissions", "docker:read_any,DOCKER:READ_ANY, vms:Update_Own", "--description", "nightly backups",
    );
    expect(result.code).toBe(0);
    const [key] = await listJson();
    expect(key).toMatchObject({
      name: "Überprüfung 東京 2",
      description: "nightly backups",
      roles: ["VIEWER", "GUEST"],
      permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }, { resource: "VMS", actions: ["UPDATE_OWN"] }],
    });
    expect(Date.parse(key.createdAt as string)).not.toBeNaN();
  });

  it("keeps a numeric-looking name as typed", async () => {
    const result = await cli("apikey", "--create", "--name", "007", "--roles", "GUEST", "--json");
    expect(oneJson(result).name).toBe("007");
  });

  it("trims and NFC-normalizes the name, so a decomposed duplicate is the same name", async () => {
    expect((await cli("apikey", "--create", "--name", "  Caf\u00e9 ", "--roles", "GUEST")).code).toBe(0);
    const dup = await cli("apikey", "--create", "--name", "Cafe\u0301", "--roles", "GUEST");
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("API key with name 'Caf\u00e9' already exists. Use --overwrite to replace it.");
  });

  it.each([["bad-name", "bad name"], ["under_score", "under score"], ["dot.name", "dot name"], ["emoji 🔑", "emoji"], ["tab\tname", "tab name"]])(
    "rejects the name %j with the rule, what would pass (%j) and exit 2",
    async (name, passing) => {
      const result = await cli("apikey", "--create", "--name", name, "--roles", "ADMIN");
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `Error: API key name must contain only letters, numbers, and spaces (Unicode letters are supported). Try "${passing}"\n`,
      );
      expect(await listJson()).toEqual([]);
    },
  );

  it.each([[""], ["   "]])("rejects the empty name %j with exit 2", async (name) => {
    const result = await cli("apikey", "--create", "--name", name, "--roles", "ADMIN");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("API key name is required");
  });

  it("rejects a name over 100 characters", async () => {
    const result = await cli("apikey", "--create", "--name", "a".repeat(101), "--roles", "ADMIN");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("at most 100 characters");
  });

  it("asks for at least one role or permission and creates nothing", async () => {
    const result = await cli("apikey", "--create", "--name", "empty", "--json");
    expect(result.code).toBe(2);
    expect(oneJson(result)).toEqual({ error: "Please add at least one role or permission to the key.", code: "INVALID_INPUT" });
    expect(await listJson()).toEqual([]);
  });

  it("says at a terminal which flags give a role or permission, after the specification's sentence (--json keeps it bare)", async () => {
    const result = await cli("apikey", "--create", "--name", "empty");
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "Error: Please add at least one role or permission to the key. Give --roles <roles>, --permissions <RESOURCE:ACTION,...> or --preset <name> (service-api apikey --create --help lists them).\n",
    );
  });

  it("suggests the actions an unknown action begins, as it suggests a mistyped resource", async () => {
    const result = await cli("apikey", "--create", "--name", "x", "--permissions", "DOCKER:READ");
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Error: Unknown permission action "READ"\. Did you mean 'READ_ANY' or 'READ_OWN'\? Valid actions: /);
    const typo = await cli("apikey", "--create", "--name", "x", "--permissions", "DOCKER:UPDTE_ANY");
    expect(typo.stderr).toMatch(/^Error: Unknown permission action "UPDTE_ANY"\. Did you mean 'UPDATE_ANY'\? /);
  });

  it("says a store on the kernel's proc file system cannot be made, also to root", async () => {
    const result = await runCli(["apikey", "--list", "--store", "fs:/proc/service-api-keys"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      "Error: Key store unavailable: fs:/proc/service-api-keys does not exist, and it cannot be created: /proc is on the kernel's process file system (proc), where no directory can be made: choose another --store\n",
    );
  });

  it("rejects an unknown role, listing the valid ones, and creates nothing", async () => {
    const result = await cli("apikey", "--create", "--name", "x", "--roles", "ADMIN,ROOT");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown role "ROOT". Valid roles: ADMIN, CONNECT, VIEWER, GUEST');
    expect(await listJson()).toEqual([]);
  });

  it.each([
    ["DOCKER", "expected RESOURCE:ACTION"],
    ["DOCKER:READ", 'Unknown permission action "READ"'],
    ["TOASTER:READ_ANY", 'Unknown permission resource "TOASTER"'],
    ["DOCKER:READ_ANY:EXTRA", "expected RESOURCE:ACTION"],
  ])("rejects the permission %j", async (permission, message) => {
    const result = await cli("apikey", "--create", "--name", "x", "--permissions", permission);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(await listJson()).toEqual([]);
  });

  it("rejects a second key of the same name and leaves the first unchanged", async () => {
    const first = oneJson(await cli("apikey", "--create", "--name", "ci", "--roles", "ADMIN", "--json"));
    const second = await cli("apikey", "--create", "--name", "ci", "--roles", "GUEST", "--json");
    expect(second.code).toBe(1);
    expect(oneJson(second)).toEqual({
      error: "API key with name 'ci' already exists. Use --overwrite to replace it.",
      code: "NAME_TAKEN",
    });
    const keys = await listJson();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id: first.id, roles: ["ADMIN"] });
    expect((await verify(first.key as string))?.id).toBe(first.id);
  });

  it("replaces the key with --overwrite: new id, new secret, the old secret stops working", async () => {
    const first = oneJson(await cli("apikey", "--create", "--name", "ci", "--roles", "ADMIN", "--json"));
    const result = await cli("apikey", "--create", "--name", "ci", "--roles", "GUEST", "--overwrite", "--json");
    expect(result.code).toBe(0);
    const second = oneJson(result);
    expect(second.id).not.toBe(first.id);
    expect(second.key).not.toBe(first.key);
    expect(await verify(first.key as string)).toBeNull();
    expect((await verify(second.key as string))?.roles).toEqual(["GUEST"]);
    const keys = await listJson();
    expect(keys.map((k) => k.id)).toEqual([second.id]);
  });

  it("creates with --overwrite when no key of that name exists", async () => {
    const result = await cli("apikey", "--create", "--name", "fresh", "--roles", "ADMIN", "--overwrite", "--json");
    expect(result.code).toBe(0);
    expect(await listJson()).toHaveLength(1);
  });
});

describe("apikey --update", () => {
  it("says what changed, in text and in --json: permissions given replace the key's, and the dropped ones show", async () => {
    await cli("apikey", "--create", "--name", "grafana", "-p", "DOCKER:READ_ANY,VMS:UPDATE_OWN");
    const text = await cli("apikey", "--update", "--name", "grafana", "-p", "LOGS:READ_ANY");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Updated API key 'grafana' \(id [0-9a-f-]+\)\n  permissions  DOCKER:READ_ANY,VMS:UPDATE_OWN -> LOGS:READ_ANY\n$/);
    const json = oneJson(await cli("apikey", "--update", "--name", "grafana", "-p", "LOGS:READ_ANY,VMS:READ_ANY", "--json"));
    expect(json).toMatchObject({
      name: "grafana",
      permissions: [{ resource: "LOGS", actions: ["READ_ANY"] }, { resource: "VMS", actions: ["READ_ANY"] }],
      changed: ["permissions"],
      before: { permissions: [{ resource: "LOGS", actions: ["READ_ANY"] }] },
    });
  });
});

describe("output that cannot be written", () => {
  it("a create whose stdout reader has gone away is undone, says so and exits 1 (its secret is shown nowhere else)", async () => {
    const child = spawn(process.execPath, [CLI, "apikey", "--create", "--name", "lost", "--roles", "GUEST", "--json", "--store", env.store], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.destroy(); // the reading end closes long before the CLI has started
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain("Could not write the new key's secret to stdout (EPIPE). The key was deleted again");
    expect(stderr).not.toMatch(SECRET);
    expect(stderr).not.toContain("    at ");
  });
});

describe("apikey --delete", () => {
  it("deletes by name and reports the count, in JSON", async () => {
    const created = oneJson(await cli("apikey", "--create", "--name", "temp", "--roles", "ADMIN", "--json"));
    await cli("apikey", "--create", "--name", "keep", "--roles", "ADMIN");
    const result = await cli("apikey", "--delete", "--name", "temp", "--json");
    expect(result.code).toBe(0);
    expect(oneJson(result)).toEqual({ deleted: 1, keys: [{ id: created.id, name: "temp" }] });
    expect((await listJson()).map((k) => k.name)).toEqual(["keep"]);
    expect(await verify(created.key as string)).toBeNull();
  });

  it("says how many keys were deleted in plain text", async () => {
    await cli("apikey", "--create", "--name", "temp", "--roles", "ADMIN");
    const result = await cli("apikey", "--delete", "--name", "temp");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("Successfully deleted 1 API key\n");
  });

  it("reports {deleted:0, message} when the store holds no keys", async () => {
    const result = await cli("apikey", "--delete", "--name", "ghost", "--json");
    expect(result.code).toBe(1);
    expect(oneJson(result)).toEqual({ deleted: 0, message: "No API keys found to delete", code: "NO_KEYS" });
  });

  it("reports {deleted:0, error} naming the key when others exist", async () => {
    await cli("apikey", "--create", "--name", "other", "--roles", "ADMIN");
    const result = await cli("apikey", "--delete", "--name", "ghost", "--json");
    expect(result.code).toBe(1);
    expect(oneJson(result)).toEqual({ deleted: 0, error: "No API key found with name: ghost", code: "NOT_FOUND" });
    expect(await listJson()).toHaveLength(1);
  });

  it("says no keys were found in plain text, with exit 1", async () => {
    const result = await cli("apikey", "--delete", "--name", "ghost");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("No API keys found to delete");
  });
});

describe("apikey --list", () => {
  it("lists keys with their fields and never a secret or its hash", async () => {
    const created = oneJson(await cli("apikey", "--create", "--name", "a", "--roles", "ADMIN", "--json"));
    const keys = await listJson();
    expect(Object.keys(keys[0]).sort()).toEqual(["createdAt", "id", "name", "permissions", "roles"]);
    const plain = await cli("apikey", "--list");
    expect(plain.stdout).toContain(created.id as string);
    expect(plain.stdout + plain.stderr).not.toMatch(SECRET);
  });
});

describe("usage", () => {
  it("needs --name when stdin is not a terminal, and says which flags to pass", async () => {
    for (const mode of ["--create", "--delete"]) {
      const result = await cli("apikey", mode);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Missing --name");
    }
  });

  it.each([
    [["apikey", "--create", "--name", "x", "--roles", "ADMIN", "--colour"], "Unknown option `--colour`"],
    [["apikey", "--name", "x"], "Choose what to do: --create, --delete, --update, --rotate, --list, --audit, --usage, --export, --import or --scan"],
    [["apikey", "--create", "--delete", "--name", "x"], "not --create and --delete"],
    [["apikey", "--create", "--name", "a", "--name", "b", "--roles", "ADMIN"], "--name was given more than once"],
    [["keys"], "Unknown command 'keys'"],
    [[], "Missing command"],
  ])("exits 2 for %j with a clear message", async (args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it("exits 2 for an unknown kind of store", async () => {
    const result = await runCli(["apikey", "--list", "--store", "ftp://x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Unknown store 'ftp:'. Use fs:<dir>, memory:, redis://host:port/db or redis+sentinel://host:port/<master name>");
  });

  it("reports usage errors as one JSON object under --json", async () => {
    const result = await cli("apikey", "--create", "--bogus", "--json");
    expect(result.code).toBe(2);
    expect(oneJson(result)).toMatchObject({ code: "USAGE", error: expect.stringContaining("--bogus") });
  });

  it("gives one mode its own short help: its usage, its flags, its examples, within 80 columns", async () => {
    const help = await runCli(["apikey", "--rotate", "--help"]);
    expect(help.code).toBe(0);
    const lines = help.stdout.trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(40);
    expect(lines.filter((line) => line.length > 80)).toEqual([]);
    expect(help.stdout).toMatch(/^ {2}service-api apikey --rotate \(--name <name> \| --id <id>\) \[--grace <dur>\]/m);
    for (const flag of ["--name", "--id", "--grace", "--output", "--format", "--store"]) expect(help.stdout).toMatch(new RegExp(`^  ${flag}\\b`, "m"));
    for (const other of ["--filter", "--rate-limit", "--expired", "--roles"]) expect(help.stdout).not.toContain(other);
    expect(help.stdout).toContain("service-api apikey --rotate --name ci --grace 10m --output ci.key");
    expect(help.stdout).toContain("docs/cli.md");
  });

  it("finds the mode among other flags and in hyphenated modes: apikey --json --rotate --help, webhook --rotate-secret --help", async () => {
    const rotate = await runCli(["apikey", "--json", "--name", "x", "--rotate", "--help"]);
    expect(rotate.stdout).toMatch(/^service-api apikey --rotate: /);
    const secret = await runCli(["webhook", "--rotate-secret", "--help"]);
    expect(secret.stdout).toMatch(/^service-api webhook --rotate-secret: /);
    expect(secret.stdout.split("\n").length).toBeLessThan(40);
    // Each command names its own remote flag: webhook's --url is the endpoint's, its remote one --server.
    const list = (await runCli(["webhook", "--list", "--help"])).stdout;
    expect(list).toMatch(/^ {2}--server <url> /m);
    expect(list).not.toMatch(/^ {2}--url /m);
    expect((await runCli(["apikey", "--rotate", "--help"])).stdout).toMatch(/^ {2}--url <base_url> /m);
  });

  it("writes every value in angle brackets, --rate-limit's and --credits' too", async () => {
    const help = (await runCli(["apikey", "--help"])).stdout;
    expect(help).toMatch(/^ {2}--rate-limit <limits> /m);
    expect(help).toMatch(/^ {2}--credits <n> /m);
    expect(help).not.toMatch(/--\w[\w-]* \[\w/);
    expect(help).toContain("service-api apikey --<mode> --help");
  });

  it("prints help and the version with exit 0", async () => {
    const help = await runCli(["apikey", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--overwrite");
    const version = await runCli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toContain(JSON.parse(readFileSync("package.json", "utf8")).version);
  });
});

describe("secrets and the store", () => {
  it("never writes the secret to the store, and keeps files 0600 in 0700 directories", async () => {
    const { key } = oneJson(await cli("apikey", "--create", "--name", "s", "--roles", "ADMIN", "--json"));
    const files: string[] = [];
    const walk = (dir: string) => {
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(env.store);
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const text = readFileSync(file, "utf8");
      expect(text).not.toContain(key as string);
      expect(text).not.toContain((key as string).slice(5, 30));
    }
  });

  it("logs debug lines at LOG_LEVEL=debug without any secret", async () => {
    const result = await runCli(
      ["apikey", "--create", "--name", "dbg", "--roles", "ADMIN", "--json", "--store", env.store],
      { env: { LOG_LEVEL: "debug" } },
    );
    expect(result.code).toBe(0);
    const { key } = oneJson(result);
    expect(result.stderr).toContain("store: fs:");
    expect(result.stderr).toMatch(/committed in/);
    expect(result.stderr).not.toContain(key as string);
    expect(result.stderr).not.toMatch(SECRET);
  });

  it("of 16 processes creating one name at once, exactly one wins", async () => {
    const results = await Promise.all(
      Array.from({ length: 16 }, () => cli("apikey", "--create", "--name", "race", "--roles", "ADMIN", "--json")),
    );
    const winners = results.filter((r) => r.code === 0);
    const losers = results.filter((r) => r.code !== 0);
    expect(winners).toHaveLength(1);
    for (const loser of losers) {
      expect(loser.code).toBe(1);
      expect(oneJson(loser).code).toBe("NAME_TAKEN");
    }
    const keys = await listJson();
    expect(keys).toHaveLength(1);
    const winner = oneJson(winners[0]);
    expect(keys[0].id).toBe(winner.id);
    expect((await verify(winner.key as string))?.id).toBe(winner.id);
  });
});
