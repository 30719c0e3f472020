// The interactive flows with scripted answers: every question is checked against what the script
// expects, and the store is a real in-memory key store.
import type { PromptOptions } from "consola";
import { PassThrough } from "node:stream";
import { describe, expect, test } from "vitest";
import type { KeyBackend } from "../../lib/cli/commands/apikey.ts";
import { ServiceError } from "../../lib/core/errors.ts";
import { createAsk } from "../../lib/cli/_ask.ts";
import { NAME_RULE, NEED_ROLE_OR_PERMISSION, parseCreateInput } from "../../lib/core/input.ts";
import {
  DELETE_DECLINED_MESSAGE,
  interactiveCreate,
  interactiveDelete,
  NOTHING_SELECTED_MESSAGE,
  type PromptFn,
} from "../../lib/cli/prompts.ts";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";

/** What the person types or picks; a function sees the question and may act before answering. */
type Answer = unknown | ((message: string, options: PromptOptions) => unknown);
/** One expected question: its type, a pattern its message must match, and the answer. */
type Step = [type: PromptOptions["type"], message: RegExp, answer: Answer];

const CANCEL = Symbol.for("cancel");

/** A prompt function that plays a script and fails the test on any question it does not expect. */
function scripted(steps: Step[]) {
  const asked: { message: string; options: PromptOptions }[] = [];
  const prompt: PromptFn = async (message, options) => {
    asked.push({ message, options });
    const step = steps[asked.length - 1];
    if (!step) throw new Error(`Unexpected question #${asked.length}: ${message}`);
    const [type, pattern, answer] = step;
    expect(options.type ?? "text", `type of question #${asked.length}`).toBe(type);
    expect(message, `question #${asked.length}`).toMatch(pattern);
    expect(options.cancel).toBe("symbol");
    return typeof answer === "function" ? answer(message, options) : answer;
  };
  return { prompt, asked, done: () => expect(asked.length, "questions asked").toBe(steps.length) };
}

const NAME: Step[0] = "text";
const name = (answer: Answer): Step => [NAME, /API key name/, answer];
const description = (answer: Answer = ""): Step => ["text", /^Description/, answer];
const roles = (answer: Answer): Step => ["multiselect", /Roles/, answer];
const permissionsHow = (answer: Answer): Step => ["select", /^Permissions/, answer];

async function storeWith(...names: string[]): Promise<KeyStore> {
  const store = createKeyStore();
  for (const n of names) await store.create(parseCreateInput({ name: n, roles: "GUEST", description: `about ${n}` }));
  return store;
}

/** A snapshot of everything a person could notice about the store. */
const snapshot = async (store: KeyStore) => JSON.stringify(await store.list());

async function cancelled(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ServiceError);
  expect((error as ServiceError).code).toBe("CANCELLED");
  expect((error as ServiceError).exitCode).toBe(130);
  return error as ServiceError;
}

