/**
 * The GraphQL schema: its SDL, the PrefixedID scalar, and each field's rule attached as its
 * resolver. The API-key part matches the reference service's schema (field, argument and input
 * names), so clients written for it work unchanged. The rules are in `fields.ts`, the host facts in
 * `info.ts`, parsing and validation in `documents.ts`, and the key-only analysis in `key-only.ts`;
 * this module re-exports what the service and the library use from them.
 */
import { buildSchema, type GraphQLFieldResolver, GraphQLError, GraphQLObjectType, GraphQLScalarType, type GraphQLSchema, Kind } from "graphql";
import { ACTIONS, RESOURCES, ROLES } from "../core/model.ts";
import { API_KEY_MUTATIONS, authorize, type GraphQLContext, QUERY, type Rule } from "./fields.ts";
import { INFO_FIELDS } from "./info.ts";
import { API_KEY_USAGE_FIELDS, USAGE_SDL } from "./usage.ts";
import { cursorOf } from "../core/paging.ts";

export { FIELD_PERMISSIONS, type GraphQLContext } from "./fields.ts";
export { DOCUMENT_LIMITS, parseDocument, validateDocument } from "./documents.ts";
export { dependsOnKeyOnly } from "./key-only.ts";

const SDL = /* GraphQL */ `
enum Role { ${ROLES.join(" ")} }
enum Resource { ${RESOURCES.join(" ")} }
enum AuthAction { ${ACTIONS.join(" ")} }

"A string id (a UUID for API keys)."
scalar PrefixedID

type Permission {
  resource: Resource!
  actions: [AuthAction!]!
}

type ApiKey {
  id: PrefixedID!
  name: String!
  description: String
  roles: [Role!]!
  createdAt: String!
  "The key's explicit permissions (roles add more; see previewEffectivePermissions)."
  permissions: [Permission!]!
  "The secret: only in the result of the create mutation, never stored, never shown again."
  key: String
  "When the key stops working (ISO 8601, UTC); null: never. An expired key is refused (401) until deleted."
  expiresAt: String
  "When the key last authenticated a request (ISO 8601, UTC), to within a minute; null: never. Recorded by each server off the request path."
  lastUsedAt: String
  "Only on a key replaced by an overwrite with graceSeconds (or the old secret of a key rotated with graceSeconds): its secret keeps working until then (ISO 8601, UTC)."
  graceUntil: String
  "The operator's labels (key=value pairs, at most 20, sorted by key); they grant nothing."
  labels: [Label!]!
  "At most limit requests per window of durationMs, each; [] for none. Over one, the service answers 429 (RATE_LIMITED) with Retry-After."
  rateLimits: [RateLimit!]!
  "Where a page of apiKeys(first:, after:) ending with this key ends: pass it as after for the next page. Opaque."
  cursor: String!
}
"A named permission set (docker_manager, vm_manager, monitoring, backup_manager, network_admin): a key made with it holds exactly these roles and permissions, added to its own."
type ApiKeyPreset {
  name: String!
  description: String!
  roles: [Role!]!
  permissions: [Permission!]!
}

"A label of a key: key is 1 to 63 lower-case letters, digits, '.', '_' or '-'; value is 1 to 128 ASCII letters, digits, spaces or '. _ - : / @ +'."
type Label {
  key: String!
  value: String!
}

input LabelInput {
  key: String!
  value: String!
}

"A rate limit of a key: limit (1 to 1000000) requests per window of durationMs (whole seconds, 1000 to 2592000000)."
type RateLimit {
  limit: Int!
  durationMs: Float!
}

input RateLimitInput {
  limit: Int!
  durationMs: Float!
}

"Who made a change. kind local: a person at a host (the CLI, the library), with user and host. kind key: the API key that called the service, with id and name."
type AuditActor {
  "local or key."
  kind: String!
  user: String
  host: String
  id: PrefixedID
  name: String
}

"One change to the key store. Never holds a secret or a hash."
type AuditEvent {
  "When the change was made (ISO 8601, UTC)."
  at: String!
  "create, overwrite, update, delete, prune (the removal of an expired key by deleteExpired), import, rotate (a new secret for the key), disable or enable (an update that disabled or enabled the key), or reuse (not a change: a retired secret of this key, deleted or replaced, was presented again; its actor is the key; at most one per key per minute per server)."
  action: String!
  "The key changed (for an overwrite, the new key)."
  id: PrefixedID!
  name: String!
  actor: AuditActor!
  "update, disable, enable: the fields it changed (name, description, roles, permissions, expiresAt, labels, disabled, disabledReason, rateLimits)."
  changed: [String!]
  "overwrite: the id of the key it replaced."
  replaced: PrefixedID
}

type UserAccount {
  id: PrefixedID!
  name: String!
  description: String
  roles: [Role!]!
  permissions: [Permission!]!
}

type InfoMemory {
  "Bytes."
  total: Float!
  "Bytes."
  free: Float!
}

type Info {
  hostname: String!
  platform: String!
  release: String!
  "Seconds since the host booted."
  uptime: Float!
  cpus: Int!
  memory: InfoMemory!
  "Runtime and its version, e.g. node 20.19.0 or deno 2.1.0."
  runtime: String!
  "The service's version."
  version: String!
}

input AddPermissionInput {
  resource: Resource!
  actions: [AuthAction!]!
}

input CreateApiKeyInput {
  name: String!
  description: String
  roles: [Role!]
  permissions: [AddPermissionInput!]
  "Replace a key of the same name: new id, new secret; the old secret stops working (at once, or after graceSeconds)."
  overwrite: Boolean
  "When the key stops working: an ISO 8601 time with its zone (2026-12-31T18:00:00Z, or a date for midnight UTC), in the future, at most 3650 days away. Null or absent: never."
  expiresAt: String
  "With overwrite: the replaced key's secret keeps working this many seconds more (1 to 86400), so that a deployment can roll over without downtime."
  graceSeconds: Int
  "Labels, at most 20."
  labels: [LabelInput!]
  "Rate limits, at most 5, one per window."
  rateLimits: [RateLimitInput!]
  "Presets (see apiKeyPresets), comma-separated: their roles and permissions are added to roles and permissions."
  preset: String
}

input UpdateApiKeyInput {
  id: PrefixedID!
  name: String
  description: String
  roles: [Role!]
  permissions: [AddPermissionInput!]
  "A new expiry (ISO 8601 with its zone, in the future); null removes the expiry; absent leaves it."
  expiresAt: String
  "The whole new set of labels; [] removes them all; absent leaves them."
  labels: [LabelInput!]
  "The whole new set of rate limits; [] removes them all; absent leaves them."
  rateLimits: [RateLimitInput!]
}

input DeleteApiKeyInput {
  ids: [PrefixedID!]!
}

input AddRoleForApiKeyInput {
  apiKeyId: PrefixedID!
  role: Role!
}

input RemoveRoleFromApiKeyInput {
  apiKeyId: PrefixedID!
  role: Role!
}

type Query {
  "Every key, oldest first (then by id when paged). filter: words that must all match: label:env=prod, label:env, role:ADMIN, state:active|grace|expired|disabled, name:text or a part of the name. first (1 to 1000) and after (the cursor of the last key of the previous page) return one page: a page shorter than first is the last. Without either, every key at once."
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
}
${USAGE_SDL}`;

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
  schema.getMutationType()!.getFields().apiKey.resolve = () => ({});
  const apiKey = (schema.getType("ApiKey") as GraphQLObjectType).getFields();
  apiKey.labels.resolve = (key: { labels?: Record<string, string> }) => Object.entries(key.labels ?? {}).map(([name, value]) => ({ key: name, value }));
  apiKey.rateLimits.resolve = (key: { rateLimits?: unknown[] }) => key.rateLimits ?? [];
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
