/**
 * `POST /v2/keys.verifyKey`: Unkey's v2 verification, so services written against Unkey (its SDKs, `@unkey/api`)
 * verify our keys with no change but the base URL and the root key. The caller authenticates as on `/graphql`
 * (`Authorization: Bearer`, the same failed-authentication count, its own rate limits and credits) with a
 * key holding `API_KEY:READ_ANY`; the key verified is answered as Unkey answers it: 200 `{ meta: { requestId },
 * data: { valid, code, keyId, name, expires, credits, enabled, roles, permissions, ratelimits } }`, its use
 * counted as `verifyApiKey` counts it (`KeyStore.verifyDetailed`). `permissions` is Unkey's query over
 * `RESOURCE:ACTION` names (`core/permission-query.ts`). Failures of the call itself are Unkey's error shape
 * `{ meta, error: { title, detail, status, type } }`.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import type { KeyVerification } from "../core/model.ts";
import { can, effectivePermissions } from "../core/policy.ts";
import { permissionPairs } from "../core/model.ts";
import { lackedPair, parsePermissionQuery, type PermissionQuery, satisfies } from "../core/permission-query.ts";
import type { UseRecorder } from "../store/last-use.ts";
import type { VerifiedKey } from "../store/types.ts";
import type { ForwardAuthParts } from "./forward-auth.ts";
import { isObject } from "./request.ts";
import { JSON_TYPE } from "./responses.ts";
import type { ServiceRequest, ServiceResponse, Trace } from "./types.ts";

const TITLES: Record<number, [title: string, type: string]> = {
  400: ["Bad Request", "application/invalid_input"],
  401: ["Unauthorized", "authentication/key_not_found"],
  403: ["Forbidden", "authorization/insufficient_permissions"],
  405: ["Method Not Allowed", "application/invalid_input"],
  413: ["Payload Too Large", "application/invalid_input"],
  429: ["Too Many Requests", "application/rate_limited"],
  500: ["Internal Server Error", "application/unexpected_error"],
  503: ["Service Unavailable", "application/service_unavailable"],
};
const requestId = () => `req_${crypto.randomUUID().replaceAll("-", "")}`;

/** An error in Unkey's shape (`application/problem+json` for 429, as its SDK expects). */
function unkeyError(status: number, detail: string, headers: Record<string, string> = {}): ServiceResponse {
  const [title, type] = TITLES[status] ?? TITLES[500];
  const contentType = status === 429 ? "application/problem+json" : JSON_TYPE;
  const error = { title, detail, status, type: `https://unkey.com/docs/errors/unkey/${type}` };
  return { status, headers: { ...headers, "content-type": contentType, "cache-control": "no-store" }, body: JSON.stringify({ meta: { requestId: requestId() }, error }) };
}
/** True for one of the service's own error answers (`{"errors":[…]}`), not yet in Unkey's shape. */
const isOurError = (response: ServiceResponse) => response.status >= 400 && typeof response.body === "string" && response.body.startsWith('{"errors":');
/** One of the service's own error answers (a refusal, a 429, a 503) in Unkey's shape, its headers kept. */
function asUnkey(response: ServiceResponse): ServiceResponse {
  let detail = "Request failed";
  try {
    detail = JSON.parse(response.body ?? "").errors[0].message;
  } catch { /* keep the generic detail */ }
  const { "content-type": _type, ...headers } = response.headers;
  return unkeyError(response.status, detail, headers);
}

interface VerifyRequest {
  key: string;
  query?: PermissionQuery;
}
/** The body, checked: `key`, Unkey's `permissions` query, `credits.cost` (1 only), `tags` (accepted, unused). */
function readBody(text: string): VerifyRequest | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return `The body is not valid JSON: send {"key": "<API key>", "permissions": "DOCKER:READ_ANY"}`;
  }
  if (!isObject(data) || typeof data.key !== "string" || !data.key) return `The body needs "key": the API key to verify, a string`;
  const { permissions, credits, ratelimits, migrationId, tags } = data;
  if (tags !== undefined && !(Array.isArray(tags) && tags.every((t) => typeof t === "string"))) return `"tags" must be a list of strings`;
  if (credits !== undefined && !(isObject(credits) && credits.cost === 1)) return `"credits.cost" other than 1 is not supported: each verification costs the key one credit`;
  if (ratelimits !== undefined) return `"ratelimits" is not supported: the key's own rate limits always apply`;
  if (migrationId !== undefined) return `"migrationId" is not supported`;
  if (permissions === undefined || permissions === "") return { key: data.key };
  if (typeof permissions !== "string") return `"permissions" must be a string: a query like DOCKER:READ_ANY AND VMS:READ_ANY`;
  try {
    return { key: data.key, query: parsePermissionQuery(permissions) };
  } catch (error) {
    return (error as Error).message;
  }
}

