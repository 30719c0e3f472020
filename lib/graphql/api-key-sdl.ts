/**
 * The API keys in the schema's SDL: the enums of the permission model, the `PrefixedID` scalar, the
 * `ApiKey` type with its labels, rate limits and presets, the caller's own account (`me`), and the
 * inputs of the key mutations. Names match the reference service's schema (field, argument and input
 * names), so clients written for it work unchanged. Assembled with the other parts in `schema.ts`.
 */
import { ACTIONS, RESOURCES, ROLES } from "../core/model.ts";

/** The permission model's enums, `PrefixedID`, `ApiKey` and the types it is made of. */
export const API_KEY_SDL = /* GraphQL */ `
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
  "Only on a key replaced by an overwrite with graceSeconds (on me: also when the request came with the old secret of a key rotated with graceSeconds): its secret keeps working until then (ISO 8601, UTC)."
  graceUntil: String
  "Only on a key rotated with graceSeconds while its old secret still works: when that secret stops (ISO 8601, UTC). Both secrets are this one key."
  retiringUntil: String
  "The operator's labels (key=value pairs, at most 20, sorted by key); they grant nothing."
  labels: [Label!]!
  "At most limit requests per window of durationMs, each; [] for none. Over one, the service answers 429 (RATE_LIMITED) with Retry-After."
  rateLimits: [RateLimit!]!
  "The only addresses requests with the key may come from, as CIDR blocks (192.0.2.7/32, 10.0.0.0/8, 2001:db8::/32); [] for any. From elsewhere the service answers 403 (IP_NOT_ALLOWED)."
  allowFrom: [String!]!
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

`;

/** The caller's own key, as `me` answers it. */
export const USER_ACCOUNT_SDL = /* GraphQL */ `
type UserAccount {
  id: PrefixedID!
  name: String!
  description: String
  roles: [Role!]!
  permissions: [Permission!]!
}

`;

/** The inputs of the `Mutation.apiKey` fields. */
export const API_KEY_INPUTS_SDL = /* GraphQL */ `
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
  "An IP allow-list: IPv4 or IPv6 addresses or CIDR blocks, at most 32; absent or []: any address."
  allowFrom: [String!]
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
  "The whole new IP allow-list; [] removes it (any address); absent leaves it."
  allowFrom: [String!]
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

`;
