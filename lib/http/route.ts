/**
 * The GraphQL-over-HTTP route of an authenticated request: read the parameters, prepare the query
 * (`graphql/prepared.ts`: parsed, validated and compiled once per query text), check what the request
 * may ask, execute, and write the answer in the media type negotiated. Statuses are the GraphQL-over-HTTP
 * spec's (graphql-http's `serverAudits` hold them in tests/http/graphql-over-http-audits.test.ts): a request error (no
 * `data`) is a 400 under `application/graphql-response+json` and a 200 under `application/json`; a result
 * with `data` is a 200. Returns without a promise when execution waited on nothing.
 */
import { type ExecutionResult, GraphQLError, type OperationTypeNode } from "graphql";
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { prepare } from "../graphql/prepared.ts";
import type { GraphQLContext } from "../graphql/schema.ts";
import { REQUEST_BUDGET } from "../graphql/request-budget.ts";
import { APPLICATION_JSON, type GraphQLMediaType, GRAPHQL_RESPONSE } from "./negotiate.ts";
import { type Params, paramsFromBody, paramsFromUrl } from "./request.ts";
import { errorResponse, mutationOverGet, storeDown, storeFailure } from "./responses.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

/** An answer, and what the answer cache and the access log learn of it. */
export interface GraphQLAnswer {
  response: ServiceResponse;
  /** The operation depends on the caller's key alone: its 200 may be remembered. */
  keyOnly: boolean;
  /** The type of the operation executed, if one was. */
  operation?: OperationTypeNode;
}

export interface RouteOptions {
  /** Turns each error into what the client sees (`createErrorFormatter`). */
  formatError: (error: Readonly<GraphQLError | Error>) => GraphQLError | Error;
  /** Told of a store failure inside a resolver (the answer is then a 503, never a partial result). */
  storeFailed: (error: unknown) => void;
  /** Headers every answer computed here carries besides its content type. */
  headers: Readonly<Record<string, string>>;
}

export type GraphQLRoute = (request: ServiceRequest, body: string, mediaType: GraphQLMediaType, context: GraphQLContext) => MaybePromise<GraphQLAnswer>;

const answerTooLarge = () =>
  new GraphQLError(
    `The answer would be longer than ${REQUEST_BUDGET.answerChars} characters; ask for fewer keys (pages of apiKeys with first and after) or fewer fields`,
    { extensions: { code: "INVALID_INPUT" } },
  );

/** `result` as JSON, or undefined when it is longer than the answer's bound (or than a string may be). */
function bounded(result: object): string | undefined {
  try {
    const body = JSON.stringify(result);
    return body.length > REQUEST_BUDGET.answerChars ? undefined : body;
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

/** @example const route = createGraphQLRoute({ formatError, storeFailed, headers: {} }); await route(request, body, "application/json", { key, store }); */
export function createGraphQLRoute({ formatError, storeFailed, headers }: RouteOptions): GraphQLRoute {
  // Shared by every answer (no one writes into a response's headers: what adds to them copies them).
  const headersOf: Record<GraphQLMediaType, Record<string, string>> = {
    [APPLICATION_JSON]: Object.freeze({ "content-type": `${APPLICATION_JSON}; charset=utf-8`, ...headers }),
    [GRAPHQL_RESPONSE]: Object.freeze({ "content-type": `${GRAPHQL_RESPONSE}; charset=utf-8`, ...headers }),
  };
  const json = (status: number, mediaType: GraphQLMediaType, body: string): ServiceResponse => ({ status, headers: headersOf[mediaType], body });
  /** Errors and nothing executed: 400 for graphql-response+json, 200 for application/json. */
  const requestErrors = (errors: readonly GraphQLError[], mediaType: GraphQLMediaType): GraphQLAnswer => ({
    response: json(mediaType === GRAPHQL_RESPONSE ? 400 : 200, mediaType, JSON.stringify({ errors: errors.map(formatError) })),
    keyOnly: false,
  });

  /** The answer to an executed operation's result; one over `REQUEST_BUDGET.answerChars` is refused. */
  const written = (result: ExecutionResult, mediaType: GraphQLMediaType, keyOnly: boolean, operation: OperationTypeNode): GraphQLAnswer => {
    const failure = storeFailure(result.errors);
    if (failure) return storeFailed(failure), { response: storeDown(), keyOnly: false, operation };
    if (!result.errors) {
      const body = bounded(result);
      return body === undefined ? { ...tooBig(mediaType), operation } : { response: json(200, mediaType, body), keyOnly, operation };
    }
    if (!("data" in result)) return { ...requestErrors(result.errors, mediaType), operation };
    const body = bounded({ ...result, errors: result.errors.map(formatError) });
    return body === undefined ? { ...tooBig(mediaType), operation } : { response: json(200, mediaType, body), keyOnly, operation };
  };
  const tooBig = (mediaType: GraphQLMediaType) => requestErrors([answerTooLarge()], mediaType);

  return (request, body, mediaType, context) => {
    let params: Params;
    try {
      params = request.method === "GET"
        ? paramsFromUrl(new URL(request.url, "http://localhost"))
        : paramsFromBody(body, request.headers.get("content-type"));
    } catch (error) {
      const { status, message } = error as Error & { status?: number };
      if (status === 415) return { response: errorResponse(415, "UNSUPPORTED_MEDIA_TYPE", message), keyOnly: false };
      return { response: json(400, mediaType, JSON.stringify({ errors: [formatError(error as Error)] })), keyOnly: false };
    }
    const prepared = prepare(params.query, params.operationName);
    const { errors, kind, keyOnly } = prepared;
    if (errors || !kind) return requestErrors(errors ?? [], mediaType);
    if (kind === "subscription") return requestErrors([new GraphQLError("Subscriptions are not supported")], mediaType);
    if (kind === "mutation" && request.method === "GET") return { response: mutationOverGet(), keyOnly: false };
    return after(prepared.execute(params.variables, context), (result) => written(result, mediaType, keyOnly, kind));
  };
}

