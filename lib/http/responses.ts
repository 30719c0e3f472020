/**
 * What the service answers when something is wrong: the JSON error bodies of every non-GraphQL
 * failure, their statuses, and the GraphQL error formatting that keeps internals and secrets out.
 */
import { GraphQLError } from "graphql";
import { isServiceError, type ServiceError } from "../core/errors.ts";
import { redactSecrets } from "../core/secret.ts";
import type { ServiceResponse } from "./types.ts";

/** The content type of every JSON answer the service writes itself. */
export const JSON_TYPE = "application/json; charset=utf-8";

/** The `{"errors":[{message, extensions:{code}}]}` body every non-GraphQL failure uses. */
export function errorResponse(status: number, code: string, message: string, headers: Record<string, string> = {}): ServiceResponse {
  return {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
    body: JSON.stringify({ errors: [{ message, extensions: { code } }] }),
  };
}

/** 401 with the `www-authenticate` challenge; a disabled key's has the code KEY_DISABLED. */
export const unauthenticated = (message: string, reason?: string): ServiceResponse =>
  errorResponse(401, reason === "disabled" ? "KEY_DISABLED" : "UNAUTHENTICATED", message, { "www-authenticate": "Bearer" });
/** The message of a 401 for a well-formed key `verify` refused, by `KeyStore.refusal`'s reason. */
export const KEY_REFUSED = {
  unknown: "Invalid or revoked API key",
  expired: "Expired API key: its expiry (or the grace period after it was replaced) has passed; ask for a new key",
  disabled: "Disabled API key: it was disabled (apikey --update --disable) and is refused until it is enabled again",
} as const;
/**
 * 403 for a good key from an address outside its IP allow-list; `address` is the one the service judged
 * (behind a trusted proxy, the forwarded client's), so an operator can see what to add.
 */
export const notAllowedFrom = (address: string): ServiceResponse =>
  errorResponse(403, "IP_NOT_ALLOWED", `This API key is not allowed from ${address}: the address is outside its IP allow-list (apikey --allow-from)`);
/** 413; the connection is closed, as the rest of the body is not read. */
export const tooLarge = (limit: number): ServiceResponse =>
  errorResponse(413, "PAYLOAD_TOO_LARGE", `Request body is larger than the limit of ${limit} bytes`, { connection: "close" });
const STORE_DOWN_MESSAGE = "The key store is unavailable; try again later";
/** 503 for any store failure: the server's trouble, never a partial answer. */
export const storeDown = (): ServiceResponse =>
  errorResponse(503, "STORE_UNAVAILABLE", STORE_DOWN_MESSAGE, { "retry-after": "1" });
/**
 * 406: the client accepts neither GraphQL media type (a browser's `Accept: text/html` when the explorer
 * is off). The body is JSON all the same, so that the reason can be read.
 */
export const notAcceptable = (): ServiceResponse =>
  errorResponse(
    406,
    "NOT_ACCEPTABLE",
    "Not acceptable: /graphql answers application/graphql-response+json or application/json; send one of them in Accept",
    { accept: "application/graphql-response+json, application/json" },
  );
/** 405 for a mutation sent with GET. */
export const mutationOverGet = (): ServiceResponse =>
  errorResponse(405, "METHOD_NOT_ALLOWED", "Mutations need POST: send them in a POST /graphql body", { allow: "POST" });
/** 500, saying nothing of the cause (that goes to `onError`). */
export const internal = (): ServiceResponse => errorResponse(500, "INTERNAL", "Internal server error");

/**
 * On every /graphql answer: it is the caller's (a key list, an error about their key), so no cache may
 * keep it, and one that does anyway must tell callers apart by their credential. A shared cache that does
 * not take `x-api-key` for one (Varnish's defaults) would otherwise serve one key's answer to others.
 */
