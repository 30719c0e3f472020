/**
 * Authentication of a `/graphql` request: the method and the size checked, the API key taken
 * from `Authorization: Bearer` or `X-API-Key`, its checksum checked, the key verified against the store,
 * then its controls (rate limits, credits) applied. The body is read only once the key is good, and the
 * key is verified again if the body came later. A refusal is a 401 told to the observer, or a 429 past
 * the failed-authentication throttle (`auth-throttle.ts`); a verified key's request goes to `answer`.
 */
import type { VerifiedKey } from "../store/types.ts";
import type { UseRecorder } from "../store/last-use.ts";
import { after, isPromise, type MaybePromise } from "../core/maybe-promise.ts";
import { isWellFormedSecret } from "../core/secret.ts";
import { usageCounters } from "../store/_credits.ts";
import { controlled } from "./credits.ts";
import { errorResponse, KEY_REFUSED, tooLarge, unauthenticated } from "./responses.ts";
import { createAuthThrottle } from "./auth-throttle.ts";
import type { GraphQLMediaType } from "./negotiate.ts";
import { credential } from "./request.ts";
import { type AuthFailure, type HandlerOptions, MAX_BODY_BYTES, type ServiceRequest, type ServiceResponse, type Trace } from "./types.ts";

/** Answers a request whose key is verified, with its body. */
export type AnswerVerified = (request: ServiceRequest, key: VerifiedKey, body: string, mediaType: GraphQLMediaType, trace: Trace) => MaybePromise<ServiceResponse>;

/** Why a presented secret is not a key: a missing prefix, or a `sapi_` key whose checksum fails. */
const malformed = (secret: string) =>
  secret.startsWith("sapi_")
    ? "Malformed API key: it starts with 'sapi_' but is not a whole key (its checksum does not match): copy it completely"
    : "Malformed API key: it should start with 'sapi_' and be copied completely";

/**
 * The authentication of `/graphql` requests, made once per handler: each request is refused, or its
 * verified key and body go to `answer`. Notes each key that authenticates with `lastUse`.
 * @example const authenticate = createAuthenticate(options, lastUse, answer); authenticate(request, mediaType, trace);
 */
export function createAuthenticate(options: HandlerOptions, lastUse: UseRecorder | undefined, answer: AnswerVerified) {
  const { store, observer } = options;
  const verify = store.verifyNow?.bind(store) ?? ((secret: string) => store.verify(secret));
  const { rateLimiter: limiter, creditCounter: credits } = usageCounters(store);
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  // Every refusal is counted for its client address, and is a 429 past the limit (see auth-throttle.ts).
  const throttle = createAuthThrottle(options);
  const refusal = (reason: AuthFailure, message: string) => (observer?.authFailed(reason), unauthenticated(message, reason));
  const refuse = (request: ServiceRequest, reason: AuthFailure, message: string) => throttle(request, () => refusal(reason, message));
  /** The 401 for a well-formed secret `verify` refused (a retired one is told to the observer too), or the 429. */
  const refused = (request: ServiceRequest, secret: string) =>
    throttle(request, () => store.refusal(secret).then(({ reason, retired }) => {
      if (retired) observer?.retiredKeyUsed?.({ ...retired, address: request.remoteAddress });
      return refusal(reason, KEY_REFUSED[reason]);
    }));

  const authenticate = (request: ServiceRequest, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (request.method !== "GET" && request.method !== "POST") {
      return errorResponse(405, "METHOD_NOT_ALLOWED", "Use POST (or GET for queries) on /graphql", { allow: "GET, POST" });
    }
    if (Number(request.headers.get("content-length") ?? 0) > limit) return tooLarge(limit);
    const found = credential(request.headers);
    if ("problem" in found) return refuse(request, found.problem.startsWith("Missing") ? "missing" : "malformed", found.problem);
    const { secret } = found;
    // The checksum catches mistyped and made-up keys without touching the store.
    if (!isWellFormedSecret(secret)) return refuse(request, "malformed", malformed(secret));
    return after(verify(secret, request.receivedAt), (key) => {
      if (!key) return refused(request, secret); // only now, for the message: a second read, never a write
      lastUse?.seen(key.id); // remembered answers included: the key authenticated this request
      trace.key = key;
      // Only a key with limits or credits is counted: one without costs nothing more.
      if (!key.rateLimits && !key.creditState) return proceed(request, secret, key, mediaType, trace);
      return controlled(limiter, credits, key, Date.now(), () => proceed(request, secret, key, mediaType, trace));
    });
  };

  /** A verified key's request: its body read, the key checked again if that came later, then answered. */
  const proceed = (request: ServiceRequest, secret: string, key: VerifiedKey, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    const body = request.method === "POST" ? request.body() : "";
    // A null body was larger than allowed.
    if (!isPromise(body)) return body === null ? tooLarge(limit) : answer(request, key, body, mediaType, trace);
    // The body came after the head, maybe much later (up to the request timeout): the key is checked
    // again once it is in, with a revision read of its own, so a revocation or an update finished
    // before the body was sent applies to it.
    return body.then((body) =>
      after(verify(secret), (again) => (!again ? refused(request, secret) : body === null ? tooLarge(limit) : answer(request, again, body, mediaType, trace)))
    );
  };

  return authenticate;
}
