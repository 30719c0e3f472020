/**
 * The service's runtime-neutral handler: route (`/graphql`, the explorer, `/healthz`, `/readyz`,
 * `/metrics`), authenticate by API key, answer (remembered, `answer-cache.ts`, or by the GraphQL route,
 * `route.ts`), observe (the access log and the metrics). Adapters: `fetch.ts` (fetch runtimes, Deno) and
 * `node.ts` (node:http); `serve.ts` listens.
 *
 * Every request verifies its key against the store (a few reads by known keys), so a key deleted or
 * overwritten by the CLI stops working on the very next request, for every server sharing the store,
 * and an expired one from the first request after its expiry. Each key that authenticates is noted for
 * its `lastUsedAt` (`last-use.ts`): no store write on the request path. A request answers without a
 * promise when nothing on its way waited (a remembered verification on the files store, a remembered
 * answer, a compiled query): see `core/maybe-promise.ts`.
 */
import type { VerifiedKey } from "../store/types.ts";
import { after, isPromise, type MaybePromise } from "../core/maybe-promise.ts";
import { isWellFormedSecret } from "../core/secret.ts";
import { ClientGone } from "../graphql/limits.ts";
import { createOutageTracker } from "./outage.ts";
import { createAnswerCache } from "./answer-cache.ts";
import { createGraphQLRoute } from "./route.ts";
import { startLastUse } from "./last-use.ts";
import { controlled } from "./credits.ts";
import { createMemoryRateLimiter } from "../store/rate-limiter.ts";
import { createMemoryCreditCounter } from "../store/credit-counter.ts";
import {
  createErrorFormatter,
  errorResponse,
  inMediaType,
  internal,
  isStoreDown,
  KEY_REFUSED,
  notAcceptable,
  PRIVATE_HEADERS,
  privately,
  storeDown,
  tooLarge,
  unauthenticated,
} from "./responses.ts";
import { createAuthThrottle } from "./auth-throttle.ts";
import { type GraphQLMediaType, negotiate } from "./negotiate.ts";
import { createCors } from "./cors.ts";
import { type AuthFailure, type HandlerOptions, MAX_BODY_BYTES, type RequestEvent, type ServiceHandler, type ServiceObserver, type ServiceRequest, type ServiceResponse } from "./types.ts";
import { credential, pathOf } from "./request.ts";
import { explorerRoute } from "./explorer-route.ts";
import { consoleRoute } from "./console.ts";
import { healthz, metricsRoute, readiness } from "./ops-routes.ts";

export { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";

type AnyResponse = ServiceResponse<string | Uint8Array<ArrayBuffer>>;

/** What the access log and the metrics learn of a request on its way (see `RequestEvent`). */
interface Trace {
  key?: { id: string; name: string };
  operation?: RequestEvent["operation"];
  /** The answer was computed, not remembered (a remembered one is always a query's). */
  computed?: boolean;
}

/** What answering /graphql needs from the handler's set-up. */
interface EndpointParts {
  options: HandlerOptions;
  outage: ReturnType<typeof createOutageTracker>;
  lastUse: ReturnType<typeof startLastUse>;
  onError: (error: unknown) => void;
  failure: (error: unknown) => ServiceResponse;
}

/**
 * `/graphql`: negotiate, authenticate (the body is read only once the key is good), answer (remembered
 * or by the GraphQL route), and send it in the media type negotiated, private, with CORS.
 */
function graphqlEndpoint({ options, outage, lastUse, onError, failure }: EndpointParts) {
  const { store, observer } = options;
  const verify = store.verifyNow?.bind(store) ?? ((secret: string) => store.verify(secret));
  const limiter = store.rateLimiter ?? createMemoryRateLimiter();
  const credits = store.creditCounter ?? createMemoryCreditCounter();
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const answers = createAnswerCache();
  const cors = createCors(options.corsOrigins);
  const graphql = createGraphQLRoute({ formatError: createErrorFormatter(onError), storeFailed: (error) => outage.failed(error), headers: PRIVATE_HEADERS });
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
  // verifyApiKey counts the verified key's use here too: off when this server records no use.
  const seen = lastUse ? (id: string) => lastUse.seen(id) : () => {};

  const answer = (request: ServiceRequest, key: VerifiedKey, body: string | null, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (body === null) return tooLarge(limit);
    trace.key = key;
    return answers.answer(key.validity, request, body, () => {
      trace.computed = true;
      return after(graphql(request, body, mediaType, { key, store, seen }), (answered) => {
        if (answered.operation) trace.operation = answered.operation;
        return answered;
      });
    });
  };

  const authenticate = (request: ServiceRequest, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (request.method !== "GET" && request.method !== "POST") {
      return errorResponse(405, "METHOD_NOT_ALLOWED", "Use POST (or GET for queries) on /graphql", { allow: "GET, POST" });
    }
    if (Number(request.headers.get("content-length") ?? 0) > limit) return tooLarge(limit);
    const found = credential(request.headers);
    if ("problem" in found) return refuse(request, found.problem.startsWith("Missing") ? "missing" : "malformed", found.problem);
    const { secret } = found;
    // The checksum catches mistyped and made-up keys without touching the store.
    if (!isWellFormedSecret(secret)) return refuse(request, "malformed", "Malformed API key: it should start with 'sapi_' and be copied completely");
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
    if (!isPromise(body)) return answer(request, key, body, mediaType, trace);
    // The body came after the head, maybe much later (up to the request timeout): the key is checked
    // again once it is in, with a revision read of its own, so a revocation or an update finished
    // before the body was sent applies to it.
    return body.then((body) => after(verify(secret), (again) => (again ? answer(request, again, body, mediaType, trace) : refused(request, secret))));
  };

  /** A /graphql answer as sent: in the media type negotiated, private, with CORS. */
  const sent = (request: ServiceRequest, response: ServiceResponse, mediaType: GraphQLMediaType | null): ServiceResponse => {
    const shown = privately(mediaType === null ? response : inMediaType(response, mediaType));
    return cors ? cors.decorate(request, shown) : shown;
  };

  return (request: ServiceRequest, trace: Trace): MaybePromise<ServiceResponse> => {
    if (cors && request.method === "OPTIONS") return cors.preflight(request);
    const mediaType = negotiate(request.headers.get("accept"));
    if (mediaType === null) return sent(request, notAcceptable(), null);
    const worked = (response: ServiceResponse) => {
      if (response.status !== 503) outage.worked();
      return sent(request, response, mediaType);
    };
    const failed = (error: unknown) => sent(request, failure(error), mediaType);
    try {
      return after(authenticate(request, mediaType, trace), worked, failed);
    } catch (error) {
      return failed(error);
    }
  };
}

/** Creates the service's runtime-neutral handler (see `createHandler` in `fetch.ts` for the fetch-style one). */
export function createServiceHandler(options: HandlerOptions): ServiceHandler {
  const { store, observer } = options;
  const onError = options.onError ?? ((error: unknown) => console.error("service-api: internal error:", error));
  const storeStatus = options.storeStatus ?? {
    down: (line) => console.error(`service-api: error: ${line}`),
    up: (line) => console.error(`service-api: ${line}`),
  };
  const outage = createOutageTracker(storeStatus);
  const lastUse = startLastUse(store, options.recordLastUse, storeStatus);
  const metrics = options.metrics && metricsRoute(store, options.metrics, lastUse && ((id) => lastUse.seen(id)));
  const explorer = explorerRoute(options.explorer);
  const site = consoleRoute(options.console);
  const ready = readiness(store);
  /** The answer to a failure no one else answered: 503 for the store, 400 for a client gone, else 500. */
  const failure = (error: unknown): ServiceResponse => {
    if (isStoreDown(error)) return outage.failed(error), storeDown();
    if (error instanceof ClientGone) return errorResponse(400, "BAD_REQUEST", error.message, { connection: "close" });
    onError(error);
    return internal();
  };
  const graphql = graphqlEndpoint({ options, outage, lastUse, onError, failure });

  /** Routes a request; `trace` collects what the access log and the metrics are told afterwards. */
  const route = (request: ServiceRequest, pathname: string | null, trace: Trace): MaybePromise<AnyResponse> => {
    try {
      if (pathname === null) {
        return errorResponse(400, "BAD_REQUEST", "Invalid request target: send requests to /graphql", { connection: "close" });
      }
      const page = explorer?.(request, pathname) ?? site?.(request, pathname);
      if (page) return page.catch(failure);
      if (pathname === "/graphql") return graphql(request, trace);
      if (pathname === "/healthz") return healthz(request);
      if (pathname === "/readyz") return ready(request).catch(failure);
      if (pathname === "/metrics" && metrics) return metrics(request).catch(failure);
      return errorResponse(404, "NOT_FOUND", "Not found: the GraphQL endpoint is POST /graphql");
    } catch (error) {
      return failure(error);
    }
  };
  const close = async () => {
    await lastUse?.close();
  };
  if (!observer) return Object.assign((request: ServiceRequest) => route(request, pathOf(request.url), {}), { close });
  return Object.assign(observed(route, observer), { close });
}

/** `route`, telling the observer (the access log, the metrics) about each request once answered. */
function observed(route: (request: ServiceRequest, pathname: string | null, trace: Trace) => MaybePromise<AnyResponse>, observer: ServiceObserver) {
  return (request: ServiceRequest) => {
    const started = performance.now();
    const pathname = pathOf(request.url);
    const trace: Trace = {};
    return after(route(request, pathname, trace), (response) => {
      if (response.status === 503 && pathname === "/graphql") observer.storeError();
      // A remembered answer skipped execution, and only a query's is remembered.
      const operation = trace.operation ?? (trace.key && !trace.computed ? "query" : "none");
      const path = pathname ?? "(invalid target)";
      observer.request({ method: request.method, path, status: response.status, ms: performance.now() - started, key: trace.key, operation });
      return response;
    });
  };
}