/** Our verification as Unkey's `data`; `key`: the key as verified (its limits' windows, its secret's end), when it was. */
function unkeyData(v: KeyVerification, key: VerifiedKey | null, checked: boolean) {
  // Unkey's code for a key refused by where the request comes from; this route is told no client address,
  // so a key with an IP allow-list fails closed here.
  const data: Record<string, unknown> = { valid: v.valid, code: v.code === "IP_NOT_ALLOWED" ? "FORBIDDEN" : v.code };
  if (v.id === null) return data;
  data.keyId = v.id;
  data.name = v.name;
  // When this secret stops: the key's expiry, or sooner the end of a rotation's old secret or of an
  // overwrite's grace period (the verified key's graceUntil), whichever comes first.
  const ends = [v.expiresAt, key?.graceUntil].filter((end): end is string => Boolean(end)).map(Date.parse);
  if (ends.length) data.expires = Math.min(...ends);
  if (v.credits !== null) data.credits = v.credits;
  data.enabled = v.code !== "DISABLED";
  data.roles = v.roles ?? [];
  if (checked && v.roles && v.permissions) data.permissions = permissionPairs(effectivePermissions({ roles: v.roles, permissions: v.permissions }));
  if (v.ratelimits) {
    data.ratelimits = v.ratelimits.map((r, i) => ({
      id: r.name, name: r.name, limit: r.limit, duration: key?.rateLimits?.[i]?.durationMs ?? 0,
      reset: Date.parse(r.reset), remaining: r.remaining, exceeded: r.exceeded, autoApply: true,
    }));
  }
  return data;
}

/** The `/v2/keys.verifyKey` route (see the top of this file). */
export function createUnkeyVerify({ options, gate, lastUse, worked, failure }: ForwardAuthParts & { lastUse: UseRecorder | undefined }) {
  const { store } = options;
  const { verify } = gate;
  const seen = lastUse ? (id: string) => lastUse.seen(id) : () => {};

  /** The verification of `body` for an authorized caller. */
  const verified = async (text: string): Promise<ServiceResponse> => {
    const body = readBody(text);
    if (typeof body === "string") return unkeyError(400, body);
    const key = await verify(body.key);
    // An unmet query names one pair the key lacks, so that verifyDetailed answers INSUFFICIENT_PERMISSIONS without spending.
    const lacked = key && body.query && !satisfies(key, body.query) ? lackedPair(key, body.query) : undefined;
    const permissions = lacked ? [{ resource: lacked.resource, actions: [lacked.action] }] : [];
    const verification = await store.verifyDetailed(body.key, { permissions, onUse: seen });
    const data = unkeyData(verification, key, body.query !== undefined);
    return { status: 200, headers: { "content-type": JSON_TYPE, "cache-control": "no-store" }, body: JSON.stringify({ meta: { requestId: requestId() }, data }) };
  };

  /** An authorized caller's request: its body read (bounded), then verified. */
  const answer = (request: ServiceRequest): MaybePromise<ServiceResponse> =>
    after(request.body(), (text) => (text === null ? unkeyError(413, "The body is larger than the limit") : verified(text)));
  /** A caller that may not verify keys is refused before its own use is counted. */
  const mayNot = (caller: VerifiedKey) => (can(caller, "API_KEY", "READ_ANY") ? undefined : unkeyError(403, "Verifying keys needs a key with API_KEY:READ_ANY"));

  const check = (request: ServiceRequest, trace: Trace): MaybePromise<ServiceResponse> => {
    trace.operation = "none";
    if (request.method !== "POST") return unkeyError(405, "Use POST on /v2/keys.verifyKey", { allow: "POST" });
    return gate.present(request, () => answer(request), trace, mayNot);
  };

  return (request: ServiceRequest, trace: Trace): MaybePromise<ServiceResponse> => {
    // The gate's own refusals (401, 429) are the service's shape: Unkey's clients read theirs.
    const done = (response: ServiceResponse) => (response.status !== 503 && worked(), isOurError(response) ? asUnkey(response) : response);
    try {
      return after(check(request, trace), done, (error) => asUnkey(failure(error)));
    } catch (error) {
      return asUnkey(failure(error));
    }
  };
}
