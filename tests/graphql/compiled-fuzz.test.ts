/**
 * Differential fuzzing of compiled execution (lib/graphql/compiled.ts, graphql-jit) against graphql-js:
 * random VALID query documents over the service's schema (fields, subfields, aliases — repeated,
 * equal to other field names, JS-special names —, named/inline/nested/repeated fragments,
 * `__typename`, `__type`/`__schema`, literal and variable arguments with defaults, nulls, omissions,
 * list coercion, enums, input objects, big ints, unicode; several operations and operationName),
 * run by keys of several roles (so some fields are FORBIDDEN). For every document that validates,
 * the answer written after each of COMPILE_AFTER + 2 compiled runs must equal graphql-js's, byte for byte.
 *
 * Volatile fields (`Info.uptime`, `InfoMemory.free`) are never selected, and `auditLog(since:)` only
 * gets durations/instants far from "now" so its answer cannot change while the test runs.
 *
 * FUZZ_RUNS (default 2000, about 15 s) and FUZZ_SEED (default 23, so that a run is repeatable) tune the property; divergences are collected and
 * printed (shortest first) before failing. FUZZ_WHY=1 prints why generated documents failed validation;
 * FUZZ_NO_MAGIC=1 leaves graphql-jit's placeholder strings out of the string pools. What it found (a
 * string that ran as code, variables named like Object.prototype members) is left to graphql-js by
 * `jitAnswersAlike` (lib/graphql/compiled.ts), each case minimized in tests/graphql/compiled.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { execute, type ExecutionArgs, type ExecutionResult } from "graphql";
import { COMPILE_AFTER } from "../../lib/graphql/compiled.ts";
import { prepare } from "../../lib/graphql/prepared.ts";
import { createSchema, parseDocument, validateDocument } from "../../lib/graphql/schema.ts";
import { createErrorFormatter } from "../../lib/http/responses.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";

const formatError = createErrorFormatter(() => {});
/** What graphql-http writes for a result (as in tests/graphql/compiled.test.ts). */
const written = (result: ExecutionResult) =>
  JSON.stringify(result.errors ? { ...result, errors: result.errors.map(formatError) } : result, (_k, v) =>
    v instanceof Error && !("extensions" in v) ? { message: v.message } : v);

async function answer(run: () => ExecutionResult | Promise<ExecutionResult>): Promise<string> {
  try {
    return written(await run());
  } catch (error) {
    return `THROWN: ${error instanceof Error ? error.message : String(error)}`;
  }
}

// ---------------------------------------------------------------------------------------------------
// The schema, as the generator sees it. `f` = field name, `t` = its type's name (object or leaf),
// `args` = argument kinds. Volatile fields (uptime, memory.free) are left out on purpose.
// ---------------------------------------------------------------------------------------------------
type ArgKind = "id" | "rolesNN" | "roles" | "perms" | "since" | "limit" | "typeName" | "deprecated";
type FieldDef = { f: string; t?: string; args?: Partial<Record<string, ArgKind>> };

