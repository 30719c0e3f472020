/**
 * The GraphQL schema: its SDL, assembled from its parts, the PrefixedID scalar, and each field's rule
 * attached as its resolver. The API-key part matches the reference service's schema (field, argument
 * and input names), so clients written for it work unchanged. The parts: the keys' types and inputs in
 * `api-key-sdl.ts`, the audit trail in `audit-log.ts`, the host facts in `info.ts`, use and credits in
 * `usage.ts` and `credits.ts`; the rules in `query-fields.ts` and `mutation-fields.ts` (checked by
 * `field-rule.ts`); parsing and validation in `documents.ts`, and the key-only analysis in
 * `key-only.ts`. This module re-exports what the service and the library use from them.
 */
import { buildSchema, type GraphQLFieldResolver, GraphQLError, GraphQLObjectType, GraphQLScalarType, type GraphQLSchema, Kind } from "graphql";
import { API_KEY_INPUTS_SDL, API_KEY_SDL, USER_ACCOUNT_SDL } from "./api-key-sdl.ts";
import { AUDIT_SDL } from "./audit-log.ts";
import { authorize, type GraphQLContext, type Rule } from "./field-rule.ts";
import { QUERY } from "./query-fields.ts";
import { API_KEY_MUTATIONS } from "./mutation-fields.ts";
import { INFO_FIELDS, INFO_SDL } from "./info.ts";
import { API_KEY_USAGE_FIELDS, USAGE_SDL } from "./usage.ts";
import { cursorOf } from "../core/paging.ts";
import { WEBHOOK_MUTATIONS, WEBHOOK_QUERY, WEBHOOK_QUERY_SDL, WEBHOOK_SDL } from "./webhooks.ts";

export type { GraphQLContext } from "./field-rule.ts";
export { DOCUMENT_LIMITS, parseDocument, validateDocument } from "./documents.ts";
export { dependsOnKeyOnly } from "./key-only.ts";

// The parts in the order clients have always seen the types (introspection lists them in this order).
const SDL = /* GraphQL */ `${API_KEY_SDL}${AUDIT_SDL}${USER_ACCOUNT_SDL}${INFO_SDL}${API_KEY_INPUTS_SDL}
type Query {
  "Every key, oldest first (then by id when paged). filter: words that must all match: label:env=prod, label:env, role:ADMIN, state:active|grace|expired|disabled, name:text or a part of the name. first (1 to 1000) and after (the cursor of the last key of the previous page) return one page: a page shorter than first is the last. Without either, every key at once. One request returns at most 5000 keys in all: on a larger store, page."
  apiKeys(filter: String, first: Int, after: String): [ApiKey!]
  apiKey(id: PrefixedID!): ApiKey
  apiKeyPossibleRoles: [Role!]
  apiKeyPossiblePermissions: [Permission!]
  "The presets a key can be created with (CreateApiKeyInput.preset, the CLI's --preset)."
  apiKeyPresets: [ApiKeyPreset!]!
  getPermissionsForRoles(roles: [Role!]!): [Permission!]
  previewEffectivePermissions(roles: [Role!], permissions: [AddPermissionInput!]): [Permission!]
  getAvailableAuthActions: [AuthAction!]
  me: UserAccount
  online: Boolean
  info: Info
  "The audit trail, oldest first: the changes since since and before before (each a duration back from now like 30m, 12h or 7d, or an ISO 8601 time; absent: every event kept), at most limit of the latest (1 to 10000, default 1000). To page back, ask again with before set to the at of the oldest event received (events of that same millisecond may straddle two pages: to be sure of them all, ask with before one millisecond later and skip those already received). Aliases with the same arguments share one read; those with different arguments may ask for 10000 events in one request in all."
  auditLog(since: String, limit: Int, before: String): [AuditEvent!]
  "The audit trail in the order it was written, a page at a time from the newest back: at most limit events (1 to 10000, default 1000) before cursor (the cursor of the page received last; absent: the trail's end), oldest first, with the cursor of the page before. Unlike auditLog's before, this finds every event once even where events' times step back (a clock step, writers on hosts a little apart). since and before filter by time as in auditLog. Shares auditLog's 10000 events per request."
  auditTrail(since: String, before: String, limit: Int, cursor: String): AuditTrailPage${WEBHOOK_QUERY_SDL}
}

type ApiKeyMutations {
  create(input: CreateApiKeyInput!): ApiKey
  update(input: UpdateApiKeyInput!): ApiKey
  delete(input: DeleteApiKeyInput!): Boolean
  addRole(input: AddRoleForApiKeyInput!): Boolean
  removeRole(input: RemoveRoleFromApiKeyInput!): Boolean
  "Issues a new secret for the key: same id, name, roles, permissions, description, expiry and labels; the result carries the new secret in key (its only appearance). The old secret stops working at once, or after graceSeconds (1 to 86400), during which it is listed as a key in its grace period of its own."
  rotate(id: PrefixedID!, graceSeconds: Int): ApiKey
  "Deletes every key whose expiry or grace period has passed; returns them, oldest first (each an audit event, action prune)."
  deleteExpired: [ApiKey!]
}

type Mutation {
  apiKey: ApiKeyMutations!
  webhook: WebhookMutations!
}
${USAGE_SDL}${WEBHOOK_SDL}`;

