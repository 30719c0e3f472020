/**
 * The HTTP face of the service: `POST /graphql` (and `GET` for queries) authenticated by an API key,
 * and `GET /healthz`. `createHandler` is a fetch-style `(Request) => Promise<Response>` that runs on
 * any runtime; `serve` listens with `Deno.serve` under Deno and `node:http` under Node.
 *
 * Every request verifies its key against the store (a few reads by known keys), so a key deleted or
 * overwritten by the CLI stops working on the very next request, for every server sharing the store.
 */
import { createHandler as createGraphQLHttpHandler } from "graphql-http";
import { execute, type ExecutionArgs, getOperationAST, GraphQLError, type parse as graphqlParse } from "graphql";
import type { ApiKeyInfo } from "../core/model.ts";
import { isServiceError, ServiceError } from "../core/errors.ts";
import { isWellFormedSecret, redactSecrets } from "../core/secret.ts";
import type { KeyStore } from "../store/key-store.ts";
import { createSchema, dependsOnKeyOnly, type GraphQLContext, parseDocument, validateDocument } from "../graphql/schema.ts";
import { createLru } from "../core/_lru.ts";
import { ClientGone, connectionLimits, defaultMaxConnections, variableLimitError } from "../graphql/limits.ts";
import { createOutageTracker, type StoreStatusLog } from "./outage.ts";
export { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";
import {
  type FetchHandler,
  type HandlerOptions,
  MAX_BODY_BYTES,
  type ServiceHandler,
  type ServiceRequest,
  type ServiceResponse,
} from "./types.ts";
import { acceptsPlainJson, credential, paramsFromBody, paramsFromJson, paramsFromUrl, pathOf, readFetchBody } from "./request.ts";

const JSON_TYPE = "application/json; charset=utf-8";

/** The `{"errors":[{message, extensions:{code}}]}` body every non-GraphQL failure uses. */
function errorResponse(status: number, code: string, message: string, headers: Record<string, string> = {}): ServiceResponse {
  return {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
    body: JSON.stringify({ errors: [{ message, extensions: { code } }] }),
  };
}

const unauthenticated = (message: string) =>
  errorResponse(401, "UNAUTHENTICATED", message, { "www-authenticate": "Bearer" });
const tooLarge = (limit: number) =>
  errorResponse(413, "PAYLOAD_TOO_LARGE", `Request body is larger than the limit of ${limit} bytes`, { connection: "close" });
const STORE_DOWN_MESSAGE = "The key store is unavailable; try again later";
const storeDown = () => errorResponse(503, "STORE_UNAVAILABLE", STORE_DOWN_MESSAGE, { "retry-after": "1" });
const internal = () => errorResponse(500, "INTERNAL", "Internal server error");

interface RequestState {
  key: ApiKeyInfo;
  body: string;
}

/** Remembered answers (see `answers` in `createServiceHandler`): at most this many, this large. */
const ANSWER_CACHE = { entries: 1000, maxRequestLength: 2048, maxResponseLength: 8192 };

/** The code and public message of a ServiceError; store trouble never leaks paths or hosts. */
function publicError(error: ServiceError): { code: string; message: string } {
  if (error.code === "STORE_UNAVAILABLE") return { code: error.code, message: STORE_DOWN_MESSAGE };
  if (error.code === "INTERNAL") return { code: error.code, message: "Internal server error" };
  return { code: error.code, message: error.message };
}

const isStoreDown = (error: unknown) => isServiceError(error) && error.code === "STORE_UNAVAILABLE";
/** The store failure among a result's errors, if any. */
const storeFailure = (errors: readonly GraphQLError[] | undefined) =>
  errors?.find((e) => isStoreDown(e.originalError))?.originalError;

/**
 * Creates the service's runtime-neutral handler (see `createHandler` for the fetch-style one).
 */
export function createServiceHandler(options: HandlerOptions): ServiceHandler {
  const { store } = options;
  const fastPath = options.fastPath ?? true;
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const onError = options.onError ?? ((error: unknown) => console.error("service-api: internal error:", error));
  const state = new WeakMap<ServiceRequest, RequestState>();
  const stateOf = (raw: unknown): RequestState => state.get(raw as ServiceRequest)!;
  const outage = createOutageTracker(options.storeStatus ?? {
    down: (line) => console.error(`service-api: error: ${line}`),
    up: (line) => console.error(`service-api: ${line}`),
  });

  /**
   * GraphQL errors as clients see them: a stable `extensions.code`, nothing internal, and no secret.
   * Every GraphQL error of both paths leaves through here, so this is where `sapi_…` tokens that a
   * message quotes from the document, the variables or the body (parse errors, "Variable $x got
   * invalid value …", JSON syntax errors) are elided.
   */
  const formatError = (error: Readonly<GraphQLError | Error>): GraphQLError | Error => {
    const shown = classify(error);
    const message = redactSecrets(shown.message);
    if (message === shown.message) return shown;
    const { nodes, source, positions, path, extensions } = shown as GraphQLError;
    return new GraphQLError(message, { nodes, source, positions, path, extensions });
  };
  const classify = (error: Readonly<GraphQLError | Error>): GraphQLError | Error => {
    if (!(error instanceof GraphQLError)) {
      return new GraphQLError(error.message, { extensions: { code: "BAD_REQUEST" } });
    }
    if (error.extensions?.code) return error;
    const original = error.originalError;
    const located = { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path };
    if (isServiceError(original)) {
      const { code, message } = publicError(original);
      if (code === "INTERNAL") onError(original);
      return new GraphQLError(message, { ...located, extensions: { code } });
    }
    if (original && !(original instanceof GraphQLError)) {
      onError(original);
      return new GraphQLError("Internal server error", { ...located, extensions: { code: "INTERNAL" } });
    }
    return new GraphQLError(error.message, { ...located, extensions: { code: "BAD_USER_INPUT" } });
  };

  /** `execute`, refusing variables over the limits before any work (see `_limits.ts`). */
  const boundedExecute = (args: ExecutionArgs) => {
    const refused = variableLimitError(args);
    return refused ? { errors: [refused] } : execute(args);
  };

  const schema = createSchema();
  const graphql = createGraphQLHttpHandler<ServiceRequest, undefined, GraphQLContext>({
    schema,
    parse: ((source: string | { body: string }) =>
      parseDocument(typeof source === "string" ? source : source.body)) as typeof graphqlParse,
    validate: validateDocument,
    execute: boundedExecute,
    context: (req) => ({ key: stateOf(req.raw).key, store }),
    parseRequestParams: (req) => {
      const raw = req.raw;
      try {
        return raw.method === "GET"
          ? paramsFromUrl(new URL(raw.url, "http://localhost"))
          : paramsFromBody(stateOf(raw).body, raw.headers.get("content-type"));
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 415) {
          const body = JSON.stringify({ errors: [{ message: (error as Error).message, extensions: { code: "UNSUPPORTED_MEDIA_TYPE" } }] });
          return [body, { status, statusText: "Unsupported Media Type", headers: { "content-type": JSON_TYPE } }];
        }
        throw error;
      }
    },
    onOperation: (_req, _args, result) => {
      // A store failure inside a resolver is the server's trouble, not a partial answer: say 503.
      const failure = storeFailure(result.errors);
      if (failure) {
        outage.failed(failure);
        const { status, headers, body } = storeDown();
        return [body, { status, statusText: "Service Unavailable", headers }];
      }
    },
    formatError,
  });

  /**
   * The everyday request, prepared for execution without graphql-http's per-request steps (Accept
   * negotiation, hooks, a JSON replacer that visits every value of the result), which cost more
   * than executing a small query: a JSON body whose document is already parsed and validated (both
   * are cached) and names one query or mutation. Everything else, and every way a request can be
   * wrong before execution, is left to graphql-http (undefined), which answers it in full.
   * `tests/server.test.ts` checks that both paths give the same answers.
   */
  const prepare = (body: string, key: ApiKeyInfo): (ExecutionArgs & { keyOnly: boolean }) | undefined => {
    try {
      const { query, variables, operationName } = paramsFromJson(body);
      const document = parseDocument(query);
      if (validateDocument(schema, document).length > 0) return;
      const operation = getOperationAST(document, operationName);
      if (!operation || operation.operation === "subscription") return;
      const keyOnly = dependsOnKeyOnly(document, operation);
      return { schema, document, variableValues: variables, operationName, contextValue: { key, store }, keyOnly };
    } catch {
      return;
    }
  };

  /** The response graphql-http (with the `onOperation` above) would give for an execution result. */
  const respond = (result: Awaited<ReturnType<typeof execute>>): ServiceResponse => {
    const failure = storeFailure(result.errors);
    if (failure) return outage.failed(failure), storeDown();
    const body = JSON.stringify(result.errors ? { ...result, errors: result.errors.map(formatError) } : result);
    return { status: 200, headers: { "content-type": JSON_TYPE }, body };
  };

  /**
   * Answers to queries that depend on the caller's key alone (see `dependsOnKeyOnly`), by request
   * body, each tagged with the verified key it was computed for. `store.verify` returns the same key
   * object until the key may have changed (any revocation or update anywhere, or its 5 s expiry), so
   * an answer is reused exactly while its key's verification stands and is never staler than that.
   */
  const answers = createLru<string, { key: ApiKeyInfo; response: ServiceResponse }>(ANSWER_CACHE.entries);

  const answerFast = async (body: string, key: ApiKeyInfo): Promise<ServiceResponse | undefined> => {
    const remembered = body.length <= ANSWER_CACHE.maxRequestLength ? `${key.id}\n${body}` : undefined;
    const hit = remembered === undefined ? undefined : answers.get(remembered);
    if (hit?.key === key) return hit.response;
    const prepared = prepare(body, key);
    if (!prepared) return;
    const response = respond(await boundedExecute(prepared));
    if (remembered !== undefined && prepared.keyOnly && response.body!.length <= ANSWER_CACHE.maxResponseLength) {
      Object.freeze(response.headers);
      answers.set(remembered, { key, response: Object.freeze(response) });
    }
    return response;
  };

  const handleGraphQL = async (request: ServiceRequest): Promise<ServiceResponse> => {
    if (request.method !== "GET" && request.method !== "POST") {
      return errorResponse(405, "METHOD_NOT_ALLOWED", "Use POST (or GET for queries) on /graphql", { allow: "GET, POST" });
    }
    if (Number(request.headers.get("content-length") ?? 0) > limit) return tooLarge(limit);
    const found = credential(request.headers);
    if ("problem" in found) return unauthenticated(found.problem);
    // The checksum catches mistyped and made-up keys without touching the store.
    if (!isWellFormedSecret(found.secret)) {
      return unauthenticated("Malformed API key: it should start with 'sapi_' and be copied completely");
    }
    const key = await store.verify(found.secret);
    if (!key) return unauthenticated("Invalid or revoked API key");
    const body = request.method === "POST" ? await request.body() : "";
    if (body === null) return tooLarge(limit);
    if (fastPath && request.method === "POST" && acceptsPlainJson(request.headers)) {
      const answer = await answerFast(body, key);
      if (answer) return answer;
    }
    state.set(request, { key, body });
    const [text, init] = await graphql({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: body,
      raw: request,
      context: undefined,
    });
    return { status: init.status, headers: { ...init.headers }, body: text };
  };

  return async (request) => {
    try {
      const pathname = pathOf(request.url);
      if (pathname === null) {
        return errorResponse(400, "BAD_REQUEST", "Invalid request target: send requests to /graphql", { connection: "close" });
      }
      if (pathname === "/graphql") {
        const response = await handleGraphQL(request);
        if (response.status !== 503) outage.worked();
        return response;
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
      return errorResponse(404, "NOT_FOUND", "Not found: the GraphQL endpoint is POST /graphql");
    } catch (error) {
      if (isStoreDown(error)) return outage.failed(error), storeDown();
      if (error instanceof ClientGone) return errorResponse(400, "BAD_REQUEST", error.message, { connection: "close" });
      onError(error);
      return internal();
    }
  };
}

/**
 * Creates the service's fetch-style request handler, for `Deno.serve`, other fetch runtimes and tests.
 *
 * @example
 * const handler = createHandler({ store: createKeyStore() });
 * const response = await handler(new Request("http://x/healthz")); // 200
 */
export function createHandler(options: HandlerOptions): FetchHandler {
  const handle = createServiceHandler(options);
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  return async (request) => {
    const response = await handle({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: () => readFetchBody(request, limit),
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

// ---- Listening: Deno.serve under Deno, node:http under Node. ----

export interface ServeOptions extends HandlerOptions {
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 3001); 0 picks a free one, see the returned `port`. */
  port?: number;
  /** How long `close()` waits for requests in flight before cutting connections (default 10 s). */
  shutdownTimeoutMs?: number;
  /** Node: a connection must send its request headers within this time (default 10 s), else 408 and closed. */
  headersTimeoutMs?: number;
  /** Node: the whole request, body included, must arrive within this time (default 30 s), else 408. */
  requestTimeoutMs?: number;
  /** Node: an idle keep-alive connection is closed after this time (default 5 s). */
  keepAliveTimeoutMs?: number;
  /**
   * Node: open connections at most (default half the soft limit on open files, 16 to 10,000; 1,000
   * where that limit is unknown). At the cap a new connection replaces the oldest idle one.
   */
  maxConnections?: number;
}

export interface RunningServer {
  /** `http://host:port`, with the port actually bound. */
  url: string;
  host: string;
  port: number;
  /** Stops accepting connections, lets requests in flight finish, then resolves. */
  close(): Promise<void>;
}

interface DenoServer {
  addr: { hostname: string; port: number };
  shutdown(): Promise<void>;
  finished: Promise<void>;
}
interface DenoLike {
  serve(
    options: { hostname: string; port: number; onListen?: () => void },
    handler: (request: Request) => Promise<Response>,
  ): DenoServer;
}

const urlHost = (host: string) => (host.includes(":") ? `[${host}]` : host);

/**
 * Listens for HTTP requests with the service's handler.
 *
 * @example
 * const server = await serve({ store: createKeyStore(), port: 0 });
 * console.log(server.url); // http://127.0.0.1:54321
 * await server.close();
 */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 3001;
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  if (deno) {
    const server = deno.serve({ hostname: host, port, onListen: () => {} }, createHandler(options));
    const bound = server.addr.port;
    return { url: `http://${urlHost(host)}:${bound}`, host, port: bound, close: () => server.shutdown() };
  }
  const { listenNode } = await import("./node.ts");
  const limits = connectionLimits(options);
  return listenNode(createServiceHandler(options), {
    host,
    port,
    maxBodyBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? 10_000,
    ...limits,
    maxConnections: limits.maxConnections ?? await defaultMaxConnections(),
    onAcceptError: (error) =>
      (options.onError ?? console.error)(
        new Error(`cannot accept connections (${error.message}): lower maxConnections or raise the open-file limit`),
      ),
  });
}