const TYPES: Record<string, FieldDef[]> = {
  Query: [
    { f: "apiKeys", t: "ApiKey" },
    { f: "apiKey", t: "ApiKey", args: { id: "id" } },
    { f: "apiKeyPossibleRoles" },
    { f: "apiKeyPossiblePermissions", t: "Permission" },
    { f: "getPermissionsForRoles", t: "Permission", args: { roles: "rolesNN" } },
    { f: "previewEffectivePermissions", t: "Permission", args: { roles: "roles", permissions: "perms" } },
    { f: "getAvailableAuthActions" },
    { f: "me", t: "UserAccount" },
    { f: "online" },
    { f: "info", t: "Info" },
    { f: "auditLog", t: "AuditEvent", args: { since: "since", limit: "limit" } },
    { f: "__type", t: "__Type", args: { name: "typeName" } },
    { f: "__schema", t: "__Schema" },
  ],
  ApiKey: ["id", "name", "description", "roles", "createdAt", "key", "expiresAt", "lastUsedAt", "graceUntil"]
    .map((f) => ({ f } as FieldDef)).concat([{ f: "permissions", t: "Permission" }]),
  Permission: [{ f: "resource" }, { f: "actions" }],
  AuditActor: ["kind", "user", "host", "id", "name"].map((f) => ({ f })),
  AuditEvent: ["at", "action", "id", "name", "changed", "replaced"].map((f) => ({ f } as FieldDef)).concat([{ f: "actor", t: "AuditActor" }]),
  UserAccount: ["id", "name", "description", "roles"].map((f) => ({ f } as FieldDef)).concat([{ f: "permissions", t: "Permission" }]),
  Info: ["hostname", "platform", "release", "cpus", "runtime", "version"].map((f) => ({ f } as FieldDef)).concat([{ f: "memory", t: "InfoMemory" }]),
  InfoMemory: [{ f: "total" }],
  __Schema: [
    { f: "description" },
    { f: "queryType", t: "__Type" },
    { f: "mutationType", t: "__Type" },
    { f: "subscriptionType", t: "__Type" },
    { f: "types", t: "__Type" },
    { f: "directives", t: "__Directive" },
  ],
  __Type: [
    { f: "kind" },
    { f: "name" },
    { f: "description" },
    { f: "specifiedByURL" },
    { f: "fields", t: "__Field", args: { includeDeprecated: "deprecated" } },
    { f: "enumValues", t: "__EnumValue", args: { includeDeprecated: "deprecated" } },
    { f: "inputFields", t: "__InputValue", args: { includeDeprecated: "deprecated" } },
    { f: "ofType", t: "__Type" },
    { f: "interfaces", t: "__Type" },
    { f: "possibleTypes", t: "__Type" },
  ],
  __Field: [
    { f: "name" },
    { f: "description" },
    { f: "isDeprecated" },
    { f: "deprecationReason" },
    { f: "type", t: "__Type" },
    { f: "args", t: "__InputValue", args: { includeDeprecated: "deprecated" } },
  ],
  __InputValue: [{ f: "name" }, { f: "description" }, { f: "defaultValue" }, { f: "isDeprecated" }, { f: "type", t: "__Type" }],
  __EnumValue: [{ f: "name" }, { f: "description" }, { f: "isDeprecated" }, { f: "deprecationReason" }],
  __Directive: [{ f: "name" }, { f: "description" }, { f: "locations" }, { f: "isRepeatable" }, { f: "args", t: "__InputValue" }],
};

const ROLE_NAMES = ["ADMIN", "CONNECT", "VIEWER", "GUEST"];
const RESOURCE_NAMES = ["API_KEY", "INFO", "ME", "ONLINE", "PERMISSION", "DOCKER", "VMS"];
const ACTION_NAMES = ["READ_ANY", "READ_OWN", "CREATE_ANY", "UPDATE_OWN", "DELETE_ANY"];
/** Response keys: repeated, equal to field names, JS-special. (`__proto__` is excluded by jitAnswersAlike.) */
const ALIASES = [
  "a", "b", "c", "me", "id", "name", "online", "roles", "info", "key", "apiKeys", "__typename",
  "constructor", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "__defineGetter__",
  "__lookupGetter__", "propertyIsEnumerable", "toLocaleString", "then", "length", "prototype", "__proto__",
  // graphql-jit names resolve infos by the response path joined with "_": make some collide.
  "a_b", "b_c", "a_me", "me_id", "_", "__",
];
const VAR_NAMES = ["v", "w", "constructor", "toString", "hasOwnProperty", "valueOf", "__proto__", "then", "input", "coerced", "errors"];
/** graphql-jit's magic placeholders (objectStringify), and other awkward strings. */
const MAGIC = process.env.FUZZ_NO_MAGIC
  ? ["nan", "inf", "date"]
  : ["__MAGIC_NAN__57f286b9_4c20_487f_b409_79804ddcb4f8", "__MAGIC_PLUS_INFINITY__bb201c39_3333_4695_b4ad_7f1722e7aa7a", "__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d"];