describe("interactive create", () => {
  test("asks name, description, roles and permissions, then creates the key and prints its secret", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("deploy key"),
      description("for the CI pipeline"),
      roles(["VIEWER", "ADMIN"]),
      permissionsHow("none"),
    ]);
    const out = await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(out.exitCode).toBe(0);
    const secret = out.stdout!.trim();
    expect(secret).toMatch(/^sapi_/);
    expect(out.notice).toMatch(/Created API key 'deploy key'/);
    const key = await store.verify(secret);
    expect(key).toMatchObject({ name: "deploy key", description: "for the CI pipeline", roles: ["ADMIN", "VIEWER"], permissions: [] });
  });

  test("offers the four roles with their meanings and permissions as none, pick or type", async () => {
    const s = scripted([name("a"), description(), roles(["GUEST"]), permissionsHow("none")]);
    await interactiveCreate({ create: true }, createKeyStore(), { prompt: s.prompt });
    const roleOptions = s.asked[2].options as { options: { value: string; label: string }[] };
    expect(roleOptions.options.map((o) => o.value)).toEqual(["ADMIN", "CONNECT", "VIEWER", "GUEST"]);
    expect(roleOptions.options[0].label).toMatch(/ADMIN\s+Full system access/);
    expect(roleOptions.options[2].label).toMatch(/VIEWER\s+Read-only access/);
    const how = s.asked[3].options as { options: { value: string }[]; initial: string };
    expect(how.options.map((o) => o.value)).toEqual(["none", "pick", "type"]);
    expect(how.initial).toBe("none"); // a role was chosen, so "none" is the likely answer
  });

  test("--json prints the create result object", async () => {
    const store = createKeyStore();
    const s = scripted([name("json key"), description(), roles(["ADMIN"]), permissionsHow("none")]);
    const out = await interactiveCreate({ create: true, json: true }, store, { prompt: s.prompt });
    const body = JSON.parse(out.stdout!);
    expect(Object.keys(body).sort()).toEqual(["id", "key", "name"]);
    expect(body.name).toBe("json key");
    expect((await store.verify(body.key))?.id).toBe(body.id);
    expect(out.notice).toBeUndefined();
  });

  test("an invalid name is asked again with the rule explained", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("deploy-key"),
      [NAME, new RegExp(`^${NAME_RULE.replace(/[()]/g, "\\$&")}\\. Try "deploy key"\\n.*API key name`), "deploy_key"],
      [NAME, /letters, numbers, and spaces.*Try "deploy key"/, "   "],
      [NAME, /API key name is required/, "  Déploiement 2  "],
      description(),
      roles(["GUEST"]),
      permissionsHow("none"),
    ]);
    const out = await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(out.exitCode).toBe(0);
    expect((await store.list()).map((k) => k.name)).toEqual(["Déploiement 2"]);
  });

  test("an existing name asks to overwrite; yes replaces the key and revokes its old secret", async () => {
    const store = createKeyStore();
    const old = await store.create(parseCreateInput({ name: "ci", roles: "GUEST" }));
    const s = scripted([
      name("ci"),
      ["confirm", /already exists.*Replace it\?/, true],
      description(),
      roles(["ADMIN"]),
      permissionsHow("none"),
    ]);
    const out = await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(s.asked[1].options).toMatchObject({ initial: false });
    expect(out.notice).toMatch(/Replaced API key 'ci'/);
    expect(await store.verify(old.key)).toBeNull();
    const now = await store.verify(out.stdout!.trim());
    expect(now).toMatchObject({ name: "ci", roles: ["ADMIN"] });
    expect(now!.id).not.toBe(old.id);
    expect(await store.list()).toHaveLength(1);
  });

  test("an existing name answered no keeps the old key and asks for another name", async () => {
    const store = createKeyStore();
    const old = await store.create(parseCreateInput({ name: "ci", roles: "GUEST" }));
    const s = scripted([
      name("ci"),
      ["confirm", /'ci' already exists/, false],
      [NAME, /Kept the existing key 'ci'\. Choose another name\.\n/, "ci two"],
      description(),
      roles(["VIEWER"]),
      permissionsHow("none"),
    ]);
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(await store.verify(old.key)).toMatchObject({ id: old.id, name: "ci" });
    expect((await store.list()).map((k) => k.name).sort()).toEqual(["ci", "ci two"]);
  });

  test("--overwrite replaces an existing key without asking", async () => {
    const store = createKeyStore();
    const old = await store.create(parseCreateInput({ name: "ci", roles: "GUEST" }));
    const s = scripted([name("ci"), description(), roles(["ADMIN"]), permissionsHow("none")]);
    const out = await interactiveCreate({ create: true, overwrite: true }, store, { prompt: s.prompt });
    s.done();
    expect(out.notice).toMatch(/Replaced/);
    expect(await store.verify(old.key)).toBeNull();
  });

  test("replacing a key says which of its settings the new key does not carry over", async () => {
    const store = createKeyStore();
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    await store.create({ ...parseCreateInput({ name: "ci", roles: "GUEST", description: "nightly" }), expiresAt });
    const s = scripted([name("ci"), ["confirm", /already exists/, true], description(), roles(["GUEST"]), permissionsHow("none")]);
    const out = await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(out.notice!.split("\n")[1]).toMatch(/^Note: the new key does not carry over the expiry \(.+ UTC\) and the description of the key it replaced: .*use --rotate\.$/);
  });

  test("a name given as a flag is not asked; if taken, no at the confirmation fails with NAME_TAKEN", async () => {
    const store = await storeWith("ci");
    const before = await snapshot(store);
    const s = scripted([["confirm", /'ci' already exists/, false]]);
    const error = await interactiveCreate({ create: true, name: "ci" }, store, { prompt: s.prompt }).catch((e) => e);
    expect(error).toMatchObject({ code: "NAME_TAKEN", exitCode: 1 });
    expect(await snapshot(store)).toBe(before);
  });

  test("no role and no permission is asked again until there is one", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("empty"),
      description(),
      roles([]),
      permissionsHow("none"),
      ["multiselect", new RegExp(`^${NEED_ROLE_OR_PERMISSION.replace(/\./g, "\\.")}\\nRoles`), []],
      permissionsHow("pick"),
      ["multiselect", /^Resources/, []],
      ["multiselect", /Roles/, ["GUEST"]],
      permissionsHow("none"),
    ]);
    expect(await store.isEmpty()).toBe(true);
    const out = await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(out.exitCode).toBe(0);
    expect((await store.list())[0]).toMatchObject({ name: "empty", roles: ["GUEST"], permissions: [] });
  });

  test("with no role chosen, picking permissions is the suggested way", async () => {
    const s = scripted([
      name("p"), description(), roles([]),
      permissionsHow("pick"),
      ["multiselect", /^Resources/, ["DOCKER"]],
      ["multiselect", /^Actions on DOCKER/, ["READ_ANY", "UPDATE_ANY"]],
    ]);
    const store = createKeyStore();
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect(s.asked[3].options).toMatchObject({ initial: "pick" });
    const resources = s.asked[4].options as { options: { value: string }[] };
    expect(resources.options).toHaveLength(29);
    expect((await store.list())[0].permissions).toEqual([{ resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] }]);
  });

  test("several resources can share one set of actions", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("shared"), description(), roles([]),
      permissionsHow("pick"),
      ["multiselect", /^Resources/, ["VMS", "DOCKER"]],
      ["select", /^Actions for the 2 resources/, "same"],
      ["multiselect", /^Actions on DOCKER, VMS/, ["READ_ANY"]],
    ]);
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect((await store.list())[0].permissions).toEqual([
      { resource: "DOCKER", actions: ["READ_ANY"] },
      { resource: "VMS", actions: ["READ_ANY"] },
    ]);
  });

  test("several resources can get different actions each", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("each"), description(), roles(["VIEWER"]),
      permissionsHow("pick"),
      ["multiselect", /^Resources/, ["DOCKER", "VMS", "LOGS"]],
      ["select", /^Actions for the 3 resources/, "each"],
      ["multiselect", /^Actions on DOCKER /, ["UPDATE_ANY"]],
      ["multiselect", /^Actions on LOGS /, []],
      ["multiselect", /^Actions on VMS /, ["DELETE_OWN", "CREATE_ANY"]],
    ]);
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect((await store.list())[0]).toMatchObject({
      roles: ["VIEWER"],
      permissions: [
        { resource: "DOCKER", actions: ["UPDATE_ANY"] },
        { resource: "VMS", actions: ["CREATE_ANY", "DELETE_OWN"] },
      ],
    });
  });

  test("typed permissions are validated and asked again with what is wrong", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("typed"), description(), roles([]),
      permissionsHow("type"),
      ["text", /^Permissions, comma-separated/, "docker:read"],
      ["text", /^Unknown permission action "READ"\. Did you mean 'READ_ANY' or 'READ_OWN'\? Valid actions: CREATE_ANY.*\nPermissions/, "DOCKR:READ_ANY"],
      ["text", /^Unknown permission resource "DOCKR"/, "docker"],
      ["text", /^Invalid permission "DOCKER": expected RESOURCE:ACTION/, " docker:read_any , vms:update_any"],
    ]);
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect((await store.list())[0].permissions).toEqual([
      { resource: "DOCKER", actions: ["READ_ANY"] },
      { resource: "VMS", actions: ["UPDATE_ANY"] },
    ]);
  });

  test("an invalid description is asked again; a blank one means none", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("d"),
      description("evil\u001b[2Jtext"),
      ["text", /^Description must not contain control.*\nDescription/, "x".repeat(1001)],
      ["text", /^Description must be at most 1000 characters/, "   "],
      roles(["GUEST"]), permissionsHow("none"),
    ]);
    await interactiveCreate({ create: true }, store, { prompt: s.prompt });
    s.done();
    expect((await store.list())[0].description).toBeUndefined();
  });

  test("flags already given are not asked again", async () => {
    const store = createKeyStore();
    const s = scripted([name("flagged")]);
    await interactiveCreate(
      { create: true, description: "from a flag", roles: "viewer", permissions: "docker:read_any" },
      store,
      { prompt: s.prompt },
    );
    s.done();
    expect((await store.list())[0]).toMatchObject({
      name: "flagged",
      description: "from a flag",
      roles: ["VIEWER"],
      permissions: [{ resource: "DOCKER", actions: ["READ_ANY"] }],
    });
  });

  test("with empty --roles given, only permissions are asked again, with the reason", async () => {
    const store = createKeyStore();
    const s = scripted([
      name("r"), description(),
      permissionsHow("none"),
      ["select", new RegExp(`^${NEED_ROLE_OR_PERMISSION.replace(/\./g, "\\.")}\\nPermissions`), "type"],
      ["text", /^Permissions/, "me:read_any"],
    ]);
    await interactiveCreate({ create: true, roles: "" }, store, { prompt: s.prompt });
    s.done();
    expect((await store.list())[0].permissions).toEqual([{ resource: "ME", actions: ["READ_ANY"] }]);
  });

  test("empty --roles and --permissions fail without asking for them", async () => {
    const store = createKeyStore();
    const s = scripted([name("r"), description()]);
    const error = await interactiveCreate({ create: true, roles: "", permissions: "" }, store, { prompt: s.prompt })
      .catch((e) => e);
    expect(error).toMatchObject({ code: "INVALID_INPUT", message: NEED_ROLE_OR_PERMISSION });
    expect(await store.isEmpty()).toBe(true);
  });

  test.each([
    ["--roles", { roles: "admin,owner" }, /Unknown role "OWNER"/],
    ["--permissions", { permissions: "DOCKER:READ" }, /Unknown permission action "READ"/],
    ["--description", { description: "a\u0007b" }, /control/],
  ])("an invalid %s flag fails before any question", async (_flag, flags, message) => {
    const s = scripted([]);
    const error = await interactiveCreate({ create: true, ...flags }, createKeyStore(), { prompt: s.prompt })
      .catch((e) => e);
    expect(error).toMatchObject({ code: "INVALID_INPUT", exitCode: 2 });
    expect(error.message).toMatch(message);
    expect(s.asked).toHaveLength(0);
  });

  const createSteps: Step[] = [
    name("ci"),
    ["confirm", /already exists/, true],
    description("text"),
    roles(["ADMIN"]),
    permissionsHow("pick"),
    ["multiselect", /^Resources/, ["DOCKER", "VMS"]],
    ["select", /^Actions for the 2/, "each"],
    ["multiselect", /^Actions on DOCKER/, ["READ_ANY"]],
    ["multiselect", /^Actions on VMS/, ["READ_ANY"]],
  ];
  test.each(createSteps.map((step, at) => [at, step[1]] as const))(
    "cancelling at question %i (%s) exits 130 and writes nothing",
    async (at) => {
      const store = await storeWith("ci", "other");
      const before = await snapshot(store);
      const steps = createSteps.slice(0, at + 1).map((step, i): Step => (i === at ? [step[0], step[1], CANCEL] : step));
      const s = scripted(steps);
      const error = await cancelled(interactiveCreate({ create: true }, store, { prompt: s.prompt }));
      expect(error.message).toMatch(/cancelled/i);
      s.done();
      expect(await snapshot(store)).toBe(before);
    },
  );

  test("a prompt that rejects on cancel (consola's reject mode) also exits 130", async () => {
    const prompt: PromptFn = () => {
      const error = new Error("Prompt cancelled.");
      error.name = "ConsolaPromptCancelledError";
      return Promise.reject(error);
    };
    await cancelled(interactiveCreate({ create: true }, createKeyStore(), { prompt }));
  });

  test("any other prompt failure is passed on unchanged", async () => {
    const boom = new Error("stdin closed");
    const error = await interactiveCreate({ create: true }, createKeyStore(), { prompt: () => Promise.reject(boom) })
      .catch((e) => e);
    expect(error).toBe(boom);
  });
});

