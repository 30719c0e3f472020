/**
 * Compiled execution (lib/graphql/compiled.ts) against graphql-js: for a corpus of requests, every key
 * kind, the answer as the service writes it (errors through its formatter) is byte-identical.
 */
import { describe, expect, it } from "vitest";
import { execute, type ExecutionResult, getIntrospectionQuery } from "graphql";
import { COMPILE_AFTER } from "../../lib/graphql/compiled.ts";
import { prepare } from "../../lib/graphql/prepared.ts";
import { createSchema, parseDocument, validateDocument } from "../../lib/graphql/schema.ts";
import { createErrorFormatter } from "../../lib/http/responses.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";

const formatError = createErrorFormatter(() => {});
/** What graphql-http writes for a result (its serializer: errors formatted, Errors reduced to their message). */
const written = (result: ExecutionResult) =>
  JSON.stringify(result.errors ? { ...result, errors: result.errors.map(formatError) } : result, (_k, v) =>
    v instanceof Error && !("extensions" in v) ? { message: v.message } : v);

/** `graphqlJs`: a document graphql-jit would answer differently, left to graphql-js (see `jitAnswersAlike`). */
type Case = { query: string; variables?: Record<string, unknown>; operationName?: string; clean?: boolean; graphqlJs?: true };
const CORPUS: Case[] = [
  { query: "{ me { id name description roles permissions { resource actions } } }" },
  { query: "{ me { id name } info { hostname platform release cpus runtime version memory { total } } }" },
  { query: "{ a: me { id } b: me { name } me { id } me { name roles } __typename }" },
  { query: "{ ...F ... on Query { online } } fragment F on Query { me { name ...G } } fragment G on UserAccount { id roles }" },
  { query: "{ me { id ... @include(if: false) { name } } online @skip(if: true) }", graphqlJs: true },
  { query: "query Q($yes: Boolean!) { me { id name @include(if: $yes) } }", variables: { yes: true }, graphqlJs: true },
  { query: "query Q($yes: Boolean!) { me { id name @include(if: $yes) } }", variables: { yes: false }, graphqlJs: true },
  // graphql-jit 0.8 put `me` first here (where the skipped one stood), graphql-js after `info`
  { query: "{ me @skip(if: true) { id } info { platform } me { name } }", graphqlJs: true },
  { query: "query Q($s: Boolean!) { me { id @skip(if: $s) name roles id } __typename @skip(if: $s) online __typename }", variables: { s: true }, graphqlJs: true },
  { query: "{ ... @include(if: false) { info { platform } } me { name } info { release } }", graphqlJs: true },
  // graphql-jit answered data; graphql-js refuses the null argument
  { query: "query Q($i: Boolean = true) { info { platform } me @include(if: $i) { id } }", variables: { i: null }, graphqlJs: true },
  { query: "query Q($i: Boolean = false) { me { ... @skip(if: $i) { id } name } }", variables: { i: null }, graphqlJs: true },
  // graphql-jit dropped a `__proto__` key, or moved it last
  { query: "{ me { __proto__: id name } info { platform } }", graphqlJs: true },
  { query: "{ __proto__: info { platform } constructor: me { id } hasOwnProperty: info { release } }", graphqlJs: true },
  { query: "{ constructor: me { id } toString: me { name } valueOf: online }" },
  // graphql-jit lost `$__proto__`, and took null for a non-null `$constructor`
  { query: "query Q($__proto__: Int) { auditLog(limit: $__proto__) { action } }", variables: JSON.parse('{"__proto__":1}'), graphqlJs: true },
  { query: "query Q($__proto__: [Role!]) { previewEffectivePermissions(roles: $__proto__) { resource } }", variables: JSON.parse('{"__proto__":["GUEST"]}'), graphqlJs: true },
  { query: "query Q($constructor: Boolean!) { __type(name: \"Role\") { enumValues(includeDeprecated: $constructor) { name } } }", variables: { constructor: null }, graphqlJs: true },
  { query: "query Q($toString: Int!) { auditLog(limit: $toString) { action } }", variables: { toString: null }, graphqlJs: true },
  // graphql-jit passed a null into a non-null list item (the resolver refuses it too, today)
  { query: "query Q($r: Role = ADMIN) { getPermissionsForRoles(roles: [GUEST, $r]) { resource } }", variables: { r: null }, graphqlJs: true },
  { query: "query Q($a: [AuthAction!]!) { previewEffectivePermissions(permissions: [{ resource: INFO, actions: $a }]) { resource } }", variables: { a: ["READ_ANY"] }, graphqlJs: true },
  // graphql-jit ran the rest of a string after its placeholder as JavaScript
  { query: "{ __type(name: \"__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d0)&&(globalThis.JIT_RAN='yes')&&'Role'||(0\") { name } }", graphqlJs: true },
  { query: "{ __type(name: \"\"\"__MAGIC_NAN__x\"\"\") { name } }", graphqlJs: true },
  { query: "{ __MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d: me { id } }", graphqlJs: true },
  { query: "{ apiKeyPossibleRoles apiKeyPossiblePermissions { resource actions } getAvailableAuthActions online }" },
  { query: "query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource actions } }", variables: { r: ["VIEWER"] } },
  { query: "query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", variables: { r: ["NOPE"] } },
  { query: "query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", variables: {} },
  { query: "query Q($r: [Role!]!) { getPermissionsForRoles(roles: $r) { resource } }", variables: { r: "GUEST" } },
  { query: "query Q($r: [Role!], $p: [AddPermissionInput!]) { previewEffectivePermissions(roles: $r, permissions: $p) { resource actions } }", variables: { r: ["GUEST"], p: [{ resource: "INFO", actions: ["READ_ANY"] }] } },
  { query: "query Q($p: [AddPermissionInput!]) { previewEffectivePermissions(permissions: $p) { resource } }", variables: { p: [{ resource: "INFO" }] } },
  { query: "query A { me { id } } query B { online }", operationName: "B" },
  { query: "query A { me { id } } query B { online }", operationName: "A" },
  { query: "{ apiKeys { id name roles createdAt expiresAt lastUsedAt graceUntil key permissions { resource } } me { name } }" },
  { query: "{ apiKey(id: \"nope\") { name } }" },
  { query: "query K($id: PrefixedID!) { apiKey(id: $id) { name } }", variables: { id: "" } },
  { query: "{ auditLog(limit: 0) { action } }" },
  { query: "{ auditLog(since: \"yesterday-ish\") { action } }" },
  { query: "{ auditLog(limit: 5) { at action id name actor { kind user host id name } changed replaced } }" },
  { query: "{ info { hostname } auditLog(limit: 0) { action } me { id } }" },
  { query: "{ __typename __type(name: \"Role\") { name kind enumValues { name } } }" },
  { query: "{ __schema { queryType { name } types { name } } }" },
  { query: getIntrospectionQuery() },
];

