/**
 * The service's runtime-neutral handler: routing (`/graphql`, `/healthz`), authentication by API key,
 * and graphql-http, the one GraphQL execution path, behind the answer cache (`answer-cache.ts`).
 * Adapters: `fetch.ts` (fetch runtimes, Deno) and `node.ts` (node:http); `serve.ts` listens.
 *
 * Every request verifies its key against the store (a few reads by known keys), so a key deleted or
 * overwritten by the CLI stops working on the very next request, for every server sharing the store,
 * and an expired one from the first request after its expiry. Each key that authenticates is noted for
 * its `lastUsedAt` (`last-use.ts`): no store write on the request path.
 */
import { createHandler as createGraphQLHttpHandler } from "graphql-http";
import { type ExecutionArgs, type ExecutionResult, type getOperationAST as graphqlGetOperationAST, type parse as graphqlParse } from "graphql";
import type { VerifiedKey } from "../store/types.ts";
import { verifyNowOf } from "../store/_verify.ts";
import { isWellFormedSecret } from "../core/secret.ts";
import { createSchema, dependsOnKeyOnly, type GraphQLContext, operationOf, parseDocument, validateDocument } from "../graphql/schema.ts";
import { ClientGone, variableLimitError } from "../graphql/limits.ts";
import { executeCompiled } from "../graphql/compiled.ts";
import { createOutageTracker } from "./outage.ts";
import { type Computed, createAnswerCache } from "./answer-cache.ts";
import { handOver, runCompiled, settledResult } from "./compiled-answer.ts";
import { startLastUse } from "./last-use.ts";
import {
  createErrorFormatter,
  errorResponse,
  inMediaType,
  internal,
  isStoreDown,
  JSON_TYPE,
  KEY_REFUSED,
  mutationOverGet,
  notAcceptable,
  storeDown,
  storeFailure,
  tooLarge,
  unauthenticated,
} from "./responses.ts";
import { APPLICATION_JSON, type GraphQLMediaType, GRAPHQL_RESPONSE, negotiate } from "./negotiate.ts";
import { createCors } from "./cors.ts";
import { type HandlerOptions, MAX_BODY_BYTES, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";
import { credential, type Params, paramsFromBody, paramsFromUrl, pathOf } from "./request.ts";
import { explorerRoute } from "./explorer-route.ts";
import { consoleRoute } from "./console.ts";
import { metricsRoute, readiness } from "./ops-routes.ts";
import type { AuthFailure, RequestEvent } from "./types.ts";

export { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";

/**
 * What graphql-http's hooks need of a request, and what they tell the answer cache: handed to graphql-http
 * as its raw request, so the hooks read it directly (no map from requests to it, whose entries the young
 * generation's collections had to sweep).
 */
interface RequestState {
  request: ServiceRequest;
  /** The execution context, made once: a compiled run's result with errors is handed over under it. */
  context: GraphQLContext;
  body: string;
  /** A POST's parameters, parsed once for both ways (undefined: not well-formed, or a GET). */
  params: Params | undefined;
  /** Set once executed: the operation depends on the caller's key alone. */
  keyOnly: boolean;
  /** What the answer is written as (see `negotiate.ts`). */
  mediaType: GraphQLMediaType;
  trace: Trace;
}

/** What the access log and the metrics learn of a request on its way (see `RequestEvent`). */
interface Trace {
  key?: { id: string; name: string };
  operation?: RequestEvent["operation"];
  /** The answer was computed, not remembered (a remembered one is always a query's). */
  computed?: boolean;
}

type MaybePromise<T> = T | Promise<T>;
const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === "function";

/** The content type graphql-http answers a result with, by the media type negotiated. */
const CONTENT_TYPE: Record<GraphQLMediaType, string> = {
  [APPLICATION_JSON]: `${APPLICATION_JSON}; charset=utf-8`,
  [GRAPHQL_RESPONSE]: `${GRAPHQL_RESPONSE}; charset=utf-8`,
};

/**
 * On every /graphql answer: it is the caller's (a key list, an error about their key), so no cache may
 * keep it, and one that does anyway must tell callers apart by their credential. A shared cache that does
 * not take `x-api-key` for one (Varnish's defaults) would otherwise serve one key's answer to others.
 */
const PRIVATE_HEADERS = { "cache-control": "no-store", vary: "Authorization, x-api-key" } as const;
/** `response` with PRIVATE_HEADERS (itself when it has them: computed answers get them as they are made). */
const privately = (response: ServiceResponse): ServiceResponse =>
  response.headers["cache-control"] === PRIVATE_HEADERS["cache-control"]
    ? response
    : { ...response, headers: Object.assign({}, response.headers, PRIVATE_HEADERS) };

/**
 * `execute`, refusing variables over the limits before any work (see `limits.ts`); a repeated query
 * runs compiled (`compiled.ts`).
 */
const boundedExecute = (args: ExecutionArgs) => {
  const handed = settledResult(args.contextValue as GraphQLContext); // run already (compiled-answer.ts)
  if (handed) return handed;
  const refused = variableLimitError(args);
  return refused ? { errors: [refused] } : executeCompiled(args);
};

/** A POST's GraphQL parameters, or undefined when they are not well-formed (graphql-http's hook says why). */
function postedParams(request: ServiceRequest, body: string): Params | undefined {
  try {
    return paramsFromBody(body, request.headers.get("content-type"));
  } catch {
    return undefined;
  }
}

/**
 * Creates the service's runtime-neutral handler (see `createHandler` in `fetch.ts` for the fetch-style one).
 */
export function createServiceHandler(options: HandlerOptions): ServiceHandler {
  const { store } = options;
  // A remembered verification comes back without a promise (fs store): a remembered answer then needs
  // none either, short of the body read (see node.ts).
  const verifyNow = verifyNowOf(store);
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const onError = options.onError ?? ((error: unknown) => console.error("service-api: internal error:", error));
  const storeStatus = options.storeStatus ?? {
    down: (line) => console.error(`service-api: error: ${line}`),
    up: (line) => console.error(`service-api: ${line}`),
  };
  const outage = createOutageTracker(storeStatus);
  const lastUse = startLastUse(store, options.recordLastUse, storeStatus);
  const metrics = options.metrics && metricsRoute(store, options.metrics, lastUse && ((id) => lastUse.seen(id)));
  const answers = createAnswerCache();
  const explorer = explorerRoute(options.explorer);
  const site = consoleRoute(options.console);
  const cors = createCors(options.corsOrigins);
  const formatError = createErrorFormatter(onError);
  const observer = options.observer;
  const ready = readiness(store);
  const refuse = (reason: AuthFailure, message: string) => {
    observer?.authFailed(reason);
    return unauthenticated(message);
  };
  /** The 401 for a well-formed secret `verify` refused; a retired one is told to the observer too. */
  const refused = (request: ServiceRequest, secret: string) =>
    store.refusal(secret).then(({ reason, retired }) => {
      if (retired) observer?.retiredKeyUsed?.({ ...retired, address: request.remoteAddress });
      return refuse(reason, KEY_REFUSED[reason]);
    });

  const schema = createSchema();
  const graphql = createGraphQLHttpHandler<RequestState, undefined, GraphQLContext>({
    schema,
    parse: ((source: string | { body: string }) =>
      parseDocument(typeof source === "string" ? source : source.body)) as typeof graphqlParse,
    validate: validateDocument,
    // Remembered per cached document (documents.ts): graphql-http and onOperation both ask.
    getOperationAST: operationOf as typeof graphqlGetOperationAST,
    execute: boundedExecute,
    context: (req) => req.raw.context,
    parseRequestParams: (req) => {
      const { request, body, params } = req.raw;
      if (params) return params;
      try {
        return request.method === "GET"
          ? paramsFromUrl(new URL(request.url, "http://localhost"))
          : paramsFromBody(body, request.headers.get("content-type"));
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 415) {
          const body = JSON.stringify({ errors: [{ message: (error as Error).message, extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } }] });
          return [body, { status, statusText: "Unsupported Media Type", headers: { "content-type": JSON_TYPE } }];
        }
        throw error;
      }
    },
    onOperation: (req, args, result) => {
      // A store failure inside a resolver is the server's trouble, not a partial answer: say 503.
      const failure = storeFailure(result.errors);
      if (failure) {
        outage.failed(failure);
        const { status, headers, body } = storeDown();
        return [body, { status, statusText: "Service Unavailable", headers }];
      }
      const state = req.raw;
      // A request error (variables that fail coercion or the limits: no "data") is a 400 for clients
      // that accept graphql-response+json, as the GraphQL-over-HTTP spec requires.
      if (!("data" in result) && result.errors?.length && state.mediaType === GRAPHQL_RESPONSE) {
        const body = JSON.stringify({ errors: result.errors.map(formatError) });
        return [body, { status: 400, statusText: "Bad Request", headers: { "content-type": `${GRAPHQL_RESPONSE}; charset=utf-8` } }];
      }
      const operation = operationOf(args.document, args.operationName);
      if (operation) state.trace.operation = operation.operation;
      state.keyOnly = !!operation && dependsOnKeyOnly(args.document, operation);
      // Without errors graphql-http's serializer is JSON.stringify with a replacer that only rewrites
      // Error objects, which an error-free result holds none of: the same bytes, without the replacer's
      // call per value. Status and content type as graphql-http's `makeResponse` sets them.
      if (!result.errors) {
        return [JSON.stringify(result), { status: 200, statusText: "OK", headers: { "content-type": CONTENT_TYPE[state.mediaType] } }];
      }
    },
    formatError,
  });

  const handleGraphQL = (request: ServiceRequest, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (request.method !== "GET" && request.method !== "POST") {
      return errorResponse(405, "METHOD_NOT_ALLOWED", "Use POST (or GET for queries) on /graphql", { allow: "GET, POST" });
    }
    if (Number(request.headers.get("content-length") ?? 0) > limit) return tooLarge(limit);
    const found = credential(request.headers);
    if ("problem" in found) return refuse(found.problem.startsWith("Missing") ? "missing" : "malformed", found.problem);
    // The checksum catches mistyped and made-up keys without touching the store.
    if (!isWellFormedSecret(found.secret)) {
      return refuse("malformed", "Malformed API key: it should start with 'sapi_' and be copied completely");
    }
    const key = verifyNow(found.secret, request.receivedAt);
    return isPromise(key)
      ? key.then((key) => authenticated(request, found.secret, key, mediaType, trace))
      : authenticated(request, found.secret, key, mediaType, trace);
  };

  const authenticated = (
    request: ServiceRequest,
    secret: string,
    key: VerifiedKey | null,
    mediaType: GraphQLMediaType,
    trace: Trace,
  ): MaybePromise<ServiceResponse> => {
    if (!key) {
      // Only now, for the message: a refused key costs a second read, and never a write.
      return refused(request, secret);
    }
    lastUse?.seen(key.id); // remembered answers included: the key authenticated this request
    trace.key = key;
    const body = request.method === "POST" ? request.body() : "";
    if (!isPromise(body)) return answer(request, key, body, mediaType, trace);
    // The body came after the head, maybe much later (up to the request timeout): the key is checked
    // again once it is in, with a revision read of its own, so a revocation or an update finished before
    // the body was sent applies to it.
    return body.then((body) => {
      if (body === null) return tooLarge(limit);
      const again = verifyNow(secret);
      const go = (key: VerifiedKey | null) => {
        if (!key) return refused(request, secret);
        trace.key = key;
        return answer(request, key, body, mediaType, trace);
      };
      return isPromise(again) ? again.then(go) : go(again);
    });
  };

  const answer = (request: ServiceRequest, key: VerifiedKey, body: string | null, mediaType: GraphQLMediaType, trace: Trace): MaybePromise<ServiceResponse> => {
    if (body === null) return tooLarge(limit);
    return answers.answer(key.validity, request, body, () => {
      trace.computed = true;
      const context: GraphQLContext = { key, store };
      const params = request.method === "POST" ? postedParams(request, body) : undefined;
      const state: RequestState = { request, context, body, params, keyOnly: false, mediaType, trace };
      // A query already compiled skips graphql-http when it ends without errors (compiled-answer.ts).
      const run = params && runCompiled(schema, params, context);
      if (run) {
        const settle = (result: ExecutionResult): Promise<Computed> | Computed => {
          if (result.errors) return handOver(context, result), viaGraphqlHttp(state);
          trace.operation = "query";
          const response = { status: 200, headers: { "content-type": CONTENT_TYPE[mediaType], ...PRIVATE_HEADERS }, body: JSON.stringify(result) };
          return { response, keyOnly: run.keyOnly };
        };
        return isPromise(run.result) ? run.result.then(settle) : settle(run.result);
      }
      return viaGraphqlHttp(state);
    });
  };

  /** The answer by graphql-http's handler, with our hooks (above). */
  const viaGraphqlHttp = (state: RequestState): Promise<Computed> => {
    const { request, mediaType, body } = state;
    return graphql({
      method: request.method,
      url: request.url,
      // graphql-http ignores q-values: it is told the type already chosen.
      headers: { get: (name) => (name === "accept" ? mediaType : request.headers.get(name)) },
      body,
      raw: state,
      context: undefined,
    }).then(([text, init]) =>
      // graphql-http's 405 (a mutation over GET) has no content type and no code.
      init.status === 405
        ? { response: mutationOverGet(), keyOnly: false }
        : { response: { status: init.status, headers: { ...init.headers, ...PRIVATE_HEADERS }, body: text }, keyOnly: state.keyOnly }
    );
  };

  /** The answer to a failure no one else answered: 503 for the store, 400 for a client gone, else 500. */
  const failure = (error: unknown): ServiceResponse => {
    if (isStoreDown(error)) return outage.failed(error), storeDown();
    if (error instanceof ClientGone) return errorResponse(400, "BAD_REQUEST", error.message, { connection: "close" });
    onError(error);
    return internal();
  };

  /** What /graphql answers, in the media type negotiated and with CORS, once `handleGraphQL` has answered. */
  const finishGraphQL = (request: ServiceRequest, response: ServiceResponse, mediaType: GraphQLMediaType | null): ServiceResponse => {
    if (mediaType !== null) response = inMediaType(response, mediaType);
    response = privately(response);
    return cors ? cors.decorate(request, response) : response;
  };
  const worked = (response: ServiceResponse) => {
    if (response.status !== 503) outage.worked();
    return response;
  };

  /**
   * Routes a request; `trace` collects what the access log and the metrics are told afterwards. Answers
   * without a promise when nothing on the way waited (a remembered answer, the fs store).
   */
  const route = (request: ServiceRequest, pathname: string | null, trace: Trace): MaybePromise<ServiceResponse<string | Uint8Array<ArrayBuffer>>> => {
    try {
      if (pathname === null) {
        return errorResponse(400, "BAD_REQUEST", "Invalid request target: send requests to /graphql", { connection: "close" });
      }
      const page = explorer?.(request, pathname) ?? site?.(request, pathname);
      if (page) return page.catch(failure);
      if (pathname === "/graphql") {
        if (cors && request.method === "OPTIONS") return cors.preflight(request);
        const mediaType = negotiate(request.headers.get("accept"));
        let response: MaybePromise<ServiceResponse>;
        try {
          response = mediaType === null ? notAcceptable() : handleGraphQL(request, mediaType, trace);
        } catch (error) {
          return finishGraphQL(request, failure(error), mediaType);
        }
        if (isPromise(response)) {
          return response.then(
            (response) => finishGraphQL(request, worked(response), mediaType),
            (error) => finishGraphQL(request, failure(error), mediaType),
          );
        }
        return finishGraphQL(request, worked(response), mediaType);
      }
      if (pathname === "/healthz") {
        if (request.method !== "GET" && request.method !== "HEAD") {
          return errorResponse(405, "METHOD_NOT_ALLOWED", "Use GET on /healthz", { allow: "GET, HEAD" });
        }
        return {
          status: 200,
          headers: { "content-type": JSON_TYPE },
          body: request.method === "HEAD" ? null : JSON.stringify({ status: "ok" }),
        };
      }
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
  if (!observer) {
    return Object.assign((request: ServiceRequest) => route(request, pathOf(request.url), {}), { close });
  }
  return Object.assign((request: ServiceRequest) => {
    const started = performance.now();
    const pathname = pathOf(request.url);
    const trace: Trace = {};
    const observe = (response: ServiceResponse<string | Uint8Array<ArrayBuffer>>) => {
      if (response.status === 503 && pathname === "/graphql") observer.storeError();
      // A remembered answer skipped execution, and only a query's is remembered.
      const operation = trace.operation ?? (trace.key && !trace.computed ? "query" : "none");
      const path = pathname ?? "(invalid target)";
      observer.request({ method: request.method, path, status: response.status, ms: performance.now() - started, key: trace.key, operation });
      return response;
    };
    const response = route(request, pathname, trace);
    return isPromise(response) ? response.then(observe) : observe(response);
  }, { close });
}
