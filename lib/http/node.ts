/**
 * Runs the service's runtime-neutral handler on `node:http`: headers are read straight from the
 * `IncomingMessage`, the body is buffered up to the limit only once the key has been checked, and the
 * response is written with one `end()`. No fetch `Request`/`Response` is built: on Node those cost
 * more per request than verifying the key and running a small query together.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ServiceError } from "../core/errors.ts";
import { capConnections, readBody, type Uploads } from "./node-io.ts";
import { after } from "../core/maybe-promise.ts";
import { AmendedResponse } from "./responses.ts";
import { isRemembered, type ServiceHandler, type ServiceRequest, type ServiceResponse } from "./types.ts";

export interface NodeListenOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  shutdownTimeoutMs: number;
  /** See `ServeOptions` for these four. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Told about failures to accept a connection (EMFILE), at most once a minute. */
  onAcceptError: (error: Error) => void;
}

/**
 * The Content-Type, all of them joined when sent more than once: Node keeps only the first, which would
 * let `application/json` and `text/plain` together pass as JSON (they get 415).
 */
function contentType(req: IncomingMessage): string | null {
  const first = req.headers["content-type"];
  if (first === undefined) return null;
  const raw = req.rawHeaders;
  let all: string | undefined;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 12 && raw[i].toLowerCase() === "content-type") {
      all = seen++ === 0 ? raw[i + 1] : `${all}, ${raw[i + 1]}`;
    }
  }
  return seen > 1 ? all! : first;
}

/** Header lookups on the node request, as the handler asks for them. */
class NodeHeaders {
  readonly #req: IncomingMessage;
  constructor(req: IncomingMessage) {
    this.#req = req;
  }
  get(name: string): string | null {
    if (name === "content-type") return contentType(this.#req);
    const value = this.#req.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  }
}

/** The handler's view of a node request: one object and its headers, no closures per request. */
class NodeServiceRequest implements ServiceRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: NodeHeaders;
  readonly #req: IncomingMessage;
  readonly #limit: number;
  readonly #uploads: Uploads;
  readonly receivedAt: number;
  constructor(req: IncomingMessage, limit: number, uploads: Uploads, receivedAt: number) {
    this.receivedAt = receivedAt;
    this.#req = req;
    this.#limit = limit;
    this.#uploads = uploads;
    this.method = req.method ?? "GET";
    this.url = req.url ?? "/";
    this.headers = new NodeHeaders(req);
  }
  body(): string | null | Promise<string | null> {
    return readBody(this.#req, this.#limit, this.#uploads);
  }
  get remoteAddress(): string | undefined {
    return this.#req.socket.remoteAddress;
  }
}

/** A response's head as `writeHead` takes it, flat: name, value, name, value. */
type Head = (string | number)[];
/** The header lines written for a response: its own, its length, and `connection: close` while closing. */
function head(response: ServiceResponse<string | Uint8Array<ArrayBuffer>>, closing: boolean): Head {
  const headers = response.headers;
  const lines: Head = [];
  for (const name in headers) if (name !== "content-length" && (!closing || name !== "connection")) lines.push(name, headers[name]);
  if (closing) lines.push("connection", "close");
  lines.push("content-length", response.body === null ? 0 : Buffer.byteLength(response.body));
  // A remembered answer (served again as the same object) keeps its head.
  if (!closing && isRemembered(response)) heads.set(response, lines);
  return lines;
}
/** The head of each remembered answer, made on its first write: see `head`. Never changed once kept. */
const heads = new WeakMap<ServiceResponse<string | Uint8Array<ArrayBuffer>>, Head>();
/**
 * The head of `response` on an open connection: kept for a remembered answer; for a remembered answer
 * amended for this request (a rate-limited key's, `AmendedResponse`), its kept head and then the added
 * lines (a new array: the kept one stays as it is); else made for it.
 */
function openHead(response: ServiceResponse<string | Uint8Array<ArrayBuffer>>): Head {
  const kept = heads.get(response);
  if (kept !== undefined) return kept;
  if (response instanceof AmendedResponse && isRemembered(response.base)) {
    return (heads.get(response.base) ?? head(response.base, false)).concat(response.added);
  }
  return head(response, false);
}

/** What the listener shares with the server: the sockets busy with a request, the bodies being read, whether it is closing. */
interface ListenerState {
  busy: WeakSet<Socket>;
  uploads: Uploads;
  closing: () => boolean;
}

/** The `request` listener: runs the handler on each request and writes its answer with one `end()`. */
function listener(handle: ServiceHandler, options: NodeListenOptions, state: ListenerState) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = performance.now(); // Node parsed the head: the client has sent it
    const socket = req.socket;
    state.busy.add(socket);
    const write = (response: ServiceResponse<string | Uint8Array<ArrayBuffer>>) => {
      try {
        res.writeHead(response.status, state.closing() ? head(response, true) : openHead(response));
        res.end(response.body ?? undefined);
        // A body the handler never read (unauthenticated, too large): drain it so the socket stays sane.
        if (!req.complete) req.resume();
      } catch {
        broken();
      }
      state.busy.delete(socket);
    };
    // The handler answers every failure itself; this is for a broken connection.
    const broken = () => {
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json; charset=utf-8", connection: "close" });
      res.end(JSON.stringify({ errors: [{ message: "Bad request", extensions: { code: "BAD_REQUEST" } }] }));
      state.busy.delete(socket);
    };
    const run = () => {
      let response;
      try {
        response = handle(new NodeServiceRequest(req, options.maxBodyBytes, state.uploads, receivedAt));
      } catch {
        return broken();
      }
      // A remembered answer comes back at once: written in this turn, with no promise in between.
      after(response, write, broken);
    };
    // Node calls this at the end of the headers, before its parser has gone through the rest of the
    // packet, and runs microtasks before it does: a body sent with the headers is not read yet. After
    // this turn's I/O (setImmediate) it is, so the handler takes it whole instead of streaming it
    // (listeners, flowing mode, a promise). Requests without a body run at once.
    const length = req.headers["content-length"];
    if (req.complete || length === undefined || length === "0" || Number(length) > options.maxBodyBytes) run();
    else setImmediate(run);
  };
}

