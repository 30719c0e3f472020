/**
 * Runs the service's runtime-neutral handler on `node:http`: headers are read straight from the
 * `IncomingMessage`, the body is buffered up to the limit only once the key has been checked, and the
 * response is written with one `end()`. No fetch `Request`/`Response` is built: on Node those cost
 * more per request than verifying the key and running a small query together.
 */
import { createServer, type IncomingMessage } from "node:http";
import { ServiceError } from "./errors.ts";
import type { ServiceHandler, ServiceRequest } from "./server.ts";

export interface NodeListenOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  shutdownTimeoutMs: number;
}

/** Reads the whole body as text, or null as soon as it grows past `limit` (the rest is drained, up to a bound). */
function readBody(req: IncomingMessage, limit: number): string | null | Promise<string | null> {
  // When key verification had to wait for the store (a cache miss, Redis), the parser has usually
  // buffered a small body whole by now: take it at once instead of switching the stream to flowing.
  if (req.complete && req.readableFlowing === null) {
    const data = req.read() as Buffer | null;
    if (data === null) return "";
    return data.length > limit ? null : data.toString("utf8");
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size <= limit) return void chunks.push(chunk);
      if (!over) (over = true), (chunks.length = 0), resolve(null);
      // Keep reading (so the client sees our 413, not a reset) but stop at 16x the limit.
      if (size > limit * 16) req.destroy();
    });
    req.on("end", () => resolve(over ? null : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function toServiceRequest(req: IncomingMessage, limit: number): ServiceRequest {
  return {
    method: req.method ?? "GET",
    url: req.url ?? "/",
    headers: {
      get(name) {
        const value = req.headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
      },
    },
    body: () => readBody(req, limit),
  };
}

export function listenNode(
  handle: ServiceHandler,
  options: NodeListenOptions,
): Promise<{ url: string; host: string; port: number; close(): Promise<void> }> {
  let closing = false;
  const server = createServer(async (req, res) => {
    try {
      const response = await handle(toServiceRequest(req, options.maxBodyBytes));
      const headers: Record<string, string | number> = { ...response.headers };
      if (closing) headers.connection = "close";
      headers["content-length"] = response.body === null ? 0 : Buffer.byteLength(response.body);
      res.writeHead(response.status, headers);
      res.end(response.body ?? undefined);
      // A body the handler never read (unauthenticated, too large): drain it so the socket stays sane.
      if (!req.complete) req.resume();
    } catch {
      // The handler answers every failure itself; this is for a broken connection.
      if (!res.headersSent) res.writeHead(400, { "content-type": "application/json; charset=utf-8", connection: "close" });
      res.end(JSON.stringify({ errors: [{ message: "Bad request", extensions: { code: "BAD_REQUEST" } }] }));
    }
  });

  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const reason = error.code === "EADDRINUSE" ? "address already in use" : error.message;
      reject(new ServiceError("INTERNAL", `Cannot listen on ${options.host}:${options.port}: ${reason}`, { cause: error }));
    });
    server.listen(options.port, options.host, () => {
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
          })),
      });
    });
  });
}
