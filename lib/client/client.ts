/**
 * A small client for the service's GraphQL endpoint, on ofetch. Every failure is a `ClientError`
 * (a `ServiceError`) whose `code` says what happened: `UNAUTHENTICATED` (401), `FORBIDDEN`, the
 * service's own codes (`NAME_TAKEN`, `INVALID_INPUT`, `NOT_FOUND`, ...), `STORE_UNAVAILABLE` when the
 * service or its store cannot be reached.
 */
import { FetchError, ofetch } from "ofetch";
import * as v from "valibot";
import { ERROR_CODES, type ErrorCode, ServiceError } from "../core/errors.ts";
import { GraphQLEnvelope, readBounded, RESPONSE_LIMIT_BYTES, shapeProblem, untrustedText } from "./_untrusted.ts";

/** One error of a GraphQL response. */
export interface GraphQLErrorInfo {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; [key: string]: unknown };
}

/** A failed request: `code` is a `ServiceError` code; the response's details are kept. */
export class ClientError extends ServiceError {
  /** HTTP status, when a response arrived. */
  readonly httpStatus?: number;
  /** The GraphQL errors of the response, if any. */
  readonly errors: GraphQLErrorInfo[];
  /** Partial data of the response, if any. */
  readonly data?: unknown;
  constructor(
    code: ErrorCode,
    message: string,
    details: { httpStatus?: number; errors?: GraphQLErrorInfo[]; data?: unknown; cause?: unknown } = {},
  ) {
    super(code, message, { cause: details.cause });
    this.name = "ClientError";
    this.httpStatus = details.httpStatus;
    this.errors = details.errors ?? [];
    this.data = details.data;
  }
}

