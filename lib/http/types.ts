/**
 * The shapes the service's layers agree on: the handler's options, and the runtime-neutral request and
 * response that each adapter (node:http, fetch) translates from and to.
 */
import type { KeyStore } from "../store/key-store.ts";
import type { StoreStatusLog } from "./outage.ts";
import type { UseRecorderOptions } from "../store/last-use.ts";
import type { RateLimit } from "../core/rate-limits.ts";

/** Largest request body accepted: 1 MiB. */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface HandlerOptions {
  store: KeyStore;
  /** Largest request body in bytes (default 1 MiB); larger ones get 413. */
  maxBodyBytes?: number;
  /** Receives failures that are not the client's fault; the client only sees a generic 500. */
  onError?: (error: unknown) => void;
  /**
   * Told once when the store becomes unavailable (why the service answers 503) and once when it
   * recovers; default: both lines on stderr.
   */
  storeStatus?: StoreStatusLog;
  /** Serve the explorer (GraphiQL) to browsers at `GET /graphql` (default true); false: JSON answers only. */
  explorer?: boolean;
  /**
   * Answer reverse proxies' forward-authentication requests at `/auth` (`forward-auth.ts`) and Unkey's
   * `POST /v2/keys.verifyKey` (`unkey-verify.ts`); default true.
   */
  authEndpoint?: boolean;
  /** Serve the web console at `GET /console` and the consent page at `GET /authorize` (default true). */
  console?: boolean;
  /**
   * Origins whose browser pages may call /graphql (CORS), each exactly `scheme://host[:port]`, or `["*"]`
   * for any; also a comma-separated string. Default: none (CORS off, preflights get 405). No cookies
   * are involved (keys are headers), so credentials are never allowed.
   */
  corsOrigins?: readonly string[] | string;
  /** Told about every request answered and every failed authentication (the access log, the metrics). */
  observer?: ServiceObserver;
  /** Serves `GET /metrics` when given (else 404); see `metrics.ts`. */
  metrics?: MetricsEndpoint;
  /**
   * Record when each key last authenticated a request (`lastUsedAt`), through `createUseRecorder`: the
   * first use this server sees is written within 5 s, then at most once a minute per key, off the request
   * path (default true). false: never written by this server. Options tune the recorder (tests, benchmarks).
   */
  recordLastUse?: boolean | UseRecorderOptions;
  /**
   * Failed authentications allowed per client address (default `60/1m`); past them a refused request gets
   * 429 `TOO_MANY_FAILED_AUTHENTICATIONS` with `Retry-After` instead of 401. A valid key is always served.
   * `"10/1s,60/1m"` or `[{ limit, durationMs }]`; `"off"` or false: no limit. See `auth-throttle.ts`.
   */
  authFailureLimit?: string | readonly RateLimit[] | false;
  /**
   * Proxies whose `X-Forwarded-For` is believed, IPs or CIDR blocks of either family, comma-separated or a
   * list: the client is then the right-most address in it that is not one of them. Default none: the
   * socket's address is the client.
   */
  trustProxy?: string | readonly string[];
}

/** One answered request, as the access log and the metrics see it: never a secret, never a body. */
export interface RequestEvent {
  method: string;
  /** The path without the query string (which may hold a query or variables). */
  path: string;
  status: number;
  /** Duration in milliseconds. */
  ms: number;
  /** The authenticated key, if any. */
  key?: { id: string; name: string };
  /** The GraphQL operation's type; "none" for other routes and requests refused before execution. */
  operation: "query" | "mutation" | "subscription" | "none";
}

/** What the access log and the metrics learn of a request on its way (see `RequestEvent`). */
export interface Trace {
  key?: { id: string; name: string };
  operation?: RequestEvent["operation"];
  /** The answer was computed, not remembered (a remembered one is always a query's). */
  computed?: boolean;
}

/**
 * Why a request was not authenticated: no key, a malformed key or header, a key the store does not know
 * (never issued, revoked or replaced), a key whose expiry or grace period has passed, a disabled key, or a
 * good key from an address outside its IP allow-list (answered 403, not 401).
 */
export type AuthFailure = "missing" | "malformed" | "unknown" | "expired" | "disabled" | "address";

/** A secret the store retired (its key deleted or replaced), presented again: never the secret itself. */
export interface RetiredKeyUse {
  id: string;
  name: string;
  /** The client's address, when the adapter knows it. */
  address?: string;
}

export interface ServiceObserver {
  request(event: RequestEvent): void;
  authFailed(reason: AuthFailure): void;
  /** A request was refused for a retired secret (also counted in `authFailed`, as unknown or expired). */
  retiredKeyUsed?(use: RetiredKeyUse): void;
  /** A failed authentication was answered 429: its address is over `authFailureLimit`. */
  authThrottled?(): void;
  /** The store failed (the request got 503). */
  storeError(): void;
}

/** `/metrics`: who may read it without a key, and the exposition. */
export interface MetricsEndpoint {
  /** Client addresses (exact, or IPv4 CIDR like 10.0.0.0/8) allowed without a key. */
  allow: readonly string[];
  render(): Promise<{ contentType: string; body: string }>;
}

/**
 * A fetch-style request handler. The second argument is what `Deno.serve` passes (the client's address,
 * for the `/metrics` allow-list); other runtimes and tests may pass `{ remoteAddr: { hostname } }`.
 */
export type FetchHandler = ((request: Request, info?: { remoteAddr?: { hostname?: string } }) => Promise<Response>) & {
  /** Writes the last uses not yet written (see `HandlerOptions.recordLastUse`); call it when done serving. */
  close?: () => Promise<void>;
};

/**
 * A request as the service sees it on any runtime. Adapters build it straight from the runtime's
 * own request (no `Request` object on Node, which costs more than the GraphQL work of a small query).
 */
export interface ServiceRequest {
  method: string;
  /** Path and query, or an absolute URL. */
  url: string;
  headers: { get(name: string): string | null };
  /** Reads the body as text; null once it is larger than the limit. Called only after authentication. */
  body(): string | null | Promise<string | null>;
  /** The client's IP address, when the adapter knows it (for the `/metrics` allow-list). */
  remoteAddress?: string;
  /**
   * `performance.now()` once the request's head had arrived (taken after the runtime read it, so after
   * the client sent it). The key check may then use a revision read that began later instead of its
   * own (see `VerifyNow`). Without it, every request reads the revision itself.
   */
  receivedAt?: number;
}

/** A response as the service produces it; adapters write it out. Bodies are text, but the explorer's files are bytes. */
export interface ServiceResponse<Body extends string | Uint8Array<ArrayBuffer> = string> {
  status: number;
  headers: Record<string, string>;
  body: Body | null;
}

/**
 * An answer the answer cache keeps (`answer-cache.ts`): served again as this same object, frozen, so an
 * adapter may keep what it derives from it (node.ts keeps its head). Copies never carry the mark.
 */
export interface RememberedResponse extends Readonly<ServiceResponse> {
  readonly remembered: true;
}

/** True for an answer of the answer cache. */
export const isRemembered = (response: object): response is RememberedResponse => (response as Partial<RememberedResponse>).remembered === true;

/** The runtime-neutral core of the service. */
/** Answers without a promise when nothing on the way had to wait (a remembered answer on the fs store). */
export type ServiceHandler = ((request: ServiceRequest) => ServiceResponse<string | Uint8Array<ArrayBuffer>> | Promise<ServiceResponse<string | Uint8Array<ArrayBuffer>>>) & {
  /** Writes the last uses not yet written and stops the recorder's timer: call it once the server is closed. */
  close(): Promise<void>;
};

