/**
 * The shapes the service's layers agree on: the handler's options, and the runtime-neutral request and
 * response that each adapter (node:http, fetch) translates from and to.
 */
import type { KeyStore } from "../store/key-store.ts";
import type { StoreStatusLog } from "./outage.ts";

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
   * Origins whose browser pages may call /graphql (CORS), each exactly `scheme://host[:port]`, or `["*"]`
   * for any; also a comma-separated string. Default: none (CORS off, preflights get 405). No cookies
   * are involved (keys are headers), so credentials are never allowed.
   */
  corsOrigins?: readonly string[] | string;
}

/** A fetch-style request handler. */
export type FetchHandler = (request: Request) => Promise<Response>;

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
}

/** A response as the service produces it; adapters write it out. Bodies are text, but the explorer's files are bytes. */
export interface ServiceResponse<Body extends string | Uint8Array<ArrayBuffer> = string> {
  status: number;
  headers: Record<string, string>;
  body: Body | null;
}

/** The runtime-neutral core of the service. */
export type ServiceHandler = (request: ServiceRequest) => Promise<ServiceResponse<string | Uint8Array<ArrayBuffer>>>;