export interface ClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3001` (`/graphql` is added unless present). */
  baseUrl: string;
  /** The API key, sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Give up after this long, reading the answer included (default 30 s). */
  timeoutMs?: number;
  /** The most bytes of one answer to read (default 4 MiB). */
  maxResponseBytes?: number;
}

export interface Client {
  /** The endpoint requests go to. */
  readonly endpoint: string;
  /**
   * Runs a query or mutation; resolves with `data`, rejects with a `ClientError` on any error. With a
   * valibot `schema`, `data` is checked against it (and transformed by it) before it is returned.
   */
  request<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    schema?: v.GenericSchema<unknown, T>,
  ): Promise<T>;
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: "INVALID_INPUT",
  401: "UNAUTHENTICATED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  413: "INVALID_INPUT",
  415: "INVALID_INPUT",
  503: "STORE_UNAVAILABLE",
};
const INPUT_CODES = new Set(["GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT", "BAD_REQUEST", "PAYLOAD_TOO_LARGE"]);

/**
 * The codes a service may send back as they are. Own entries only: `"constructor" in ERROR_CODES` is true,
 * and a hostile server answering with it once made a failed delete exit 0. USAGE and CANCELLED describe
 * this process's own command line and terminal, never a server's answer.
 */
const SERVER_CODES: ReadonlySet<string> = new Set(
  (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => code !== "USAGE" && code !== "CANCELLED"),
);

/** The `ServiceError` code for a GraphQL error code from the service. */
function toErrorCode(code: unknown, status?: number): ErrorCode {
  if (typeof code === "string" && SERVER_CODES.has(code)) return code as ErrorCode;
  if (typeof code === "string" && INPUT_CODES.has(code)) return "INVALID_INPUT";
  return (status && STATUS_CODES[status]) || "INTERNAL";
}


/** Why a connection failed, from the deepest cause (fetch's own message is only "fetch failed"). */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: "connection refused: nothing listens there; is `service-api serve` running, on that host and port?",
  ENOTFOUND: "the host name does not resolve",
  EAI_AGAIN: "the host name could not be resolved now (DNS)",
  ECONNRESET: "the connection was reset",
  EHOSTUNREACH: "the host cannot be reached",
  ENETUNREACH: "the network cannot be reached",
  ETIMEDOUT: "the connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "the connection timed out",
};
function unreachableReason(error: unknown): string {
  let deepest = error;
  for (let depth = 0; depth < 5 && deepest instanceof Error && deepest.cause !== undefined; depth++) deepest = deepest.cause;
  const code = (deepest as { code?: unknown })?.code;
  if (typeof code === "string" && CONNECT_FAILURES[code]) return CONNECT_FAILURES[code];
  const message = deepest instanceof Error ? deepest.message : String(deepest);
  // fetch will not connect to ports browsers block (1, 9, 25, 6000, ...): it names no port.
  return message === "bad port" ? "fetch refuses to connect to this port (one of those browsers block); serve on another" : message;
}

/**
 * Creates a client.
 *
 * @example
 * const client = createClient({ baseUrl: "http://127.0.0.1:3001", apiKey: process.env.SERVICE_API_KEY! });
 * const { me } = await client.request<{ me: { name: string } }>("{ me { name } }");
 */
export function createClient(options: ClientOptions): Client {
  const base = options.baseUrl.replace(/\/+$/, "");
  const endpoint = /\/graphql$/.test(base) ? base : `${base}/graphql`;

  return {
    endpoint,
    async request<T>(query: string, variables?: Record<string, unknown>, schema?: v.GenericSchema<unknown, T>): Promise<T> {
      const timeoutMs = options.timeoutMs ?? 30_000;
      // One deadline for the whole exchange: a server that trickles its answer is cut off too.
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
      let status: number;
      let text: string;
      try {
        const response = await ofetch.raw(endpoint, {
          method: "POST",
          headers: {
            authorization: `Bearer ${options.apiKey}`,
            accept: "application/graphql-response+json, application/json",
          },
          body: { query, variables },
          signal: controller.signal,
          responseType: "stream",
          // A redirect would carry the key elsewhere: report it as the answer it is instead.
          redirect: "manual",
          retry: 0,
          ignoreResponseError: true,
        });
        status = response.status;
        text = await readBounded((response._data as ReadableStream<Uint8Array> | undefined) ?? null, options.maxResponseBytes ?? RESPONSE_LIMIT_BYTES);
      } catch (error) {
        if (error instanceof RangeError) {
          throw new ClientError("INTERNAL", `The service at ${endpoint} sent too much: ${error.message}; stopped reading`);
        }
        const cause = error instanceof FetchError ? (error.cause as Error | undefined) ?? error : error;
        const reason = controller.signal.aborted
          ? String((controller.signal.reason as Error).message)
          : unreachableReason(cause);
        throw new ClientError("STORE_UNAVAILABLE", `Cannot reach the service at ${endpoint}: ${untrustedText(reason, 300)}`, {
          cause: error,
        });
      } finally {
        clearTimeout(timer);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const envelope = v.safeParse(GraphQLEnvelope, Array.isArray(parsed) ? undefined : parsed);
      const ok = status >= 200 && status <= 299;
      if (!envelope.success) {
        if (!ok) throw new ClientError(toErrorCode(undefined, status), `The service answered HTTP ${status}`, { httpStatus: status });
        throw new ClientError("INTERNAL", `The service's answer is not a GraphQL response (HTTP ${status})`, { httpStatus: status });
      }
      const result = envelope.output;
      const errors: GraphQLErrorInfo[] = result.errors ?? [];
      if (errors.length > 0 || !ok) {
        const first = errors[0];
        const code = toErrorCode(first?.extensions?.code, status);
        const message = first?.message ?? `The service answered HTTP ${status}`;
        throw new ClientError(code, message, { httpStatus: status, errors, data: result.data });
      }
      if (result.data === undefined || result.data === null) {
        throw new ClientError("INTERNAL", `The service answered without data (HTTP ${status})`, { httpStatus: status });
      }
      if (schema) {
        const checked = v.safeParse(schema, result.data);
        if (!checked.success) {
          throw new ClientError("INTERNAL", `The service's answer has an unexpected shape (${shapeProblem(checked.issues)})`, {
            httpStatus: status,
          });
        }
        return checked.output;
      }
      return result.data as T;
    },
  };
}