const TYPE_NAMES = ["Role", "Query", "ApiKey", "AddPermissionInput", "PrefixedID", "__Type", "__Schema", "String", "Nope", "constructor", "__proto__", "toString", "", "Rôle", MAGIC[0], `${MAGIC[2]}0)&&'Role'||(0`];
const SINCE = ["30m", "12h", "7d", "2000-01-01T00:00:00Z", "2999-01-01T00:00:00Z", "yesterday-ish", "", "日本", "\u{1F600}", "\\\"", MAGIC[0], MAGIC[1], `${MAGIC[2]}0`];
const INTS = [0, 1, 2, 3, 5, 1000, 10000, 10001, -1, 2147483647, -2147483648];

// ---------------------------------------------------------------------------------------------------
// A small deterministic generator, driven by a fast-check seed (documents are printed as text).
// ---------------------------------------------------------------------------------------------------
type Rng = () => number;
function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Var = { name: string; type: string; def?: string; value?: unknown; omitted: boolean };
type Gen = {
  rnd: Rng;
  ids: string[];
  vars: Map<string, Var>;
  fragments: Map<string, { on: string; body: string }>;
  fragmentCount: number;
  allowDirectives: boolean;
};

const pick = <T>(g: Gen, xs: readonly T[]): T => xs[Math.floor(g.rnd() * xs.length)];
const chance = (g: Gen, p: number) => g.rnd() < p;
const str = (s: string) => JSON.stringify(s);

/** A variable of `type` (reusing a name when it has that type already): returns `$name`. */
function variable(g: Gen, type: string, values: unknown[], defaults: (string | undefined)[]): string {
  const name = chance(g, 0.5) ? pick(g, VAR_NAMES) : `v${g.vars.size}`;
  const known = g.vars.get(name);
  if (known) {
    if (known.type === type) return `$${name}`;
    return variable(g, type, values, defaults); // try another name
  }
  const def = pick(g, defaults);
  const omitted = chance(g, 0.25);
  g.vars.set(name, { name, type, def, value: omitted ? undefined : pick(g, values), omitted });
  return `$${name}`;
}

const roleLiteral = (g: Gen) => (chance(g, 0.9) ? pick(g, ROLE_NAMES) : "NOPE");
const enumList = (g: Gen, one: () => string) =>
  chance(g, 0.3) ? one() : `[${Array.from({ length: Math.floor(g.rnd() * 4) }, one).join(", ")}]`;

function permLiteral(g: Gen): string {
  const parts: string[] = [];
  if (chance(g, 0.95)) {
    parts.push(`resource: ${chance(g, 0.15) ? variable(g, pick(g, ["Resource!", "Resource"]), ["INFO", "ME", null, "NOPE"], [undefined, "API_KEY"]) : pick(g, RESOURCE_NAMES)}`);
  }
  if (chance(g, 0.95)) {
    parts.push(`actions: ${chance(g, 0.15) ? variable(g, pick(g, ["[AuthAction!]!", "[AuthAction!]", "AuthAction!"]), [["READ_ANY"], "READ_OWN", [], null], [undefined, "[READ_ANY]"]) : enumList(g, () => pick(g, ACTION_NAMES))}`);
  }
  if (chance(g, 0.5)) parts.reverse();
  return `{${parts.join(", ")}}`;
}

const permValue = (g: Gen): unknown => {
  const v: Record<string, unknown> = {};
  if (chance(g, 0.9)) v.resource = chance(g, 0.9) ? pick(g, RESOURCE_NAMES) : pick(g, ["NOPE", null, 1]);
  if (chance(g, 0.9)) v.actions = chance(g, 0.5) ? [pick(g, ACTION_NAMES), pick(g, ACTION_NAMES)] : pick(g, [...ACTION_NAMES, null, [], [null]]);
  if (chance(g, 0.1)) v[pick(g, ["extra", "__proto__", "constructor"])] = pick(g, [1, null, "INFO"]);
  return v;
};

