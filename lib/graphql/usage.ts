/**
 * The use of keys in the schema: disabling a key (`UpdateApiKeyInput.disabled`), its state and use counts
 * (`ApiKey.disabled`, `ApiKey.usage`), and `verifyApiKey`, which lets a service that is not ours ask
 * whether a secret is a working key. Kept as extensions of the types in schema.ts.
 */
import { VERIFICATION_CODES } from "../core/model.ts";
import { parseInput, PermissionsSchema } from "../core/input.ts";
import type { GraphQLContext } from "./field-rule.ts";
import { CREDITS_SDL } from "./credits.ts";

/** What these resolvers need of the request's context (a part of field-rule.ts's `GraphQLContext`). */
type StoreContext = Pick<GraphQLContext, "store" | "seen" | "usages">;

export const USAGE_SDL = /* GraphQL */ `
extend type ApiKey {
  "True while the key is disabled: it is refused (401, code KEY_DISABLED) until it is enabled again."
  disabled: Boolean!
  "Why the key was disabled, when a reason was given."
  disabledReason: String
  "How many requests the key authenticated: in all, and per UTC day for the last 30 days. Each server writes its counts off the request path, within about a minute. Null for a key no longer in the store."
  usage: KeyUsage
}

type KeyUsage {
  "Requests authenticated since the key was made."
  total: Float!
  "The days of the last 30 (UTC) with at least one request, oldest first."
  days: [KeyUsageDay!]!
}

type KeyUsageDay {
  "YYYY-MM-DD, UTC."
  date: String!
  count: Int!
}

"Why verifyApiKey accepted or refused a key."
enum KeyVerificationCode { ${VERIFICATION_CODES.join(" ")} }

"One rate limit of a key, as verifyApiKey reports it."
type KeyRatelimit {
  name: String!
  limit: Int!
  remaining: Int!
  "When the window resets (ISO 8601, UTC)."
  reset: String!
  exceeded: Boolean!
}

"The answer of verifyApiKey. The key's fields are null when no key has the secret."
type KeyVerification {
  "True exactly when code is VALID."
  valid: Boolean!
  code: KeyVerificationCode!
  id: PrefixedID
  name: String
  roles: [Role!]
  "The key's explicit permissions (its roles add more)."
  permissions: [Permission!]
  expiresAt: String
  "Credits left after this use; null: the key has no credits (no cap)."
  credits: Int
  "Each rate limit of the key after this use; null: none."
  ratelimits: [KeyRatelimit!]
}

extend input UpdateApiKeyInput {
  "true disables the key (refused with 401, code KEY_DISABLED, on every server from its next request); false enables it again."
  disabled: Boolean
  "With disabled: true, why (at most 500 characters; no secret, no control characters)."
  disabledReason: String
}

extend type Query {
  "Whether key is a working API key holding permissions (its roles count), for a service that is not this one. Counts as the use of the key verified (last use, usage, its rate limits, one of its credits), not of the caller's. code: VALID, NOT_FOUND (never issued, revoked or replaced), EXPIRED, DISABLED, INSUFFICIENT_PERMISSIONS (counts no rate limit nor credit), IP_NOT_ALLOWED (the key has an IP allow-list and address, the address your caller came from, is outside it or not given; counts nothing), RATE_LIMITED (a rate limit of the key is full; no credit taken) or USAGE_EXCEEDED (no credit left)."
  verifyApiKey(key: String!, permissions: [AddPermissionInput!], address: String): KeyVerification!
}
${CREDITS_SDL}`;

/** The rules of the `Query` fields above. Never remembered by the answer cache (not keyOnly): each call is a use. */
export const USAGE_QUERY = {
  verifyApiKey: {
    needs: "API_KEY:READ_ANY" as const,
    resolve: (a: Record<string, any>, { store, seen }: StoreContext) =>
      store.verifyDetailed(a.key, {
        permissions: parseInput(PermissionsSchema, a.permissions ?? []),
        ...(seen ? { onUse: seen } : {}),
        ...(typeof a.address === "string" ? { address: a.address } : {}),
      }),
  },
};

/** Resolvers of the `ApiKey` fields above: reaching a key already needed the permission to read it. */
export const API_KEY_USAGE_FIELDS = {
  disabled: (key: { disabled?: boolean }) => key.disabled === true,
  // Read once per key per request, however many aliases list it (a read goes through the thread pool).
  usage: (key: { id: string }, _args: unknown, context: StoreContext) => {
    const usages = (context.usages ??= new Map());
    let read = usages.get(key.id);
    if (!read) usages.set(key.id, read = context.store.usage(key.id));
    return read;
  },
};
