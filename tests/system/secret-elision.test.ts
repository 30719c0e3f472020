// A key pasted into the wrong flag, field or variable is never echoed back: anything that passes a
// secret's checksum, with or without `sapi_`, is elided from every message and JSON field the CLI prints
// and from every error the service answers (parse errors, variable coercion, resolvers).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containsSecret, generateSecret, redactSecrets } from "../../lib/core/secret.ts";
import { type RunResult, runCli, tempDir } from "../helpers/cli.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";

/** A secret whose body starts with a letter, so that it is also a GraphQL name. */
function secretWithNameBody(): { secret: string; body: string } {
  for (;;) {
    const secret = generateSecret();
    if (/^[A-Za-z]/.test(secret.slice(5))) return { secret, body: secret.slice(5) };
  }
}

/** Any 12 characters of the body in `text`, in any case: enough of it to matter. */
function leaks(text: string, body: string): string | undefined {
  const lower = text.toLowerCase();
  for (let at = 0; at + 12 <= body.length; at++) {
    if (lower.includes(body.slice(at, at + 12).toLowerCase())) return body.slice(at, at + 12);
  }
}

const { secret, body } = secretWithNameBody();
const output = (result: RunResult) => result.stdout + result.stderr;

describe("redactSecrets", () => {
  it.each([
    ["with its prefix", `id: ${secret}.`, "id: sapi_…."],
    ["the body alone", `name: ${body}`, "name: …"],
    ["glued to other letters", `xx${body}yy`, "xx…yy"],
    ["broken by spaces", `name: ${body.slice(0, 20)} ${body.slice(20)}`, "name: …"],
    ["broken over lines", `${body.slice(0, 10)}\n  ${body.slice(10, 30)}\r\n${body.slice(30)}`, "…"],
    ["quoted in JSON with an escaped newline", JSON.stringify(`${body.slice(0, 25)}\n${body.slice(25)}`), '"…"'],
    ["twice", `${secret} and ${body}`, "sapi_… and …"],
  ])("elides a secret %s", (_how, text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
    expect(containsSecret(text)).toBe(true);
  });

  it("leaves text that only looks like a secret as it is, a `sapi_` word apart", () => {
    const typo = body.slice(0, 40) + (body[40] === "a" ? "b" : "a") + body.slice(41);
    expect(redactSecrets(`name: ${typo}`)).toBe(`name: ${typo}`);
    expect(redactSecrets("a".repeat(200) + " the quick brown fox 0123456789")).toBe("a".repeat(200) + " the quick brown fox 0123456789");
    expect(containsSecret(typo)).toBe(false);
  });
});

describe("the CLI never echoes a secret given where it does not belong", () => {
  const tmp = tempDir("service-api-elision-");
  const store = `${tmp.dir}/keys`;
  let server: ServerProcess;
  let admin: string;
  const cli = (...args: string[]) => runCli([...args, "--store", store]);
  const remote = (...args: string[]) => runCli(args, { env: { SERVICE_API_URL: server.url, SERVICE_API_KEY: admin } });

  beforeAll(async () => {
    admin = (await cli("apikey", "--create", "--name", "admin", "-r", "ADMIN")).stdout.trim();
    await cli("apikey", "--create", "--name", "a", "-r", "VIEWER");
    server = await startServer({ store });
  });
  afterAll(async () => {
    await server?.stop();
    tmp.cleanup();
  });

  const mistakes: [string, string[]][] = [
    ["--delete --id sapi_…", ["apikey", "--delete", "--id", secret]],
    ["--delete --id <body>", ["apikey", "--delete", "--id", body]],
    ["--delete --name <body>", ["apikey", "--delete", "--name", body]],
    ["--delete --name sapi_…", ["apikey", "--delete", "--name", secret]],
    ["--update --name <body>", ["apikey", "--update", "--name", body, "-r", "ADMIN"]],
    ["--update --id <body>", ["apikey", "--update", "--id", body, "-r", "ADMIN"]],
    ["--update --rename <body>", ["apikey", "--update", "--name", "a", "--rename", body]],
    ["--update --rename <body with a space>", ["apikey", "--update", "--name", "a", "--rename", `${body.slice(0, 20)} ${body.slice(20)}`]],
    ["--roles <body>", ["apikey", "--update", "--name", "a", "-r", `VIEWER,${body}`]],
    ["--permissions <RESOURCE:body>", ["apikey", "--update", "--name", "a", "-p", `DOCKER:${body}`]],
    ["--permissions <body>", ["apikey", "--update", "--name", "a", "-p", body]],
    ["--description <secret>", ["apikey", "--update", "--name", "a", "-d", `for ${secret}`]],
    ["--expires-in <body>", ["apikey", "--update", "--name", "a", "--expires-in", body]],
    ["--since <body>", ["apikey", "--audit", "--since", body]],
    ["--limit <body>", ["apikey", "--audit", "--limit", body]],
    ["--grace <body>", ["apikey", "--create", "--name", "g", "-r", "GUEST", "--overwrite", "--grace", body]],
    ["--format <body>", ["apikey", "--create", "--name", "g", "-r", "GUEST", "--format", body]],
    ["--output in a missing folder named <body>", ["apikey", "--create", "--name", "g", "-r", "GUEST", "--output", `/nonexistent/${body}/k`]],
    ["an unknown flag", ["apikey", "--list", `--${body}`]],
    ["an unknown command", [body]],
  ];

  it.each(mistakes)("%s, as text and as --json", async (_what, args) => {
    for (const result of await Promise.all([cli(...args), cli(...args, "--json")])) {
      expect(result.code, output(result)).not.toBe(0);
      expect(leaks(output(result), body), output(result)).toBeUndefined();
    }
  });

  it.each(mistakes.slice(0, 6))("%s, with --url", async (_what, args) => {
    for (const result of await Promise.all([remote(...args), remote(...args, "--json")])) {
      expect(result.code, output(result)).not.toBe(0);
      expect(leaks(output(result), body), output(result)).toBeUndefined();
    }
  });

  it("--store <folder>/<body> at LOG_LEVEL=debug and trace, and --url <body>", async () => {
    for (const level of ["debug", "trace"]) {
      const result = await runCli(["apikey", "--list", "--store", `${tmp.dir}/${body}`], { env: { LOG_LEVEL: level } });
      expect(result.stderr).toContain("store: fs:");
      expect(leaks(output(result), body), output(result)).toBeUndefined();
    }
    const result = await runCli(["apikey", "--list", "--url", `http://127.0.0.1:1/${body}`]);
    expect(result.code).not.toBe(0);
    expect(leaks(output(result), body), output(result)).toBeUndefined();
  });

  it("still says what was not found", async () => {
    const result = await cli("apikey", "--delete", "--id", secret, "--json");
    expect(JSON.parse(result.stdout)).toEqual({ deleted: 0, error: "No API key found with id: sapi_…", code: "NOT_FOUND" });
    expect((await cli("apikey", "--delete", "--name", body)).stderr).toBe("No API key found with name: …\n");
  });
});