function argValue(g: Gen, kind: ArgKind): string {
  const useVar = chance(g, 0.45);
  switch (kind) {
    case "id": {
      const values = [...g.ids, "nope", "", "é\u{1F600}", 1, null];
      if (useVar) return variable(g, pick(g, ["PrefixedID!", "PrefixedID", "String!"]), values, [undefined, undefined, str(pick(g, g.ids))]);
      return str(pick(g, [...g.ids, "nope", "x".repeat(5), "ü\u{1F600}\\n", MAGIC[0], `${MAGIC[2]}1`]));
    }
    case "rolesNN":
    case "roles": {
      const values = [["ADMIN"], "VIEWER", ["GUEST", "VIEWER"], [], null, ["NOPE"], [null], "ADMIN", ["CONNECT", "CONNECT"]];
      if (useVar) {
        if (chance(g, 0.2)) return `[${roleLiteral(g)}, ${variable(g, pick(g, ["Role!", "Role"]), ["ADMIN", null, "NOPE"], [undefined, "GUEST"])}]`;
        return variable(g, pick(g, ["[Role!]!", "[Role!]", "[Role]", "Role!", "[Role!]"]), values, [undefined, "[GUEST]", "VIEWER", "[]", "null"]);
      }
      return chance(g, 0.05) && kind === "roles" ? "null" : enumList(g, () => roleLiteral(g));
    }
    case "perms": {
      if (useVar) {
        const values = [[permValue(g)], permValue(g), [permValue(g), permValue(g)], null, []];
        return variable(g, pick(g, ["[AddPermissionInput!]", "[AddPermissionInput!]!", "AddPermissionInput!", "[AddPermissionInput]"]), values, [undefined, "{resource: INFO, actions: READ_ANY}", "[]", "null"]);
      }
      if (chance(g, 0.05)) return "null";
      return chance(g, 0.3) ? permLiteral(g) : `[${Array.from({ length: Math.floor(g.rnd() * 3) }, () => permLiteral(g)).join(", ")}]`;
    }
    case "since":
      if (useVar) return variable(g, pick(g, ["String", "String!"]), [...SINCE, null, 5], [undefined, str("7d"), "null"]);
      return chance(g, 0.05) ? "null" : str(pick(g, SINCE));
    case "limit":
      if (useVar) return variable(g, pick(g, ["Int", "Int!"]), [...INTS, 2147483648, -2147483649, 2.5, "3", null, 1e3, true], [undefined, "2", "null", "2147483647"]);
      return chance(g, 0.05) ? "null" : String(pick(g, INTS));
    case "typeName":
      if (useVar) return variable(g, pick(g, ["String!", "String"]), [...TYPE_NAMES, null, 1], [undefined, str("Role")]);
      return str(pick(g, TYPE_NAMES));
    case "deprecated":
      if (useVar) return variable(g, pick(g, ["Boolean", "Boolean!"]), [true, false, null, "true", 1], [undefined, "true", "false", "null"]);
      return pick(g, ["true", "false", "null"]);
  }
}

function fieldArgs(g: Gen, def: FieldDef): string {
  if (!def.args) return "";
  const parts: string[] = [];
  for (const [name, kind] of Object.entries(def.args)) {
    const required = kind === "id" || kind === "rolesNN" || kind === "typeName";
    if (required || chance(g, 0.6)) parts.push(`${name}: ${argValue(g, kind!)}`);
  }
  if (chance(g, 0.5)) parts.reverse();
  return parts.length ? `(${parts.join(", ")})` : "";
}

function directive(g: Gen): string {
  if (!g.allowDirectives || !chance(g, 0.03)) return "";
  return ` @${pick(g, ["skip", "include"])}(if: ${pick(g, ["true", "false"])})`;
}

function selectionSet(g: Gen, type: string, depth: number): string {
  const count = 1 + Math.floor(g.rnd() * (depth === 0 ? 5 : 3));
  const items: string[] = [];
  for (let i = 0; i < count; i++) items.push(selection(g, type, depth));
  return `{ ${items.join(" ")} }`;
}