export const PRIVATE_HEADERS = { "cache-control": "no-store", vary: "Authorization, x-api-key" } as const;
/** `response` with PRIVATE_HEADERS (itself when it has them: the GraphQL route, `route.ts`, writes them in). */
export const privately = <R extends ServiceResponse>(response: R): R | ServiceResponse =>
  response.headers["cache-control"] === PRIVATE_HEADERS["cache-control"]
    ? response
    : { status: response.status, headers: Object.assign({}, response.headers, PRIVATE_HEADERS), body: response.body };

/**
 * `base` with header lines `added` (flat: name, value, name, value) for this request alone: a rate-limited
 * key's `RateLimit` headers (`rate-limit.ts`), whose values change on every request while `base` may be a
 * remembered answer. `headers` holds all of them, as on any answer; `base` and `added` let node.ts write
 * the head it keeps for a remembered `base` and then the added lines, without building a head per request.
 * A spread copy is a plain response (its headers may have changed), so only this object says so.
 */
export class AmendedResponse implements ServiceResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string | null;
  readonly #base: ServiceResponse;
  readonly #added: readonly string[];
  /** Use `amended`, which checks that no added name is already in `base`. */
  private constructor(base: ServiceResponse, added: readonly string[], headers: Record<string, string>) {
    this.status = base.status;
    this.headers = headers;
    this.body = base.body;
    this.#base = base;
    this.#added = added;
  }
  get base(): ServiceResponse {
    return this.#base;
  }
  get added(): readonly string[] {
    return this.#added;
  }
  /** `base` with `added`: an AmendedResponse, or a plain copy when a name would replace one of `base`'s. */
  static of(base: ServiceResponse, added: readonly string[]): ServiceResponse {
    const headers = Object.assign({}, base.headers);
    let replaces = false;
    for (let i = 0; i < added.length; i += 2) {
      if (added[i] in headers) replaces = true;
      headers[added[i]] = added[i + 1];
    }
    return replaces ? { status: base.status, headers, body: base.body } : new AmendedResponse(base, added, headers);
  }
}
/** `base` with the header lines `added` (name, value, …) added: see `AmendedResponse`. */
export const amended = (base: ServiceResponse, added: readonly string[]): ServiceResponse => AmendedResponse.of(base, added);

/** `response` as `mediaType` when it is one the service wrote as JSON (a copy: answers may be cached). */
export function inMediaType(response: ServiceResponse, mediaType: string): ServiceResponse {
  const type = response.headers["content-type"];
  if (type === undefined || !type.startsWith("application/json") || mediaType === "application/json") return response;
  return { ...response, headers: { ...response.headers, "content-type": `${mediaType}; charset=utf-8` } };
}

/** The code and public message of a ServiceError; store trouble never leaks paths or hosts. */
function publicError(error: ServiceError): { code: string; message: string } {
  if (error.code === "STORE_UNAVAILABLE") return { code: error.code, message: STORE_DOWN_MESSAGE };
  if (error.code === "INTERNAL") return { code: error.code, message: "Internal server error" };
  return { code: error.code, message: error.message };
}

/** True for the store's "unavailable" error. */
export const isStoreDown = (error: unknown): boolean => isServiceError(error) && error.code === "STORE_UNAVAILABLE";
/** The store failure among a result's errors, if any. */
export const storeFailure = (errors: readonly GraphQLError[] | undefined): unknown =>
  errors?.find((e) => isStoreDown(e.originalError))?.originalError;

/**
 * GraphQL errors as clients see them: a stable `extensions.code`, nothing internal, and no secret.
 * Every GraphQL error leaves through here, so this is where `sapi_…` tokens that a message quotes
 * from the document, the variables or the body (parse errors, "Variable $x got invalid value …",
 * JSON syntax errors) are elided. Failures that are not the client's fault go to `onError`.
 */
export function createErrorFormatter(onError: (error: unknown) => void) {
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
  return (error: Readonly<GraphQLError | Error>): GraphQLError | Error => {
    const shown = classify(error);
    const message = redactSecrets(shown.message);
    if (message === shown.message) return shown;
    const { nodes, source, positions, path, extensions } = shown as GraphQLError;
    return new GraphQLError(message, { nodes, source, positions, path, extensions });
  };
}