describe("the service never echoes a secret in an error", () => {
  const tmp = tempDir("service-api-elision-gql-");
  let server: ServerProcess;
  let admin: string;
  beforeAll(async () => {
    const created = await runCli(["apikey", "--create", "--name", "admin", "-r", "ADMIN", "--store", `${tmp.dir}/keys`]);
    admin = created.stdout.trim();
    server = await startServer({ store: `${tmp.dir}/keys` });
  });
  afterAll(async () => {
    await server?.stop();
    tmp.cleanup();
  });

  const addRole = "mutation($id: PrefixedID!, $role: Role!) { apiKey { addRole(input: { apiKeyId: $id, role: $role }) } }";
  const update = "mutation($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { id } } }";
  const create = "mutation($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id } } }";
  const requests: [string, string, Record<string, unknown>?][] = [
    ["a parse error", `{ me { id } } ${body}`],
    ["an unknown field", `{ ${body} }`],
    ["an unknown argument", `{ auditLog(${body}: 1) { id } }`],
    ["a literal of the wrong enum", `mutation { apiKey { addRole(input: { apiKeyId: "x", role: ${body} }) } }`],
    ["a variable of the wrong enum", addRole, { id: "x", role: body }],
    ["addRole on the body as an id", addRole, { id: body, role: "ADMIN" }],
    ["addRole on the secret as an id", addRole, { id: secret, role: "ADMIN" }],
    ["addRole on the body broken by a newline", addRole, { id: `${body.slice(0, 30)}\n${body.slice(30)}`, role: "ADMIN" }],
    ["update on the body as an id", update, { input: { id: body, roles: ["ADMIN"] } }],
    ["update with an unknown input field", update, { input: { id: "x", [body]: 1 } }],
    ["create with the body as a role", create, { input: { name: "n", roles: [body] } }],
    ["create with the body as its expiry", create, { input: { name: "n", roles: ["GUEST"], expiresAt: body } }],
    ["create with the body as its name", create, { input: { name: body, roles: ["GUEST"] } }],
    ["delete of the body as an id", "mutation($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }", { ids: [body] }],
    ["auditLog since the body", "query($s: String) { auditLog(since: $s) { id } }", { s: body }],
  ];

  it.each(requests)("%s", async (_what, query, variables) => {
    const answer = await gql(server.url, query, { key: admin, variables });
    expect(answer.body.errors?.length, JSON.stringify(answer.body)).toBeGreaterThan(0);
    expect(leaks(JSON.stringify(answer.body), body), JSON.stringify(answer.body)).toBeUndefined();
  });

  it("still says what was not found", async () => {
    const answer = await gql(server.url, addRole, { key: admin, variables: { id: body, role: "ADMIN" } });
    expect(answer.body.errors[0]).toMatchObject({ message: "No API key found with id: …", extensions: { code: "NOT_FOUND" } });
  });
});