/** The permission each field needs, `"Query.apiKeys": "API_KEY:READ_ANY"`: for docs and tests. */
export const FIELD_PERMISSIONS: Readonly<Record<string, string>> = Object.fromEntries([
  ...Object.entries(QUERY).map(([field, rule]) => [`Query.${field}`, rule.needs]),
  ...Object.entries(API_KEY_MUTATIONS).map(([field, rule]) => [`Mutation.apiKey.${field}`, rule.needs]),
  ...Object.entries(WEBHOOK_QUERY).map(([field, rule]) => [`Query.${field}`, rule.needs]),
  ...Object.entries(WEBHOOK_MUTATIONS).map(([field, rule]) => [`Mutation.webhook.${field}`, rule.needs]),
]);

const MAX_ID_LENGTH = 200;
const prefixedId = (value: unknown): string => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw new GraphQLError(`PrefixedID must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return value;
};

function attach(type: GraphQLObjectType, rules: Readonly<Record<string, Rule>>): void {
  const fields = type.getFields();
  for (const [name, rule] of Object.entries(rules)) {
    const field = fields[name];
    field.description = `${field.description ? `${field.description} ` : ""}Requires ${rule.needs}${rule.own ? ` (or ${rule.needs.replace(/_ANY$/, "_OWN")} on the caller's own key)` : ""}.`;
    field.resolve = ((_source, args, context: GraphQLContext) => {
      authorize(rule, args, context);
      return rule.resolve(args, context, _source);
    }) satisfies GraphQLFieldResolver<unknown, GraphQLContext>;
  }
}

let built: GraphQLSchema | undefined;

/**
 * The service's schema (built once). Resolvers expect a {@link GraphQLContext}.
 * @example execute({ schema: createSchema(), document, contextValue: { key, store } })
 */
export function createSchema(): GraphQLSchema {
  if (built) return built;
  const schema = buildSchema(SDL);
  attach(schema.getQueryType()!, QUERY);
  attach(schema.getType("ApiKeyMutations") as GraphQLObjectType, API_KEY_MUTATIONS);
  attach(schema.getQueryType()!, WEBHOOK_QUERY);
  attach(schema.getType("WebhookMutations") as GraphQLObjectType, WEBHOOK_MUTATIONS);
  schema.getMutationType()!.getFields().apiKey.resolve = () => ({});
  schema.getMutationType()!.getFields().webhook.resolve = () => ({});
  const apiKey = (schema.getType("ApiKey") as GraphQLObjectType).getFields();
  apiKey.labels.resolve = (key: { labels?: Record<string, string> }) => Object.entries(key.labels ?? {}).map(([name, value]) => ({ key: name, value }));
  apiKey.rateLimits.resolve = (key: { rateLimits?: unknown[] }) => key.rateLimits ?? [];
  apiKey.allowFrom.resolve = (key: { allowFrom?: string[] }) => key.allowFrom ?? [];
  for (const [name, resolve] of Object.entries(API_KEY_USAGE_FIELDS)) apiKey[name].resolve = resolve as GraphQLFieldResolver<unknown, GraphQLContext>;
  apiKey.cursor.resolve = cursorOf;
  // Reaching Info at all needed INFO:READ_ANY (checked on Query.info); its fields need nothing more.
  const info = (schema.getType("Info") as GraphQLObjectType).getFields();
  for (const [name, resolve] of Object.entries(INFO_FIELDS)) info[name].resolve = resolve;
  const scalar = schema.getType("PrefixedID") as GraphQLScalarType;
  Object.assign(scalar, {
    serialize: prefixedId,
    parseValue: prefixedId,
    parseLiteral: (ast: { kind: string; value?: string }) => {
      if (ast.kind !== Kind.STRING) throw new GraphQLError("PrefixedID must be a string");
      return prefixedId(ast.value);
    },
  });
  return (built = schema);
}