describe("compiled execution", () => {
  it("answers byte-identically to graphql-js, errors included, for every key kind", async () => {
    const schema = createSchema();
    const store = createKeyStore();
    const keys = await Promise.all(
      ["ADMIN", "VIEWER", "GUEST"].map((role) => store.create({ name: role.toLowerCase(), roles: [role as "ADMIN"], permissions: [] })),
    );
    await store.create({ name: "other", roles: ["GUEST"], permissions: [], expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    for (const { query, variables, operationName, graphqlJs } of CORPUS) {
      const document = parseDocument(query);
      expect(validateDocument(schema, document), query).toEqual([]);
      for (const created of keys) {
        const key = (await store.verify(created.key))!;
        const args = () => ({ schema, document, variableValues: variables, operationName, contextValue: { key, store } });
        const reference = written(await execute(args()));
        for (let run = 0; run < COMPILE_AFTER + 2; run++) {
          expect(written(await prepare(query, operationName).execute(variables, { key, store })), `${created.name}: ${query}`).toBe(reference);
        }
      }
      expect((globalThis as { JIT_RAN?: string }).JIT_RAN, query).toBeUndefined();
      // Every other query here compiles (so the comparison is of graphql-jit's answers, not graphql-js against itself).
      expect(prepare(query, operationName).compiled, query).toBe(!graphqlJs);
    }
  });
});
