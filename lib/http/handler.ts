/**
 * The service's runtime-neutral handler: route (`/graphql`, `/auth` for reverse proxies (`forward-auth.ts`),
 * the explorer, `/healthz`, `/readyz`, `/metrics`), authenticate by API key (`authenticate.ts`), answer (remembered, `answer-cache.ts`, or
 * by the GraphQL route, `route.ts`), observe (the access log and the metrics). Adapters: `fetch.ts` (fetch runtimes, Deno) and
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
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { ClientGone } from "../graphql/limits.ts";
import { createOutageTracker } from "./outage.ts";
import { createAnswerCache } from "./answer-cache.ts";
import { createGraphQLRoute } from "./route.ts";
import { startLastUse } from "./last-use.ts";
import { createAuthenticate, createKeyGate, type KeyGate } from "./authenticate.ts";
import { createForwardAuth, type ForwardAuthParts, isAuthPath } from "./forward-auth.ts";
import { createUnkeyVerify } from "./unkey-verify.ts";
import { openapiRoute } from "./openapi.ts";
import { createErrorFormatter, errorResponse, inMediaType, internal, isStoreDown, notAcceptable, PRIVATE_HEADERS, privately, storeDown } from "./responses.ts";
import { type GraphQLMediaType, negotiate } from "./negotiate.ts";
import { createCors } from "./cors.ts";
import type { HandlerOptions, ServiceHandler, ServiceObserver, ServiceRequest, ServiceResponse, Trace } from "./types.ts";
import { pathOf } from "./request.ts";
import { explorerRoute } from "./explorer-route.ts";
import { consoleRoute } from "./console.ts";
import { healthz, metricsRoute, readiness } from "./ops-routes.ts";

export { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";

type AnyResponse = ServiceResponse<string | Uint8Array<ArrayBuffer>>;

/** What answering /graphql needs from the handler's set-up. */
interface EndpointParts {
  options: HandlerOptions;
  outage: ReturnType<typeof createOutageTracker>;
  lastUse: ReturnType<typeof startLastUse>;
  gate: KeyGate;
  onError: (error: unknown) => void;
  failure: (error: unknown) => ServiceResponse;
}

/**
 * `/graphql`: negotiate, authenticate (`authenticate.ts`: the body is read only once the key is good),
 * answer (remembered or by the GraphQL route), and send it in the media type negotiated, private, with CORS.
 */
function graphqlEndpoint({ options, outage, lastUse, gate, onError, failure }: EndpointParts) {
  const { store } = options;
  const answers = createAnswerCache();
  const cors = createCors(options.corsOrigins);
  const graphql = createGraphQLRoute({ formatError: createErrorFormatter(onError), storeFailed: (error) => outage.failed(error), headers: PRIVATE_HEADERS });
  // verifyApiKey counts the verified key's use here too: off when this server records no use.
  const seen = lastUse ? (id: string) => lastUse.seen(id) : () => {};

  /** A verified key's request answered: remembered, or by the GraphQL route (then maybe remembered). */
  const answer = (request: ServiceRequest, key: VerifiedKey, body: string, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    trace.key = key;
    return answers.answer(key.validity, request, body, () => {
      trace.computed = true;
      return after(graphql(request, body, mediaType, { key, store, seen }), (answered) => {
        if (answered.operation) trace.operation = answered.operation;
        return answered;
      });
    });
  };
  const authenticate = createAuthenticate(options, gate, answer);

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
  // One gate for every route that takes a key: the same verification, throttle and usage control.
  const gate = createKeyGate(options, lastUse);
  const metrics = options.metrics && metricsRoute(options.metrics, gate);
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
  const graphql = graphqlEndpoint({ options, outage, lastUse, gate, onError, failure });
  const verifying: ForwardAuthParts | undefined = options.authEndpoint === false ? undefined : { options, gate, worked: () => outage.worked(), failure };
  const forwardAuth = verifying && createForwardAuth(verifying);
  const unkeyVerify = verifying && createUnkeyVerify({ ...verifying, lastUse });
  // `GET /` and any other path: what is here, so a browser pointed at the bare address finds its way.
  const notFound = "Not found: the GraphQL endpoint is POST /graphql" + (explorer ? " (open it in a browser for the explorer)" : "") +
    `; also ${[site && "GET /console (the web console)", "/healthz", "/readyz", metrics && "/metrics", verifying && "/auth (forward authentication)"].filter(Boolean).join(", ")}`;

  /** Routes a request; `trace` collects what the access log and the metrics are told afterwards. */
  const route = (request: ServiceRequest, pathname: string | null, trace: Trace): MaybePromise<AnyResponse> => {
    try {
      if (pathname === null) {
        return errorResponse(400, "BAD_REQUEST", "Invalid request target: send requests to /graphql", { connection: "close" });
      }
      const page = explorer?.(request, pathname) ?? site?.(request, pathname);
      if (page) return page.catch(failure);
      if (pathname === "/graphql") return graphql(request, trace);
      if (forwardAuth && isAuthPath(pathname)) return forwardAuth(request, trace);
      if (unkeyVerify && pathname === "/v2/keys.verifyKey") return unkeyVerify(request, trace);
      if (verifying && pathname === "/openapi.json") return openapiRoute(request);
      if (pathname === "/healthz") return healthz(request);
      if (pathname === "/readyz") return ready(request).catch(failure);
      if (pathname === "/metrics" && metrics) return after(metrics(request), (response) => response, failure);
      return errorResponse(404, "NOT_FOUND", notFound);
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
      if (response.status === 503 && pathname !== null && (pathname === "/graphql" || pathname === "/v2/keys.verifyKey" || isAuthPath(pathname))) observer.storeError();
      // A remembered answer skipped execution, and only a query's is remembered.
      const operation = trace.operation ?? (trace.key && !trace.computed ? "query" : "none");
      const path = pathname ?? "(invalid target)";
      observer.request({ method: request.method, path, status: response.status, ms: performance.now() - started, key: trace.key, operation });
      return response;
    });
  };
}