describe("interactive delete", () => {
  test("shows every key with name, description, id and creation time", async () => {
    const store = await storeWith("alpha", "beta key");
    const keys = await store.list();
    const s = scripted([["multiselect", /^API keys to delete/, []]]);
    await interactiveDelete({ delete: true }, store, { prompt: s.prompt, columns: 200 });
    const { options } = s.asked[0].options as { options: { value: string; label: string }[] };
    expect(options.map((o) => o.value)).toEqual(keys.map((k) => k.id));
    for (const [i, key] of keys.entries()) {
      expect(options[i].label).toContain(key.name);
      expect(options[i].label).toContain(key.id);
      expect(options[i].label).toContain(`about ${key.name}`);
      expect(options[i].label).toContain(key.createdAt.slice(0, 10));
    }
    // Names are padded so the ids line up.
    expect(options[0].label.indexOf(keys[0].id)).toBe(options[1].label.indexOf(keys[1].id));
  });

  test("a description that does not fit beside the key is also its hint (the prompt cuts rows at the edge)", async () => {
    const store = createKeyStore();
    const description = "word ".repeat(20).trim();
    await store.create(parseCreateInput({ name: "k", roles: "GUEST", description }));
    const wide = scripted([["multiselect", /^API keys/, []]]);
    await interactiveDelete({ delete: true }, store, { prompt: wide.prompt, columns: 200 });
    const [fits] = (wide.asked[0].options as { options: { label: string; hint?: string }[] }).options;
    expect(fits.label).toMatch(new RegExp(`  ${description}$`));
    expect(fits.hint).toBeUndefined();

    const narrow = scripted([["multiselect", /^API keys/, []]]);
    await interactiveDelete({ delete: true }, store, { prompt: narrow.prompt, columns: 80 });
    const [hinted] = (narrow.asked[0].options as { options: { label: string; hint?: string }[] }).options;
    expect(hinted.label).toMatch(new RegExp(`  ${description}$`));
    expect(hinted.hint).toBe(description);
  });

  test("deletes the one selected key of two after confirmation", async () => {
    const store = await storeWith("alpha", "beta");
    const [alpha, beta] = await store.list();
    const s = scripted([
      ["multiselect", /^API keys to delete/, [beta.id]],
      ["confirm", /^Delete 1 API key \('beta'\)\? Its secret stops working at once\.$/, true],
    ]);
    const out = await interactiveDelete({ delete: true }, store, { prompt: s.prompt });
    s.done();
    expect(s.asked[1].options).toMatchObject({ initial: false });
    expect(out).toEqual({ stdout: "Successfully deleted 1 API key\n", exitCode: 0 });
    expect((await store.list()).map((k) => k.id)).toEqual([alpha.id]);
  });

  test("deletes several keys and reports them as the non-interactive delete does (--json)", async () => {
    const store = await storeWith("a", "b", "c", "d");
    const keys = await store.list();
    const s = scripted([
      ["multiselect", /^API keys to delete/, [keys[3].id, keys[0].id, keys[1].id, keys[2].id]],
      ["confirm", /^Delete 4 API keys\? /, true],
    ]);
    const out = await interactiveDelete({ delete: true, json: true }, store, { prompt: s.prompt });
    expect(out.exitCode).toBe(0);
    expect(JSON.parse(out.stdout!)).toEqual({ deleted: 4, keys: keys.map(({ id, name }) => ({ id, name })) });
    expect(await store.isEmpty()).toBe(true);
  });

  test("two keys selected in plain text: 'Successfully deleted 2 API keys'", async () => {
    const store = await storeWith("a", "b", "c");
    const keys = await store.list();
    const s = scripted([
      ["multiselect", /^API keys/, [keys[0].id, keys[2].id]],
      ["confirm", /^Delete 2 API keys \('a', 'c'\)\? Their secrets stop working at once\.$/, true],
    ]);
    const out = await interactiveDelete({ delete: true }, store, { prompt: s.prompt });
    expect(out.stdout).toBe("Successfully deleted 2 API keys\n");
    expect((await store.list()).map((k) => k.name)).toEqual(["b"]);
  });

  test("no at the confirmation deletes nothing and says so (exit 0)", async () => {
    const store = await storeWith("a", "b");
    const before = await snapshot(store);
    const keys = await store.list();
    const s = scripted([["multiselect", /^API keys/, [keys[0].id]], ["confirm", /^Delete 1 API key/, false]]);
    const out = await interactiveDelete({ delete: true }, store, { prompt: s.prompt });
    expect(out).toEqual({ notice: DELETE_DECLINED_MESSAGE, exitCode: 0 });
    expect(await snapshot(store)).toBe(before);
  });

  test("nothing selected deletes nothing, asks no confirmation and says so (exit 0)", async () => {
    const store = await storeWith("a", "b");
    const before = await snapshot(store);
    const s = scripted([["multiselect", /^API keys/, []]]);
    const plain = await interactiveDelete({ delete: true }, store, { prompt: s.prompt });
    s.done();
    expect(plain).toEqual({ notice: NOTHING_SELECTED_MESSAGE, exitCode: 0 });
    const j = scripted([["multiselect", /^API keys/, []]]);
    const json = await interactiveDelete({ delete: true, json: true }, store, { prompt: j.prompt });
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout!)).toEqual({ deleted: 0, keys: [], message: NOTHING_SELECTED_MESSAGE });
    expect(await snapshot(store)).toBe(before);
  });

  test("an empty store gives the 'No API keys found to delete' result without asking", async () => {
    const s = scripted([]);
    const plain = await interactiveDelete({ delete: true }, createKeyStore(), { prompt: s.prompt });
    expect(plain).toEqual({ notice: "No API keys found to delete", exitCode: 1 });
    const json = await interactiveDelete({ delete: true, json: true }, createKeyStore(), { prompt: s.prompt });
    expect(JSON.parse(json.stdout!)).toEqual({ deleted: 0, message: "No API keys found to delete", code: "NO_KEYS" });
    expect(json.exitCode).toBe(1);
    expect(s.asked).toHaveLength(0);
  });

  test.each([0, 1])("cancelling at question %i exits 130 and deletes nothing", async (at) => {
    const store = await storeWith("a", "b");
    const before = await snapshot(store);
    const keys = await store.list();
    const steps: Step[] = [["multiselect", /^API keys/, [keys[0].id]], ["confirm", /^Delete/, true]];
    steps[at] = [steps[at][0], steps[at][1], CANCEL];
    const s = scripted(steps.slice(0, at + 1));
    await cancelled(interactiveDelete({ delete: true }, store, { prompt: s.prompt }));
    expect(await snapshot(store)).toBe(before);
  });

  test("a key replaced while the person was choosing is not deleted in its place", async () => {
    const store = await storeWith("ci");
    const [shown] = await store.list();
    let newer = "";
    const s = scripted([
      ["multiselect", /^API keys/, [shown.id]],
      ["confirm", /^Delete 1 API key/, async () => {
        newer = (await store.create(parseCreateInput({ name: "ci", roles: "ADMIN" }), { overwrite: true })).id;
        return true;
      }],
    ]);
    const out = await interactiveDelete({ delete: true }, store, { prompt: s.prompt });
    expect(out).toEqual({ notice: "No API keys found to delete", exitCode: 1 });
    expect((await store.list()).map((k) => k.id)).toEqual([newer]);
  });

  test("works over a backend without delete-by-id (a remote store), still deleting only the shown key", async () => {
    const local = await storeWith("a", "b");
    const backend: KeyBackend = {
      create: local.create,
      deleteByName: local.deleteByName,
      list: local.list,
      isEmpty: local.isEmpty,
      getByName: local.getByName,
    };
    const keys = await local.list();
    const s = scripted([["multiselect", /^API keys/, [keys[1].id]], ["confirm", /^Delete 1/, true]]);
    const out = await interactiveDelete({ delete: true, json: true }, backend, { prompt: s.prompt });
    expect(JSON.parse(out.stdout!)).toEqual({ deleted: 1, keys: [{ id: keys[1].id, name: "b" }] });

    // Replaced between the list and the delete: the newer key of that name survives.
    const [a] = await local.list();
    const r = scripted([
      ["multiselect", /^API keys/, [a.id]],
      ["confirm", /^Delete 1/, async () => {
        await local.create(parseCreateInput({ name: "a", roles: "ADMIN" }), { overwrite: true });
        return true;
      }],
    ]);
    const raced = await interactiveDelete({ delete: true }, backend, { prompt: r.prompt });
    expect(raced.exitCode).toBe(1);
    expect(await local.getByName("a")).not.toBeNull();
  });
});

describe("end of input at a question", () => {
  test("input ending while a question is open cancels it (CANCELLED), instead of waiting forever", async () => {
    for (const end of ["end", "pause", "destroy"] as const) {
      const input = new PassThrough();
      input.resume();
      const ask = createAsk(() => new Promise(() => {}), { input });
      const answer = ask.text("Name?");
      if (end === "end") input.end();
      else if (end === "pause") input.pause(); // what Ctrl-D does: readline closes and pauses its input
      else input.destroy();
      await expect(answer, end).rejects.toMatchObject({ code: "CANCELLED" });
    }
  });

  test("a prompt that pauses its input as it answers is answered, not cancelled", async () => {
    const input = new PassThrough();
    input.resume();
    const ask = createAsk(async () => {
      input.pause();
      return "typed";
    }, { input });
    expect(await ask.text("Name?")).toBe("typed");
    expect(await ask.confirm("Sure?", false)).toBe(false);
  });
});
