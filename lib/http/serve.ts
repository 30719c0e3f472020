/**
 * Listening: `Deno.serve` with the fetch handler under Deno, `node:http` with the node adapter under Node.
 */
import { connectionLimits, defaultMaxConnections } from "../graphql/limits.ts";
import { createServiceHandler } from "./handler.ts";
import { createHandler } from "./fetch.ts";
import { type HandlerOptions, MAX_BODY_BYTES } from "./types.ts";

/** Where and how `serve` listens, besides the handler's options. */
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

/** A server `serve` started. */
export interface RunningServer {
  /** `http://host:port`, with the port actually bound. */
  url: string;
  host: string;
  port: number;
  /** Stops accepting connections, lets requests in flight finish, writes the last uses it holds, then resolves. */
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
    handler: (request: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
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
    const handler = createHandler(options);
    const server = deno.serve({ hostname: host, port, onListen: () => {} }, handler);
    const bound = server.addr.port;
    const close = () => server.shutdown().then(() => handler.close?.());
    return { url: `http://${urlHost(host)}:${bound}`, host, port: bound, close };
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
