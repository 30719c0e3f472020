/**
 * Authentication by API key, the same on every route that takes one (/graphql, /metrics, /auth, /v2/keys.verifyKey): the key's
 * checksum checked, the key verified against the store, noted for its last use, then its usage controlled
 * (`credits.ts`: rate limits, then one credit, the same 429s and RateLimit headers on every route). A
 * refusal is a 401 told to the observer, or a 429 past the failed-authentication throttle
 * (`auth-throttle.ts`). On /graphql the body is read only once the key is good, and the key is verified
 * again if the body came later; a verified key's request goes to `answer`.
 */
import type { VerifiedKey } from "../store/types.ts";
import type { UseRecorder } from "../store/last-use.ts";
import { after, isPromise, type MaybePromise } from "../core/maybe-promise.ts";
import { isWellFormedSecret } from "../core/secret.ts";
import { usageCounters } from "../store/_credits.ts";
import { controlled } from "./credits.ts";
import { errorResponse, KEY_REFUSED, notAllowedFrom, tooLarge, unauthenticated } from "./responses.ts";
import { createAuthThrottle } from "./auth-throttle.ts";
import { allowedFrom, formatAddress } from "../core/allow-from.ts";
import { clientAddress, parseTrustedProxies } from "./client-address.ts";
import type { GraphQLMediaType } from "./negotiate.ts";
import { credential } from "./request.ts";
import { type AuthFailure, type HandlerOptions, MAX_BODY_BYTES, type ServiceRequest, type ServiceResponse, type Trace } from "./types.ts";

/** Answers a request whose key is verified, with its body. */
export type AnswerVerified = (request: ServiceRequest, key: VerifiedKey, body: string, mediaType: GraphQLMediaType, trace: Trace) => MaybePromise<ServiceResponse>;

/** A route's answer to a request whose key is verified and whose use its controls allowed. */
export type Admitted = (key: VerifiedKey, secret: string) => MaybePromise<ServiceResponse>;

/** Why a presented secret is not a key: a missing prefix, or a `sapi_` key whose checksum fails. */
const malformed = (secret: string) =>
  secret.startsWith("sapi_")
    ? "Malformed API key: it starts with 'sapi_' but is not a whole key (its checksum does not match): copy it completely"
    : "Malformed API key: it should start with 'sapi_' and be copied completely";

/**
 * The gate every route that authenticates a key goes through, made once per handler (one throttle, one
 * set of counters for all routes).
 * @example const gate = createKeyGate(options, lastUse); gate.admit(request, secret, (key) => answer(key));
 */
export function createKeyGate(options: HandlerOptions, lastUse: UseRecorder | undefined) {
  const { store, observer } = options;
  const verify = store.verifyNow?.bind(store) ?? ((secret: string) => store.verify(secret));
  const { rateLimiter: limiter, creditCounter: credits } = usageCounters(store);
  // Every refusal is counted for its client address, and is a 429 past the limit (see auth-throttle.ts).
  const throttle = createAuthThrottle(options);
  const refusal = (reason: AuthFailure, message: string) => (observer?.authFailed(reason), unauthenticated(message, reason));
  const refuse = (request: ServiceRequest, reason: AuthFailure, message: string) => throttle(request, () => refusal(reason, message));
  const trusted = options.trustProxy ? parseTrustedProxies(options.trustProxy) : null;
  /**
   * The 403 for a key with an IP allow-list used from elsewhere, judged by the address the throttle
   * counts (the socket's, or behind a trusted proxy the forwarded client's); undefined when allowed.
   */
  const fenced = (request: ServiceRequest, key: VerifiedKey): ServiceResponse | undefined => {
    if (!key.allowFrom?.length) return undefined;
    const client = clientAddress(request.remoteAddress, request.headers.get("x-forwarded-for"), trusted);
    if (client && allowedFrom(key.allowFrom, client)) return undefined;
    observer?.authFailed("address");
    return notAllowedFrom(client ? formatAddress(client) : "an unknown address");
  };
  /** The 401 for a well-formed secret `verify` refused (a retired one is told to the observer too), or the 429. */
  const refused = (request: ServiceRequest, secret: string) =>
    throttle(request, () => store.refusal(secret).then(({ reason, retired }) => {
      if (retired) observer?.retiredKeyUsed?.({ ...retired, address: request.remoteAddress });
      return refusal(reason, KEY_REFUSED[reason]);
    }));

  /**
   * `secret` (as the request sent it) verified and its use controlled, then `admitted`; else the 401 or the
   * 429. `trace` (the access log's) is told the key once verified, so a refused use names it too. `refuses`,
   * when given, may refuse the verified key before its use is counted (a permission it lacks: a 403 that
   * costs it no rate limit nor credit, as verifyApiKey's INSUFFICIENT_PERMISSIONS).
   */
  const admit = (request: ServiceRequest, secret: string, admitted: Admitted, trace?: Trace, refuses?: (key: VerifiedKey) => ServiceResponse | undefined): MaybePromise<ServiceResponse> => {
    // The checksum catches mistyped and made-up keys without touching the store.
    if (!isWellFormedSecret(secret)) return refuse(request, "malformed", malformed(secret));
    return after(verify(secret, request.receivedAt), (key) => {
      if (!key) return refused(request, secret); // only now, for the message: a second read, never a write
      if (trace) trace.key = key;
      const outside = fenced(request, key); // neither a use nor a spend: the key did not authenticate this request
      if (outside) return outside;
      lastUse?.seen(key.id); // remembered answers and refused uses included: the key authenticated this request
      return refuses?.(key) ?? controlled(limiter, credits, key, Date.now(), () => admitted(key, secret));
    });
  };
  /** `admit` for the key the request's headers carry (`Authorization: Bearer`, else `X-API-Key`), or the 401 saying what is wrong. */
  const present = (request: ServiceRequest, admitted: Admitted, trace?: Trace, refuses?: (key: VerifiedKey) => ServiceResponse | undefined): MaybePromise<ServiceResponse> => {
    const found = credential(request.headers);
    if ("problem" in found) return refuse(request, found.problem.startsWith("Missing") ? "missing" : "malformed", found.problem);
    return admit(request, found.secret, admitted, trace, refuses);
  };
  return { admit, present, refuse, refused, verify, fenced };
}

export type KeyGate = ReturnType<typeof createKeyGate>;

/**
 * The authentication of `/graphql` requests, made once per handler: each request is refused, or its
 * verified key and body go to `answer`.
 * @example const authenticate = createAuthenticate(options, gate, answer); authenticate(request, mediaType, trace);
 */
export function createAuthenticate(options: HandlerOptions, gate: KeyGate, answer: AnswerVerified) {
  const { verify, refused, fenced } = gate;
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;

  const authenticate = (request: ServiceRequest, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (request.method !== "GET" && request.method !== "POST") {
      return errorResponse(405, "METHOD_NOT_ALLOWED", "Use POST (or GET for queries) on /graphql", { allow: "GET, POST" });
    }
    if (Number(request.headers.get("content-length") ?? 0) > limit) return tooLarge(limit);
    return gate.present(request, (key, secret) => proceed(request, secret, key, mediaType, trace), trace);
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
      after(verify(secret), (again) =>
        !again ? refused(request, secret) : (fenced(request, again) ?? (body === null ? tooLarge(limit) : answer(request, again, body, mediaType, trace))))
    );
  };

  return authenticate;
}