function selection(g: Gen, type: string, depth: number): string {
  const r = g.rnd();
  const deep = depth >= (type.startsWith("__") ? 4 : 3);
  if (r < 0.08) return `${chance(g, 0.3) ? `${pick(g, ALIASES)}: ` : ""}__typename${directive(g)}`;
  if (r < 0.16 && !deep) {
    return `...${chance(g, 0.6) ? ` on ${type}` : ""}${directive(g)} ${selectionSet(g, type, depth + 1)}`;
  }
  if (r < 0.26 && !deep) {
    const existing = [...g.fragments.entries()].filter(([, f]) => f.on === type);
    if (existing.length && chance(g, 0.5)) return `...${pick(g, existing)[0]}`;
    if (g.fragmentCount >= 6) return `__typename`;
    const name = chance(g, 0.15) ? pick(g, ["constructor", "toString", "__proto__", "hasOwnProperty"]) + g.fragmentCount : `F${g.fragmentCount}`;
    g.fragmentCount++;
    const body = selectionSet(g, type, depth + 1);
    g.fragments.set(name, { on: type, body });
    return `...${name}${directive(g)}`;
  }
  const fields = TYPES[type].filter((d) => !(deep && d.t));
  if (!fields.length) return "__typename";
  const def = pick(g, fields);
  const alias = chance(g, 0.3) ? `${pick(g, ALIASES)}: ` : "";
  const sub = def.t ? ` ${selectionSet(g, def.t, depth + 1)}` : "";
  return `${alias}${def.f}${fieldArgs(g, def)}${directive(g)}${sub}`;
}

type Doc = { query: string; variables?: Record<string, unknown>; operationName?: string };

function generate(seed: number, ids: string[]): Doc {
  const g: Gen = { rnd: mulberry32(seed), ids, vars: new Map(), fragments: new Map(), fragmentCount: 0, allowDirectives: false };
  g.allowDirectives = chance(g, 0.1);
  const opCount = chance(g, 0.8) ? 1 : 2 + Math.floor(g.rnd() * 2);
  const ops: string[] = [];
  const values: Record<string, unknown> = {};
  const names: string[] = [];
  for (let i = 0; i < opCount; i++) {
    g.vars = new Map();
    const body = selectionSet(g, "Query", 0);
    const defs = [...g.vars.values()];
    for (const v of defs) if (!v.omitted) values[v.name] = v.value;
    const varText = defs.length ? `(${defs.map((v) => `$${v.name}: ${v.type}${v.def ? ` = ${v.def}` : ""}`).join(", ")})` : "";
    const name = opCount === 1 && !defs.length && chance(g, 0.5) ? "" : pick(g, ["Q", "A", "B", "constructor", "__proto__", "toString"]) + (opCount > 1 ? i : "");
    names.push(name);
    ops.push(name ? `query ${name}${varText} ${body}` : body);
  }
  const frags = [...g.fragments.entries()].map(([name, f]) => `fragment ${name} on ${f.on} ${f.body}`);
  const all = [...ops, ...frags];
  // Shuffle definitions now and then: fragments before operations.
  if (chance(g, 0.2)) all.reverse();
  if (chance(g, 0.1)) values.undeclared = { any: "thing" };
  const operationName = opCount > 1 ? pick(g, names) : chance(g, 0.2) && names[0] ? names[0] : undefined;
  // Variables travel as JSON, as a client sends them (own `__proto__` keys included).
  const variables = Object.keys(values).length || chance(g, 0.5) ? JSON.parse(JSON.stringify(values)) : undefined;
  return { query: all.join("\n"), variables, operationName };
}

// ---------------------------------------------------------------------------------------------------

async function seededStore() {
  const store = createKeyStore();
  const day = 86_400_000;
  const admin = await store.create({ name: "admin", roles: ["ADMIN"], permissions: [], description: "the admin ✓" });
  const viewer = await store.create({ name: "viewer", roles: ["VIEWER"], permissions: [], expiresAt: new Date(Date.now() + 30 * day).toISOString() });
  const guest = await store.create({ name: "guest", roles: ["GUEST"], permissions: [] });
  const connect = await store.create({ name: "connect", roles: ["CONNECT"], permissions: [{ resource: "INFO", actions: ["READ_ANY"] }] });
  const custom = await store.create({
    name: "custom",
    roles: [],
    permissions: [
      { resource: "API_KEY", actions: ["READ_OWN"] },
      { resource: "ME", actions: ["READ_OWN"] },
      { resource: "PERMISSION", actions: ["READ_ANY"] },
    ],
    expiresAt: new Date(Date.now() + 3 * day).toISOString(),
  });
  const other = await store.create({ name: "other", roles: ["GUEST", "VIEWER"], permissions: [] });
  await store.update(other.id, { description: "changed", roles: ["VIEWER"] }, { actor: { kind: "key", id: admin.id, name: "admin" } });
  await store.create({ name: "other", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: 3_600_000 });
  const doomed = await store.create({ name: "doomed", roles: ["GUEST"], permissions: [] });
  await store.deleteById(doomed.id);
  const keys = [];
  for (const created of [admin, viewer, guest, connect, custom]) keys.push({ name: created.name, key: (await store.verify(created.key))! });
  return { store, keys, ids: [admin.id, viewer.id, custom.id, other.id, doomed.id] };
}

