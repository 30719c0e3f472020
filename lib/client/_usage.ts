/**
 * The remote backend's use of keys: a key's use counts (`usage`) and `verifyDetailed`, over the service's
 * `ApiKey.usage` and `verifyApiKey`, in the local store's shapes.
 */
import * as v from "valibot";
import type { KeyUsage, KeyVerification, Permission, Role, VerificationCode } from "../core/model.ts";
import { VERIFICATION_CODES } from "../core/model.ts";
import type { VerifyOptions } from "../store/types.ts";
import { type Credits, REFILL_INTERVALS } from "../core/credits.ts";
import type { Client } from "./client.ts";
import { ServerText } from "./_untrusted.ts";

const Count = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
/** A key's credits as the service sends them (`ApiKey.credits`), in the store's shape (no null refill). */
export const CreditsSchema = v.pipe(
  v.object({ remaining: Count, refill: v.nullish(v.object({ amount: Count, interval: v.picklist(REFILL_INTERVALS) })) }),
  v.transform(({ remaining, refill }): Credits => (refill ? { remaining, refill } : { remaining })),
);
const UsageSchema = v.object({
  apiKey: v.nullable(v.object({
    usage: v.nullable(v.object({ total: Count, days: v.array(v.object({ date: v.pipe(ServerText, v.isoDate()), count: Count })) })),
  })),
});
const VerificationSchema = v.object({
  verifyApiKey: v.object({
    valid: v.boolean(),
    code: v.picklist(VERIFICATION_CODES),
    id: v.nullable(ServerText),
    name: v.nullable(ServerText),
    roles: v.nullable(v.array(ServerText)),
    permissions: v.nullable(v.array(v.object({ resource: ServerText, actions: v.array(ServerText) }))),
    expiresAt: v.nullable(ServerText),
    credits: v.nullable(Count),
    ratelimits: v.nullable(v.array(v.object({ name: ServerText, limit: Count, remaining: Count, reset: ServerText, exceeded: v.boolean() }))),
  }),
});

export function remoteUsage(client: Client) {
  return {
    /** The key's use counts, or null when the service has no key with this id. */
    async usage(id: string): Promise<KeyUsage | null> {
      const data = await client.request(
        `query ($id: PrefixedID!) { apiKey(id: $id) { usage { total days { date count } } } }`,
        { id },
        UsageSchema,
      );
      return data.apiKey?.usage ?? null;
    },

    /** As `KeyStore.verifyDetailed`, asked of the service (the calling key needs API_KEY:READ_ANY). */
    async verifyDetailed(secret: string, options: VerifyOptions = {}): Promise<KeyVerification> {
      const data = await client.request(
        `query ($key: String!, $permissions: [AddPermissionInput!]) { verifyApiKey(key: $key, permissions: $permissions) {
          valid code id name roles permissions { resource actions } expiresAt credits ratelimits { name limit remaining reset exceeded } } }`,
        { key: secret, permissions: options.permissions },
        VerificationSchema,
      );
      const answer = data.verifyApiKey;
      // The service's roles and resources may be newer than ours: kept as the text it sent.
      return { ...answer, code: answer.code as VerificationCode, roles: answer.roles as Role[] | null, permissions: answer.permissions as Permission[] | null };
    },
  };
}