export function listenNode(
  handle: ServiceHandler,
  options: NodeListenOptions,
): Promise<{ url: string; host: string; port: number; close(): Promise<void> }> {
  let closing = false;
  /** Connections with a request in flight: never evicted at the cap. Kept by the handler (cheaper than more listeners). */
  const busy = new WeakSet<Socket>();
  const uploads: Uploads = new WeakMap();
  const server = createServer({
    // Silent or trickling clients are cut off: headers must arrive within headersTimeout, the whole
    // request (body included) within requestTimeout. Node checks both on a timer; it runs every
    // 30 s by default, which let such sockets live over a minute.
    headersTimeout: options.headersTimeoutMs,
    requestTimeout: options.requestTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, options.headersTimeoutMs / 4)),
  }, listener(handle, options, { busy, uploads, closing: () => closing }));

  server.keepAliveTimeout = options.keepAliveTimeoutMs; // not a createServer option on every Node version
  // A socket with no traffic at all for twice the request timeout (a client that stopped reading our
  // answer) is closed; twice, so that a late request still gets its 408 from the checks above first.
  server.timeout = options.requestTimeoutMs * 2;
  capConnections(server, options.maxConnections, busy, uploads);

  return new Promise((resolve, reject) => {
    const failedListen = (error: NodeJS.ErrnoException) => {
      const reason = error.code === "EADDRINUSE" ? "address already in use" : error.message;
      reject(new ServiceError("INTERNAL", `Cannot listen on ${options.host}:${options.port}: ${reason}`, { cause: error }));
    };
    server.once("error", failedListen);
    server.listen(options.port, options.host, () => {
      // Once listening, an error is a failed accept (EMFILE when out of descriptors): the connection
      // is lost, the server goes on. Without a listener it would end the process.
      server.off("error", failedListen);
      let lastReport = -Infinity;
      server.on("error", (error) => {
        if (performance.now() - lastReport < 60_000) return;
        lastReport = performance.now();
        options.onAcceptError(error);
      });
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      let closed: Promise<void> | undefined;
      resolve({
        url: `http://${host}:${port}`,
        host: options.host,
        port,
        close: () =>
          (closed ??= new Promise<void>((done) => {
            closing = true;
            const timer = setTimeout(() => server.closeAllConnections(), options.shutdownTimeoutMs);
            server.close(() => (clearTimeout(timer), done()));
            server.closeIdleConnections();
          }).then(() => handle.close())), // then what the handler still holds (last uses not yet written)
      });
    });
  });
}