type Divergence = { doc: Doc; key: string; run: number; expected: string; actual: string; compiled: boolean };

describe("compiled execution, fuzzed against graphql-js", () => {
  it("answers byte-identically for about a thousand random valid documents (fixed seed; FUZZ_SEED for others)", async () => {
    const schema = createSchema();
    const { store, keys, ids } = await seededStore();
    const divergences: Divergence[] = [];
    let valid = 0, invalid = 0, compiledDocs = 0;
    const covered = { withErrors: 0, withVariables: 0, withFragments: 0, multiOperation: 0, introspection: 0, directives: 0 };
    const seen = new Set<string>();
    const reasons = new Map<string, number>();

    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), async (seed) => {
        const doc = generate(seed, ids);
        // Same text, same cached document (and compiled state): judge each text once.
        const id = `${doc.query}\u0000${JSON.stringify(doc.variables)}\u0000${doc.operationName}`;
        if (seen.has(id)) return;
        seen.add(id);
        let document;
        try {
          document = parseDocument(doc.query);
        } catch {
          invalid++;
          return;
        }
        const problems = validateDocument(schema, document);
        if (problems.length > 0) {
          invalid++;
          if (process.env.FUZZ_WHY) reasons.set(problems[0].message.replace(/"[^"]*"/g, '"…"'), (reasons.get(problems[0].message.replace(/"[^"]*"/g, '"…"')) ?? 0) + 1);
          return;
        }
        valid++;
        for (const { name, key } of keys) {
          const args = (): ExecutionArgs => ({ schema, document, variableValues: doc.variables, operationName: doc.operationName, contextValue: { key, store } });
          const expected = await answer(() => execute(args()));
          if (name === "guest" && expected.includes('"errors"')) covered.withErrors++;
          for (let run = 0; run < COMPILE_AFTER + 2; run++) {
            const actual = await answer(() => prepare(doc.query, doc.operationName).execute(doc.variables, { key, store }));
            if (actual !== expected) {
              const compiled = prepare(doc.query, doc.operationName).compiled;
              divergences.push({ doc, key: name, run, expected, actual, compiled });
              break;
            }
          }
        }
        if (prepare(doc.query, doc.operationName).compiled) compiledDocs++;
        if (/\$/.test(doc.query)) covered.withVariables++;
        if (/fragment /.test(doc.query)) covered.withFragments++;
        if (/query [^]*query /.test(doc.query)) covered.multiOperation++;
        if (/__schema|__type\(/.test(doc.query)) covered.introspection++;
        if (/@(skip|include)/.test(doc.query)) covered.directives++;
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 2000), seed: Number(process.env.FUZZ_SEED ?? 23) },
    );

    if (process.env.FUZZ_WHY) console.log([...reasons].sort((a, b) => b[1] - a[1]).slice(0, 15));
    const shown = [...divergences].sort((a, b) => a.doc.query.length - b.doc.query.length).slice(0, 15);
    console.log(`documents: ${valid} valid (${compiledDocs} compiled), ${invalid} invalid skipped; divergences: ${divergences.length}`, covered);
    for (const d of shown) {
      console.log(JSON.stringify({ key: d.key, run: d.run, compiled: d.compiled, ...d.doc }, null, 1), `\n expected: ${d.expected.slice(0, 600)}\n actual:   ${d.actual.slice(0, 600)}`);
    }
    expect(valid).toBeGreaterThan(Number(process.env.FUZZ_RUNS ?? 2000) / 4);
    expect(divergences.map((d) => `${d.key}: ${d.doc.query} ${JSON.stringify(d.doc.variables)}`)).toEqual([]);
  }, 600_000);
});
